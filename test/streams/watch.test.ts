/**
 * The watch on pending token streams (core/src/streams/watch.ts) on anvil: a stream becomes active once its funding
 * transfer is on chain, deep enough, without a confirm; a transfer that is not its funding (untagged, short, another
 * stream's) leaves it pending; a chain that does not answer is looked at again.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { createRegistry, RESUME_WITHIN_MS, startStreamWatcher, type FundingLook, type StreamWatcher } from '@earn/core'
import { evm } from '@earn/plugin-evm'
import { encodeFunctionData, erc20Abi, type Address, type Hex } from 'viem'
import type { PrivateKeyAccount } from 'viem/accounts'
import { mintToken, testSmartWalletAbi } from '../chains/evm.ts'
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
  // The short one is not even read: a funding moves at least its totalPulled in one transfer.
  expect(none.read).toBe(2)
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

/** A JSON-RPC endpoint in front of anvil whose answers `answer` may replace (undefined: anvil's), batches included. */
function rewriting(answer: (call: { id: unknown; method: string; params: unknown[] }) => unknown) {
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const body = (await req.json()) as { id: unknown; method: string; params?: unknown[] } | { id: unknown; method: string; params?: unknown[] }[]
      const one = async (call: { id: unknown; method: string; params?: unknown[] }) =>
        answer({ id: call.id, method: call.method, params: call.params ?? [] }) ??
        (await (await fetch(env.chain.anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(call) })).json())
      return Response.json(Array.isArray(body) ? await Promise.all(body.map(one)) : await one(body))
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) }
}

function watcherOver(rpcUrl: string, env2: Record<string, string>, store = env.h.deps.store) {
  const client = evm.connect({ EVM_RPC_URLS: `${env.chain.anvil.chainId}=${rpcUrl}`, EVM_RPC_TIMEOUT_MS: '500', ...env2 })
  const deps = env.h.deps
  const errors: Record<string, unknown>[] = []
  const watcher = startStreamWatcher(
    { store, ecosystems: createRegistry({ evm: async () => ({ plugin: evm, client }) }), clock: deps.clock, attributionSecret: deps.attributionSecret, treasuries: {}, logger: { info() {}, error: (f) => errors.push(f) } },
    3_600_000,
  )
  return { watcher, errors }
}

test('a transaction that fails every read holds up no other funding, and a node refusing a range of logs is asked for less', async () => {
  const erc20 = [...erc20Abi, { type: 'function', name: 'transferFrom', stateMutability: 'nonpayable', inputs: [{ type: 'address' }, { type: 'address' }, { type: 'uint256' }], outputs: [{ type: 'bool' }] }] as const
  // No call traces (a transfer made inside another's call then cannot be read), and at most 3 blocks of logs a call.
  const node = rewriting((call) => {
    if (call.method === 'debug_traceTransaction') return { jsonrpc: '2.0', id: call.id, error: { code: -32601, message: 'the method debug_traceTransaction does not exist' } }
    const range = call.method === 'eth_getLogs' ? (call.params[0] as { fromBlock: string; toBlock: string }) : undefined
    if (range && BigInt(range.toBlock) - BigInt(range.fromBlock) >= 3n) return { jsonrpc: '2.0', id: call.id, error: { code: -32005, message: 'query returned more than 10000 results' } }
    return undefined
  })
  const { watcher: w, errors } = watcherOver(node.url, { EVM_LOGS_BLOCK_RANGE: '10' })
  try {
    const attacker = await env.creator(10_000_000n)
    const spender = await env.creator()
    const p = await created(attacker)
    expect((await w.watchNow()).failed).toBe(0)
    // The attacker's tokens reach the treasury through a spender's transferFrom: reading its funding tag needs a trace.
    await env.send(attacker, { ...p.transaction, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [spender.address, 10n ** 12n] }) })
    await env.send(spender, { ...p.transaction, from: spender.address, data: encodeFunctionData({ abi: erc20, functionName: 'transferFrom', args: [attacker.address, env.treasury, p.totalPulled] }) })
    const honest = await env.creator(10_000_000n)
    const h = await created(honest)
    const hash = await env.send(honest, h.transaction)
    await mine(12)
    let passes = 0
    while ((await state(h.id)).state === 'pending' && passes < 20) {
      await w.watchNow()
      passes++
    }
    expect(await state(h.id)).toMatchObject({ state: 'active', fundingTxHash: hash })
    expect((await state(p.id)).state).toBe('pending')
    expect(errors.some((e) => e.msg === 'stream funding watch: recording a funding failed; reading it again next pass' && e.streamId === p.id)).toBe(true)
  } finally {
    await w.stop()
    node.stop()
  }
})

test('a transaction the node does not show yet (a pool node behind the one that listed it) is read again next pass', async () => {
  let hidden: string | undefined
  const node = rewriting((call) => (call.method === 'eth_getTransactionReceipt' && call.params[0] === hidden ? { jsonrpc: '2.0', id: call.id, result: null } : undefined))
  const { watcher: w } = watcherOver(node.url, {})
  try {
    const creator = await env.creator(10_000_000n)
    const s = await created(creator)
    await w.watchNow()
    hidden = await env.send(creator, s.transaction)
    await mine()
    expect(await w.watchNow()).toMatchObject({ funded: 0, failed: 1 })
    expect((await state(s.id)).state).toBe('pending')
    hidden = undefined
    expect(await w.watchNow()).toMatchObject({ funded: 1, failed: 0 })
    expect((await state(s.id)).state).toBe('active')
  } finally {
    await w.stop()
    node.stop()
  }
})

test("a stream left off the pass's list (past its length, or created during the pass) is funded by the tag its funding carries", async () => {
  const listed = await created(await env.creator(10_000_000n))
  const creator = await env.creator(10_000_000n)
  const left = await created(creator)
  const store = env.h.deps.store
  const { watcher: w } = watcherOver(env.chain.anvil.url, { EVM_CONFIRMATIONS: `${env.chain.anvil.chainId}=2` }, {
    ...store,
    pendingTokenStreams: async (now: number, limit: number) => (await store.pendingTokenStreams(now, limit)).filter((s) => s.id !== left.id),
  })
  try {
    await w.watchNow()
    const hash = await env.send(creator, left.transaction)
    await mine(2)
    expect((await w.watchNow()).funded).toBe(1)
    expect(await state(left.id)).toMatchObject({ state: 'active', fundingTxHash: hash })
    expect((await state(listed.id)).state).toBe('pending')
  } finally {
    await w.stop()
  }
})

test('streams funded to other treasuries and tokens, however many end sooner, keep no stream from being looked for', async () => {
  const creator = await env.creator(10_000_000n)
  const s = await created(creator)
  const row = (await env.h.deps.store.getStream(s.id))!
  // A thousand and one pending streams ending sooner, funded to a treasury of their own.
  for (let i = 0; i < 1001; i++) await env.h.deps.store.insertStream({ ...row, id: crypto.randomUUID(), treasury: `0x${'de'.repeat(20)}`, endTime: row.endTime - 1_000_000 + i })
  const { watcher: w } = watcherOver(env.chain.anvil.url, { EVM_CONFIRMATIONS: `${env.chain.anvil.chainId}=2` })
  try {
    await w.watchNow()
    const hash = await env.send(creator, s.transaction)
    await mine(2)
    expect((await w.watchNow()).funded).toBe(1)
    expect(await state(s.id)).toMatchObject({ state: 'active', fundingTxHash: hash })
  } finally {
    await w.stop()
  }
})

test('transfers to the treasury are read at most a hundred transactions a look, and dust (less than any funding moves) not at all: the funding after them is found a look later', async () => {
  const creator = await env.creator(10_000_000n)
  const s = await created(creator)
  const { watcher: w } = watcherOver(env.chain.anvil.url, {})
  try {
    await w.watchNow()
    for (let i = 0; i < 50; i++) await mintToken(env.chain.anvil, env.chain.token, env.treasury, 1n)
    for (let i = 0; i < 150; i++) await mintToken(env.chain.anvil, env.chain.token, env.treasury, s.totalPulled)
    const hash = await env.send(creator, s.transaction)
    expect(await w.watchNow()).toMatchObject({ funded: 0, read: 100 })
    expect(await w.watchNow()).toMatchObject({ funded: 1, read: 51 })
    expect(await state(s.id)).toMatchObject({ state: 'active', fundingTxHash: hash })
  } finally {
    await w.stop()
  }
}, 120_000)

test('past a hundred treasuries and tokens, the passes take them in turn by key: every one is looked at, however they come and go', async () => {
  const creator = await env.creator(10_000_000n)
  const s = await created(creator)
  const row = (await env.h.deps.store.getStream(s.id))!
  const store = env.h.deps.store
  // 250 other pending looks (their treasuries' keys on either side of the stream's), some of which go as passes run.
  const others = Array.from({ length: 250 }, (_, i) => ({ ...row, id: crypto.randomUUID(), treasury: `0x${i.toString(16).padStart(2, '0').repeat(20)}` }))
  for (const o of others) await store.insertStream(o)
  // A node slow for once under load fails a look, which then waits for the next round: up to two rounds of passes.
  const { watcher: w } = watcherOver(env.chain.anvil.url, { EVM_RPC_TIMEOUT_MS: '5000' })
  try {
    const hash = await env.send(creator, s.transaction)
    let passes = 0
    while ((await state(s.id)).state === 'pending' && passes < 8) {
      // Looks ahead of the stream's leave between passes (their streams funded elsewhere): none is skipped for it.
      for (const o of others.splice(0, 20)) await store.setStreamState(o.id, { from: 'pending', to: 'active', at: Date.now() })
      await w.watchNow()
      passes++
    }
    expect(await state(s.id)).toMatchObject({ state: 'active', fundingTxHash: hash })
  } finally {
    await w.stop()
    for (const o of others) await store.setStreamState(o.id, { from: 'pending', to: 'active', at: Date.now() })
  }
}, 120_000)

test('a smaller stream past the list, or created while the look was made, is not left out as dust: its funding is found', async () => {
  const creator = await env.creator(100_000_000n)
  // Its own treasury and token, for a look of its own: the tUSD streams of the tests above are all funded or cleared.
  const store = env.h.deps.store
  const make = async (netBudget: string) => {
    const r = await env.h.post('/v2/streams', env.tokenBody(creator, { netBudget }))
    expect(r.status, r.text).toBe(200)
    return { id: r.body.stream.id as string, transaction: r.body.transactions[0].transaction }
  }
  const big = await make('50000000')
  const small = await make('1000')
  const bigRow = (await store.getStream(big.id))!
  // A thousand larger streams ending sooner: the small one is past the list.
  const fillers = Array.from({ length: 1000 }, (_, i) => ({ ...bigRow, id: crypto.randomUUID(), endTime: bigRow.endTime - 1_000_000 + i }))
  for (const f of fillers) await store.insertStream(f)
  const { watcher: w } = watcherOver(env.chain.anvil.url, {})
  try {
    // Caught up first: a new watcher's first look reads back over the earlier tests' transfers, 100 a look.
    while ((await w.watchNow()).read > 0);
    const hash = await env.send(creator, small.transaction)
    expect((await w.watchNow()).funded).toBe(1)
    expect(await state(small.id)).toMatchObject({ state: 'active', fundingTxHash: hash })
  } finally {
    await w.stop()
    for (const f of [...fillers, bigRow]) await store.setStreamState(f.id, { from: 'pending', to: 'active', at: Date.now() })
  }

  // Created (as far as the look's list knew) only after the list was read.
  const late = await make('2000')
  const larger = await make('40000000')
  let reads = 0
  const { watcher: w2 } = watcherOver(env.chain.anvil.url, {}, {
    ...store,
    pendingTokenStreams: async (now: number, limit: number, look?: Parameters<typeof store.pendingTokenStreams>[2]) => {
      const all = await store.pendingTokenStreams(now, limit, look)
      return look && reads++ % 2 === 0 ? all.filter((s) => s.id !== late.id) : all
    },
  })
  try {
    while ((await w2.watchNow()).read > 0);
    const hash = await env.send(creator, late.transaction)
    expect((await w2.watchNow()).funded).toBe(1)
    expect(await state(late.id)).toMatchObject({ state: 'active', fundingTxHash: hash })
    expect((await state(larger.id)).state).toBe('pending')
  } finally {
    await w2.stop()
    await store.setStreamState(larger.id, { from: 'pending', to: 'active', at: Date.now() })
  }
}, 120_000)

test("a contract wallet's funding paid in parts (a batch of transfers, each less than the whole) is found, summed as confirm sums it", async () => {
  const { owner, wallet } = await env.walletCreator(10_000_000n)
  const r = await env.h.post('/v2/streams', env.tokenBody(owner, { creatorAddress: wallet }))
  expect(r.status, r.text).toBe(200)
  const { transaction } = r.body.transactions[0]
  const [id, totalPulled] = [r.body.stream.id as string, BigInt(r.body.totalPulled)]
  const { watcher: w } = watcherOver(env.chain.anvil.url, {})
  try {
    while ((await w.watchNow()).read > 0);
    // The tag on the first part's call, as the wallet's batch carries it; the second part untagged.
    const tag = (transaction.data as string).slice(2 + 8 + 128)
    const half = totalPulled / 2n
    const first = `${encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [env.treasury, half] })}${tag}` as Hex
    const second = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [env.treasury, totalPulled - half] })
    const hash = await env.chain.anvil.walletClient.writeContract({ account: owner, address: wallet, abi: testSmartWalletAbi, functionName: 'executeBatch', args: [[transaction.to, transaction.to], [first, second]], chain: null })
    await env.chain.anvil.publicClient.waitForTransactionReceipt({ hash })
    await mine()
    expect((await w.watchNow()).funded).toBe(1)
    expect(await state(id)).toMatchObject({ state: 'active', fundingTxHash: hash })
  } finally {
    await w.stop()
  }
})

/** Passes until the look's kept cursor is the head (earlier tests' looks may have left it behind). */
async function caughtUp(w: StreamWatcher, look: FundingLook) {
  const head = String(await env.chain.anvil.publicClient.getBlockNumber({ cacheTime: 0 }))
  for (let i = 0; i < 500 && (await env.h.deps.store.getLookProgress(look))?.cursor !== head; i++) await w.watchNow()
  expect((await env.h.deps.store.getLookProgress(look))?.cursor).toBe(head)
}

test('a restarted server goes on from where the last look got to: a funding mined while it was down, past its first look, is found', async () => {
  const creator = await env.creator(100_000_000n)
  const s = await created(creator)
  const { treasury, rewardToken } = (await env.h.deps.store.getStream(s.id))!
  const look = { ecosystem: 'evm', chainId: env.chain.anvil.chainId, treasury: treasury!, rewardToken: rewardToken! }
  // Five blocks of logs a call: a first look covers the last five.
  const before = watcherOver(env.chain.anvil.url, { EVM_LOGS_BLOCK_RANGE: '5' })
  await caughtUp(before.watcher, look)
  await before.watcher.stop()
  // Down meanwhile: the funding, then twelve blocks.
  const hash = await env.send(creator, s.transaction)
  await mine(12)
  const after = watcherOver(env.chain.anvil.url, { EVM_LOGS_BLOCK_RANGE: '5' })
  try {
    let passes = 0
    while ((await state(s.id)).state === 'pending' && passes++ < 5) await after.watcher.watchNow()
    expect(await state(s.id)).toMatchObject({ state: 'active', fundingTxHash: hash })
  } finally {
    await after.watcher.stop()
  }

  // Without what was kept (the store's row forgotten), the same start looks at the last five blocks alone.
  const lost = await created(creator)
  const looked = watcherOver(env.chain.anvil.url, { EVM_LOGS_BLOCK_RANGE: '5' })
  await caughtUp(looked.watcher, look)
  await looked.watcher.stop()
  await env.send(creator, lost.transaction)
  await mine(12)
  await env.h.deps.store.deleteLookProgress(Number.MAX_SAFE_INTEGER)
  const fresh = watcherOver(env.chain.anvil.url, { EVM_LOGS_BLOCK_RANGE: '5' })
  try {
    for (let i = 0; i < 5; i++) await fresh.watcher.watchNow()
    expect((await state(lost.id)).state).toBe('pending')
  } finally {
    await fresh.watcher.stop()
    await env.h.deps.store.setStreamState(lost.id, { from: 'pending', to: 'cancelled', at: Date.now() })
  }
})

test('where a look got to more than a day ago is not gone on from: the look starts over the recent blocks', async () => {
  const creator = await env.creator(10_000_000n)
  const s = await created(creator)
  const { treasury, rewardToken } = (await env.h.deps.store.getStream(s.id))!
  const look = { ecosystem: 'evm', chainId: env.chain.anvil.chainId, treasury: treasury!, rewardToken: rewardToken! }
  const hash = await env.send(creator, s.transaction)
  await mine()
  // Kept a day and a minute ago at block 1 (only: a later row is not written over): gone on from, the look would read
  // blocks 2 to 6, not the funding's.
  await env.h.deps.store.deleteLookProgress(Number.MAX_SAFE_INTEGER)
  await env.h.deps.store.putLookProgress(look, { cursor: '1', again: [], updatedAt: Date.now() - RESUME_WITHIN_MS - 60_000 })
  const w = watcherOver(env.chain.anvil.url, { EVM_LOGS_BLOCK_RANGE: '5' })
  try {
    expect((await w.watcher.watchNow()).funded).toBe(1)
    expect(await state(s.id)).toMatchObject({ state: 'active', fundingTxHash: hash })
  } finally {
    await w.watcher.stop()
  }
  // Kept a minute ago, the same cursor is gone on from: the next pass reads blocks 2 to 6.
  const t = await created(creator)
  await env.send(creator, t.transaction)
  await mine()
  await env.h.deps.store.deleteLookProgress(Number.MAX_SAFE_INTEGER)
  await env.h.deps.store.putLookProgress(look, { cursor: '1', again: [], updatedAt: Date.now() - 60_000 })
  const resumed = watcherOver(env.chain.anvil.url, { EVM_LOGS_BLOCK_RANGE: '5' })
  try {
    expect((await resumed.watcher.watchNow()).funded).toBe(0)
    expect((await env.h.deps.store.getLookProgress(look))?.cursor).toBe('6')
  } finally {
    await resumed.watcher.stop()
    await env.h.deps.store.setStreamState(t.id, { from: 'pending', to: 'cancelled', at: Date.now() })
  }
})

test("a kept cursor well past the chain's last block (a local chain started over under its id) starts a first look, not a wait for good", async () => {
  const creator = await env.creator(10_000_000n)
  const s = await created(creator)
  const { treasury, rewardToken } = (await env.h.deps.store.getStream(s.id))!
  const look = { ecosystem: 'evm', chainId: env.chain.anvil.chainId, treasury: treasury!, rewardToken: rewardToken! }
  const head = await env.chain.anvil.publicClient.getBlockNumber({ cacheTime: 0 })
  await env.h.deps.store.putLookProgress(look, { cursor: String(head + 1000n), again: [], updatedAt: Date.now() })
  const hash = await env.send(creator, s.transaction)
  await mine()
  const w = watcherOver(env.chain.anvil.url, { EVM_LOGS_BLOCK_RANGE: '5' })
  try {
    expect((await w.watcher.watchNow()).funded).toBe(1)
    expect(await state(s.id)).toMatchObject({ state: 'active', fundingTxHash: hash })
    // A few blocks past (a pool's node behind the one last asked) is waited out: the cursor stays.
    const near = String(head + 20n)
    await env.h.deps.store.putLookProgress(look, { cursor: near, again: [], updatedAt: Date.now() })
    const t = await created(creator)
    const w2 = watcherOver(env.chain.anvil.url, { EVM_LOGS_BLOCK_RANGE: '5' })
    try {
      await w2.watcher.watchNow()
      expect((await env.h.deps.store.getLookProgress(look))?.cursor).toBe(near)
    } finally {
      await w2.watcher.stop()
      await env.h.deps.store.setStreamState(t.id, { from: 'pending', to: 'cancelled', at: Date.now() })
      // Not left ahead for the tests after.
      await env.h.deps.store.deleteLookProgress(Number.MAX_SAFE_INTEGER)
    }
  } finally {
    await w.watcher.stop()
  }
})

test('forgetting old looks, failing, holds up no look (a funding is still found) and is logged as itself', async () => {
  const creator = await env.creator(10_000_000n)
  const s = await created(creator)
  const hash = await env.send(creator, s.transaction)
  await mine()
  const store = new Proxy(env.h.deps.store, {
    get: (target, name, receiver) => (name === 'deleteLookProgress' ? async () => Promise.reject(new Error('disk full')) : Reflect.get(target, name, receiver)),
  })
  const w = watcherOver(env.chain.anvil.url, {}, store)
  try {
    // A first look here (earlier tests' transfers ahead of it, a hundred a pass).
    let passes = 0
    while ((await state(s.id)).state === 'pending' && passes++ < 20) expect((await w.watcher.watchNow()).failed).toBe(0)
    expect(await state(s.id)).toMatchObject({ state: 'active', fundingTxHash: hash })
    // Once: an hour apart.
    expect(w.errors).toEqual([{ msg: 'stream funding watch: forgetting old looks failed', error: 'disk full' }])
  } finally {
    await w.watcher.stop()
  }
})
