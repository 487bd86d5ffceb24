/**
 * A toncenter-style endpoint answering an account balance no account can hold. No TON network runs behind HTTP here
 * (the sandbox is in-process), so a stand-in answers `getAddressInformation` as toncenter does, with the balance given.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { UnavailableError } from '@earn/core'
import { Address, beginCell, TupleReader, type ContractProvider } from '@ton/core'
import { readTonBalance } from './balance.ts'
import { withinBudget } from './budget.ts'
import { askChain, connectTon, createTonClient } from './client.ts'
import { notJetton, ownJettonWallet } from './jettonMaster.ts'
import { toncenterStandIn } from './standIn.ts'

let balance = '1000'
/** How the stand-in writes the one number a get-method returns. */
let stackNumber = '0x10'
/** An HTTP error status to answer with, and its body. */
let failing: { status: number; body: string } | undefined
let trickle = false
/** How long the stand-in takes over each answer. */
let delayMs = 0
/** Answers the stand-in is still sending. */
let streaming = 0
let node: ReturnType<typeof toncenterStandIn>
beforeAll(() => {
  node = toncenterStandIn(async (call) => {
    if (delayMs) await Bun.sleep(delayMs)
    if (failing) return new Response(failing.body, { status: failing.status, headers: { 'content-type': 'application/json' } })
    if (call.method === 'runGetMethod')
      return Response.json({ ok: true, id: call.id, jsonrpc: '2.0', result: { '@type': 'smc.runResult', gas_used: 0, stack: [['num', stackNumber]], exit_code: 0 } })
    if (call.method !== 'getAddressInformation') return Response.json({ ok: false, error: `not here: ${call.method}`, code: 500 })
    if (trickle) {
      // A 200 whose body comes a byte every half second, for good: axios's timeout restarts with each byte.
      let timer: Timer | undefined
      const body = new ReadableStream({
        start(controller) {
          streaming++
          timer = setInterval(() => controller.enqueue(new TextEncoder().encode(' ')), 500)
        },
        cancel: () => {
          streaming--
          clearInterval(timer)
        },
      })
      return new Response(body, { headers: { 'content-type': 'application/json' } })
    }
    return Response.json({
      ok: true,
      id: call.id,
      jsonrpc: '2.0',
      result: { '@type': 'raw.fullAccountState', balance, code: '', data: '', last_transaction_id: { '@type': 'internal.transactionId', lt: '0', hash: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' }, block_id: { '@type': 'ton.blockIdExt', workchain: -1, shard: '-9223372036854775808', seqno: 1, root_hash: 'x', file_hash: 'x' }, frozen_hash: '', sync_utime: 0, state: 'uninitialized' },
    })
  })
})
afterAll(() => node.stop())

const owner = new Address(0, Buffer.alloc(32, 7)).toString({ bounceable: false })

test('a balance below zero or past what a coin amount holds is the endpoint failing (503); a real one is read', async () => {
  const client = connectTon({ TON_API_URL: node.url })
  for (const wrong of ['-5', (2n ** 120n).toString()]) {
    balance = wrong
    expect(await readTonBalance(client, { chainId: '-239', owner, token: 'native' }).catch((e: unknown) => e), wrong).toBeInstanceOf(UnavailableError)
  }
  balance = (2n ** 120n - 1n).toString()
  expect(await readTonBalance(client, { chainId: '-239', owner, token: 'native' })).toBe(2n ** 120n - 1n)
})

test('an answer that never ends (a byte at a time) is a 503 at the 10 s deadline, and its connection closed, not a request held for good', async () => {
  trickle = true
  try {
    const started = performance.now()
    const e = await readTonBalance(connectTon({ TON_API_URL: node.url }), { chainId: '-239', owner, token: 'native' }).catch((x: unknown) => x)
    expect(e).toBeInstanceOf(UnavailableError)
    expect(performance.now() - started).toBeLessThan(12_000)
    // The call given up on is closed, not left reading.
    await Bun.sleep(1_000)
    expect(streaming).toBe(0)
  } finally {
    trickle = false
  }
}, 20_000)

test("a capability's calls share one budget: an endpoint answering each within its own limit cannot hold the request for all of them together", async () => {
  const client = connectTon({ TON_API_URL: node.url })
  const threeReads = async () => {
    for (let i = 0; i < 3; i++) await readTonBalance(client, { chainId: '-239', owner, token: 'native' })
    return 'read'
  }
  delayMs = 300
  try {
    expect(await withinBudget(threeReads, 5_000)()).toBe('read')
    const started = performance.now()
    expect(await withinBudget(threeReads, 500)().catch((e: unknown) => e)).toBeInstanceOf(UnavailableError)
    expect(performance.now() - started).toBeLessThan(850)
  } finally {
    delayMs = 0
  }
})

test('a get-method number written otherwise than as one ("" read as 0 by BigInt) is the endpoint failing (503)', async () => {
  const wallet = new Address(0, Buffer.alloc(32, 9))
  const asked = () => askChain('the jetton wallet', async () => (await connectTon({ TON_API_URL: node.url }).provider(wallet).get('get_wallet_data', [])).stack.readBigNumber())
  for (const [written, read] of [['0x10', 16n], ['-0x10', -16n], ['42', 42n]] as const) {
    stackNumber = written
    expect(await asked()).toBe(read)
  }
  for (const written of ['', '  ', '1.5', 'abc']) {
    stackNumber = written
    expect(await asked().catch((e: unknown) => e), JSON.stringify(written)).toBeInstanceOf(UnavailableError)
  }
  stackNumber = '0x10'
})

test("a jetton wallet's balance out of a coin amount's range is no jetton wallet's (400 naming the token), not a balance to compare", async () => {
  const [master, owner, wallet] = [1, 2, 9].map((fill) => new Address(0, Buffer.alloc(32, fill))) as [Address, Address, Address]
  const slice = (a: Address) => ({ type: 'slice' as const, cell: beginCell().storeAddress(a).endCell() })
  // A stand-in provider: a master naming `wallet`, and a wallet answering get_wallet_data with this balance, owner and
  // master (no contract here can be made to answer a balance out of range).
  const answering = (balance: bigint, walletMaster = master) =>
    createTonClient(
      () =>
        ({
          getState: async () => ({ state: { type: 'active' } }),
          get: async (name: string) => ({
            stack: new TupleReader(name === 'get_wallet_address' ? [slice(wallet)] : [{ type: 'int', value: balance }, slice(owner), slice(walletMaster), { type: 'cell', cell: beginCell().endCell() }]),
          }),
        }) as unknown as ContractProvider,
    )
  for (const balance of [-5n, 2n ** 120n]) {
    const e = await ownJettonWallet(answering(balance), master, owner, notJetton('token', 'EQ…')).catch((x: unknown) => x)
    expect((e as Error).message, String(balance)).toBe('token EQ… is not a TEP-74 jetton: get_wallet_data returned a balance no jetton wallet can hold')
  }
  const found = await ownJettonWallet(answering(7n), master, owner, notJetton('token', 'EQ…'))
  expect([found.address.equals(wallet), found.balance]).toEqual([true, 7n])
  // The wallet the master named is another jetton's: its balance is not this jetton's, nor is a transfer through it.
  const other = await ownJettonWallet(answering(7n, new Address(0, Buffer.alloc(32, 5))), master, owner, notJetton('token', 'EQ…')).catch((x: unknown) => x)
  expect((other as Error).message).toBe(`token EQ… is not a TEP-74 jetton: the wallet its get_wallet_address names for ${owner.toRawString()} is another jetton's`)
})

test("an error whose body names an exit code (HTTP 500, or 200 with ok: false) is the endpoint failing (503), not a contract's answer", async () => {
  for (const status of [500, 200]) {
    failing = { status, body: '{"ok":false,"error":"LITE_SERVER_UNKNOWN: failed to run get method: exit_code: -13","code":500}' }
    try {
      const e = await readTonBalance(connectTon({ TON_API_URL: node.url }), { chainId: '-239', owner, token: 'native' }).catch((x: unknown) => x)
      expect(e, String(status)).toBeInstanceOf(UnavailableError)
    } finally {
      failing = undefined
    }
  }
})
