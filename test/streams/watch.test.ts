/**
 * The watch on pending token streams (core/src/streams/watch.ts) on anvil: a stream becomes active once its funding
 * transfer is on chain, deep enough, without a confirm; a transfer that is not its funding (untagged, short, another
 * stream's) leaves it pending; a chain that does not answer is looked at again.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { createRegistry, startStreamWatcher, type StreamWatcher } from '@earn/core'
import { evm } from '@earn/plugin-evm'
import { encodeFunctionData, erc20Abi, type Address, type Hex } from 'viem'
import type { PrivateKeyAccount } from 'viem/accounts'
import { cuttableProxy } from '../proxy.ts'
import { startStreamsEnv, type StreamsEnv } from './setup.ts'

setDefaultTimeout(60_000)

let env: StreamsEnv
let watcher: StreamWatcher
const logged: Record<string, unknown>[] = []
beforeAll(async () => {
  // Two confirmations: a transfer one block deep is not yet counted, by the watch as by confirm.
  env = await startStreamsEnv({ confirmations: 2 })
  const deps = env.h.deps
  // An hour between passes: the test runs each pass itself.
  watcher = startStreamWatcher(
    {
      store: deps.store,
      ecosystems: deps.ecosystems,
      clock: deps.clock,
      attributionSecret: deps.attributionSecret,
      treasuries: deps.config.streamTreasuries,
      logger: { info: (f) => logged.push(f), error: (f) => logged.push(f) },
    },
    3_600_000,
  )
})
afterAll(async () => {
  await watcher.stop()
  await env.stop()
})

const state = async (id: string) => (await env.h.get(`/v2/streams/${id}`)).body.stream
const mine = (blocks = 1) => env.chain.anvil.testClient.mine({ blocks })

async function created(creator: PrivateKeyAccount, over = {}) {
  const r = await env.h.post('/v2/streams', env.tokenBody(creator, over))
  expect(r.status, r.text).toBe(200)
  return { id: r.body.stream.id as string, transaction: r.body.transactions[0].transaction, totalPulled: BigInt(r.body.totalPulled) }
}

/** A token transfer sent as a built one is (`template`), with calldata of its own. */
async function transfer(template: Record<string, unknown>, from: PrivateKeyAccount, to: Address, amount: bigint, suffix: Hex = '0x') {
  const data = `${encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] })}${suffix.slice(2)}`
  return env.send(from, { ...template, from: from.address, data })
}

test('a funding transfer on chain makes its stream active at the next pass once deep enough, with no confirm; a second pass reads nothing again', async () => {
  const creator = await env.creator(10_000_000n)
  const s = await created(creator)
  expect((await watcher.watchNow()).funded).toBe(0)
  const hash = await env.send(creator, s.transaction)
  // One block deep of the two asked: not yet.
  expect((await watcher.watchNow()).funded).toBe(0)
  expect((await state(s.id)).state).toBe('pending')
  await mine()
  const pass = await watcher.watchNow()
  expect(pass).toMatchObject({ funded: 1, failed: 0 })
  expect(await state(s.id)).toMatchObject({ state: 'active', fundingTxHash: hash })
  expect(logged).toContainEqual({ msg: 'stream funding seen on chain', streamId: s.id, chainId: env.chain.anvil.chainId, txHash: hash })
  // The confirm that comes after it is the state machine's 400, as a second confirm is.
  const late = await env.h.post(`/v2/streams/${s.id}/confirm`, { txHash: hash })
  expect([late.status, late.body.context]).toEqual([400, { state: 'active', action: 'confirm' }])
  await mine()
  expect(await watcher.watchNow()).toEqual({ funded: 0, read: 0, failed: 0 })
})

test("transfers to the treasury that are not a stream's funding leave it pending: untagged, short, another stream's tag; its own funding then counts", async () => {
  const creator = await env.creator(100_000_000n)
  const a = await created(creator)
  const b = await created(creator)
  const other = await env.creator(10_000_000n)
  const c = await created(other)
  const tagOfA = `0x${(a.transaction.data as string).slice(2 + 68 * 2)}` as Hex
  // A first look sets where the next goes on from (it reads the earlier test's funding again, and funds nothing).
  expect((await watcher.watchNow()).funded).toBe(0)
  // Untagged, the whole amount.
  await transfer(a.transaction, creator, env.treasury, a.totalPulled)
  // A's tag, one unit short.
  await transfer(a.transaction, creator, env.treasury, a.totalPulled - 1n, tagOfA)
  // A's tag on another creator's transfer (its MAC is over A's creator).
  await transfer(a.transaction, other, env.treasury, a.totalPulled, tagOfA)
  await mine()
  const none = await watcher.watchNow()
  expect(none).toMatchObject({ funded: 0, failed: 0 })
  expect(none.read).toBe(3)
  for (const s of [a, b, c]) expect((await state(s.id)).state).toBe('pending')

  // B's funding activates B alone, though A's creator sent it too; then A's own, A.
  const hashB = await env.send(creator, b.transaction)
  await mine()
  expect(await watcher.watchNow()).toMatchObject({ funded: 1, read: 1 })
  expect(await state(b.id)).toMatchObject({ state: 'active', fundingTxHash: hashB })
  expect((await state(a.id)).state).toBe('pending')
  const hashA = await env.send(creator, a.transaction)
  await mine()
  expect((await watcher.watchNow()).funded).toBe(1)
  expect(await state(a.id)).toMatchObject({ state: 'active', fundingTxHash: hashA })
  expect((await state(c.id)).state).toBe('pending')
})

test('a stream created after its funding moved on is still found: a look starts over the recent blocks when a treasury had nothing pending', async () => {
  const creator = await env.creator(10_000_000n)
  const s = await created(creator)
  const hash = await env.send(creator, s.transaction)
  await mine(3)
  // A watcher of a server started after the funding was mined (its first look: the recent blocks).
  const deps = env.h.deps
  const fresh = startStreamWatcher(
    { store: deps.store, ecosystems: deps.ecosystems, clock: deps.clock, attributionSecret: deps.attributionSecret, treasuries: {}, logger: { info() {}, error() {} } },
    3_600_000,
  )
  try {
    expect((await fresh.watchNow()).funded).toBe(1)
  } finally {
    await fresh.stop()
  }
  expect(await state(s.id)).toMatchObject({ state: 'active', fundingTxHash: hash })
})

test('a coin stream is left to its confirm on EVM (a coin transfer logs nothing to find it by)', async () => {
  const creator = await env.creator()
  const s = await created(creator, { rewardToken: 'native', netBudget: '1000' })
  const hash = await env.send(creator, s.transaction)
  await mine()
  expect((await watcher.watchNow()).funded).toBe(0)
  expect((await state(s.id)).state).toBe('pending')
  const confirmed = await env.h.post(`/v2/streams/${s.id}/confirm`, { txHash: hash })
  expect([confirmed.status, confirmed.body.stream?.state]).toEqual([200, 'active'])
})

test('a chain that does not answer is looked at again next pass, from where the last look ended', async () => {
  const proxy = cuttableProxy(Number(new URL(env.chain.anvil.url).port))
  const client = evm.connect({ EVM_RPC_URLS: `${env.chain.anvil.chainId}=http://127.0.0.1:${proxy.port}`, EVM_RPC_TIMEOUT_MS: '200', EVM_CONFIRMATIONS: `${env.chain.anvil.chainId}=2` })
  const deps = env.h.deps
  const errors: Record<string, unknown>[] = []
  const proxied = startStreamWatcher(
    {
      store: deps.store,
      ecosystems: createRegistry({ evm: async () => ({ plugin: evm, client }) }),
      clock: deps.clock,
      attributionSecret: deps.attributionSecret,
      treasuries: {},
      logger: { info() {}, error: (f) => errors.push(f) },
    },
    3_600_000,
  )
  try {
    const creator = await env.creator(10_000_000n)
    const s = await created(creator)
    expect((await proxied.watchNow()).failed).toBe(0)
    const hash = await env.send(creator, s.transaction)
    await mine()
    proxy.cut()
    const down = await proxied.watchNow()
    expect(down).toMatchObject({ funded: 0, failed: 1 })
    expect(errors[0]).toMatchObject({ msg: 'stream funding watch: looking for fundings failed; trying again next pass', chainId: env.chain.anvil.chainId })
    expect((await state(s.id)).state).toBe('pending')
    proxy.restore()
    await mine(2)
    expect((await proxied.watchNow()).funded).toBe(1)
    expect(await state(s.id)).toMatchObject({ state: 'active', fundingTxHash: hash })
  } finally {
    await proxied.stop()
    proxy.stop()
  }
})
