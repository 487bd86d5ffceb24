/**
 * A TON client's calls in flight are bounded, so a slow endpoint cannot take every one of Bun's 256 fetch slots (one
 * process-wide queue, another chain's requests too). No TON network runs behind HTTP here (the sandbox is
 * in-process), so a toncenter stand-in answers `getAddressInformation`, slowly.
 */
import { afterAll, expect, test } from 'bun:test'
import { Address } from '@ton/core'
import { UnavailableError } from '@earn/core'
import { readTonBalance } from './balance.ts'
import { withinBudget } from './budget.ts'
import { askChain, connectTon, TON_IN_FLIGHT } from './client.ts'
import { toncenterStandIn } from './standIn.ts'
import { anotherServer } from '../../../test/anotherServer.ts'

let [inFlight, most] = [0, 0]
const node = toncenterStandIn(async (call) => {
  inFlight++
  most = Math.max(most, inFlight)
  await Bun.sleep(1_000)
  inFlight--
  return Response.json({
    ok: true,
    id: call.id,
    jsonrpc: '2.0',
    result: { '@type': 'raw.fullAccountState', balance: '7', code: '', data: '', last_transaction_id: { '@type': 'internal.transactionId', lt: '0', hash: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' }, block_id: { '@type': 'ton.blockIdExt', workchain: -1, shard: '-9223372036854775808', seqno: 1, root_hash: 'x', file_hash: 'x' }, frozen_hash: '', sync_utime: 0, state: 'uninitialized' },
  })
})
// Another service the process talks to (an EVM node, say), answering at once.
const other = anotherServer()
afterAll(() => {
  node.stop()
  other.stop()
})

test(`at most ${TON_IN_FLIGHT} calls in flight; a request to another server meanwhile is not held behind them`, async () => {
  const client = connectTon({ TON_API_URL: node.url })
  // More than Bun's 256 at once: unbounded, the request to the other server waited for the first ~256 to answer.
  const reads = Array.from({ length: 300 }, (_, i) =>
    readTonBalance(client, { chainId: '-239', owner: new Address(0, Buffer.alloc(32, i % 256)).toString({ bounceable: false }), token: 'native' }),
  )
  await Bun.sleep(100)
  expect(await other.answerMs()).toBeLessThan(300)
  // Each waits inside its own 10 s limit: three turns of one second, all answered.
  expect(await Promise.all(reads)).toEqual(Array.from({ length: 300 }, () => 7n))
  expect(most).toBe(TON_IN_FLIGHT)
}, 30_000)

test('a call whose time runs out waiting for its turn blames no service by name: the index was never asked', async () => {
  const client = connectTon({ TON_API_URL: node.url })
  const owner = (i: number) => new Address(0, Buffer.alloc(32, i)).toString({ bounceable: false })
  // Every slot held by a node read answering in 1 s.
  const held = Array.from({ length: TON_IN_FLIGHT }, (_, i) => readTonBalance(client, { chainId: '-239', owner: owner(i % 256), token: 'native' }))
  await Bun.sleep(50)
  const [lookup, read] = await Promise.all([
    withinBudget(() => askChain('the transaction', () => client.findTransaction('ab'.repeat(32))), 300)().catch((e: unknown) => e),
    withinBudget(() => readTonBalance(client, { chainId: '-239', owner: owner(1), token: 'native' }), 300)().catch((e: unknown) => e),
  ])
  for (const error of [lookup, read]) {
    expect(error).toBeInstanceOf(UnavailableError)
    expect((error as UnavailableError).message).toStartWith(`every one of this server's ${TON_IN_FLIGHT} calls to the TON endpoints was in flight while reading`)
    expect((error as UnavailableError).context).toEqual({ TON_API_URL: 'answering slowly: every call in flight' })
  }
  expect(await Promise.all(held)).toEqual(held.map(() => 7n))
}, 30_000)

test("a call made after its capability's budget ran out is the endpoint not answering in time, not a full queue", async () => {
  const client = connectTon({ TON_API_URL: node.url })
  const late = await withinBudget(async () => {
    await Bun.sleep(80)
    return askChain('the account', () => client.provider(new Address(0, Buffer.alloc(32, 3))).getState())
  }, 50)().catch((e: unknown) => e)
  expect(late).toBeInstanceOf(UnavailableError)
  expect((late as UnavailableError).context).toEqual({ TON_API_URL: 'did not answer' })
})
