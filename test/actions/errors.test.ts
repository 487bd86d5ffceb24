/**
 * Every rejection of the deposit and withdraw endpoints, through HTTP, each answering the envelope, in the order
 * DECISIONS.md rules. A recording RPC proxy in front of anvil shows that every check before the balance preflight
 * is decided without asking the chain, and the actions table shows that nothing rejected is recorded.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { createDistributor, createOrganization, importCatalog } from '@earn/core'
import { connect, evmClientFromPublicClients } from '@earn/plugin-evm'
import { randomUUID } from 'node:crypto'
import { createPublicClient, getAddress, http } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { anvilChain, closedPortUrl, deployHostile, deployToken, mintToken, recordingProxy } from '../chains/evm.ts'
import { createHarness, expectEnvelope, type Harness, type Json } from '../harness.ts'
import { localCatalog, startLocalChain, type LocalChain } from './localChain.ts'
import { fundedMember } from './members.ts'
import { fileStore } from './records.ts'
import { preflight } from '../../core/src/actions/checks.ts'

// Chains and server processes start here; bun 1.4.5 does not apply bunfig's [test] timeout, so set it per file.
setDefaultTimeout(60_000)

let chain: LocalChain
let proxy: ReturnType<typeof recordingProxy>
let h: Harness
let member: PrivateKeyAccount
let otherDistributor: string
const stranger = privateKeyToAccount(generatePrivateKey())
const db = fileStore()
const listsOther = randomUUID()
const BALANCE = 100n * 10n ** 6n

beforeAll(async () => {
  chain = await startLocalChain()
  proxy = recordingProxy(chain.anvil.url)
  const viaProxy = createPublicClient({ chain: anvilChain, transport: http(proxy.url), batch: { multicall: true } })
  h = await createHarness({
    store: db.store,
    clients: { evm: evmClientFromPublicClients({ [chain.anvil.chainId]: viaProxy }, { swapRouters: { [chain.anvil.chainId]: chain.router } }) },
  })
  await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, localCatalog())
  // The direct vault listed again with a second deposit token it cannot take itself. An import refuses that now; a
  // catalog stored before it did (or written by SQL) may still hold it, and the build refuses the token.
  const direct = (await h.store.getOpportunity(chain.directId))!
  const listing = JSON.parse(direct.listing) as Json
  const tokens = [...listing.depositTokens, { address: chain.otherToken.toLowerCase(), symbol: 'tEUR', decimals: 18, chainId: chain.anvil.chainId }]
  await h.store.upsertOpportunity({ ...direct, id: listsOther, listing: JSON.stringify({ ...listing, id: listsOther, depositTokens: tokens }) }, tokens.map((t) => t.address))
  member = await fundedMember(h, chain, BALANCE)
  const other = await createOrganization({ store: h.store, clock: h.deps.clock }, { name: 'Another org' })
  otherDistributor = (await createDistributor({ store: h.store, clock: h.deps.clock }, { orgId: other.orgId })).distributorId
})
afterAll(async () => {
  await h.close()
  proxy.stop()
  await chain.anvil.stop()
  db.cleanup()
})

const depositBody = (over: Json = {}) => ({ userAddress: member.address, tokenIn: chain.token, amount: '1000000', distributorId: h.distributorId, ...over })
const withdrawBody = (over: Json = {}) => ({ userAddress: member.address, amount: '1000000', distributorId: h.distributorId, ...over })

interface Case {
  name: string
  path: () => string
  body: () => unknown
  key?: () => string
  code: number
  status: string
  /** Fields `context` must name. */
  context: string[]
  error?: string | RegExp
}

/** Runs a rejection: the envelope, the status, the context fields, no chain request, nothing recorded. */
async function rejects(c: Case) {
  const before = proxy.requests.length
  const recorded = db.actions().length
  const r = await h.post(c.path(), c.body(), c.key ? { key: c.key() } : {})
  expect(r.status, `${c.name}: ${r.text}`).toBe(c.code)
  expectEnvelope(r.body, c.code, c.status)
  for (const field of c.context) expect(r.body.context, c.name).toHaveProperty([field])
  if (c.error !== undefined) expect(r.body.error, c.name).toMatch(c.error)
  expect(proxy.requests.length - before, `${c.name} asked the chain`).toBe(0)
  expect(db.actions().length, `${c.name} recorded an action`).toBe(recorded)
  return r
}

const deposit = (id = () => chain.directId) => () => `/v2/actions/deposit/${id()}`
const withdraw = (id = () => chain.directId) => () => `/v2/actions/withdraw/${id()}`

describe('deposit: every rejection before the chain is asked, in the ruled order', () => {
  const cases: Case[] = [
    { name: 'no key', path: deposit(), body: () => depositBody(), key: () => '', code: 401, status: 'UNAUTHORIZED', context: [] },
    {
      name: 'publishable key',
      path: deposit(),
      body: () => depositBody(),
      key: () => h.org.publishableKey,
      code: 401,
      status: 'UNAUTHORIZED',
      context: ['x-api-key'],
      error: /secret key \(sk_live_\)/,
    },
    { name: 'empty body', path: deposit(), body: () => ({}), code: 400, status: 'INVALID_ARGUMENT', context: ['userAddress', 'tokenIn', 'amount', 'distributorId'] },
    { name: 'unknown mode', path: deposit(), body: () => depositBody({ mode: 'fast' }), code: 400, status: 'INVALID_ARGUMENT', context: ['mode'] },
    { name: 'slippage over 10000', path: deposit(), body: () => depositBody({ slippageBps: 10_001 }), code: 400, status: 'INVALID_ARGUMENT', context: ['slippageBps'] },
    { name: 'maxPriceImpactBps over 10000', path: deposit(), body: () => depositBody({ maxPriceImpactBps: 10_001 }), code: 400, status: 'INVALID_ARGUMENT', context: ['maxPriceImpactBps'] },
    { name: 'maxPriceImpactBps not an integer', path: deposit(), body: () => depositBody({ maxPriceImpactBps: 1.5 }), code: 400, status: 'INVALID_ARGUMENT', context: ['maxPriceImpactBps'] },
    { name: 'amount as a number', path: deposit(), body: () => depositBody({ amount: 5 }), code: 400, status: 'INVALID_ARGUMENT', context: ['amount'] },
    { name: 'userAddress not an address', path: deposit(), body: () => depositBody({ userAddress: '0x1234' }), code: 400, status: 'INVALID_ARGUMENT', context: ['userAddress'] },
    {
      name: 'userAddress with a wrong checksum',
      path: deposit(),
      body: () => depositBody({ userAddress: member.address.slice(0, -1) + (member.address.endsWith('a') ? 'A' : 'a') }),
      code: 400,
      status: 'INVALID_ARGUMENT',
      context: ['userAddress'],
    },
    { name: 'not a member', path: deposit(), body: () => depositBody({ userAddress: stranger.address }), code: 404, status: 'NOT_FOUND', context: ['userAddress'], error: /not a member/ },
    {
      name: 'not a member, opportunity and distributor unknown too: membership is named first',
      path: deposit(() => randomUUID()),
      body: () => depositBody({ userAddress: stranger.address, distributorId: 'nope' }),
      code: 404,
      status: 'NOT_FOUND',
      context: ['userAddress'],
    },
    { name: 'unknown opportunity', path: deposit(() => randomUUID()), body: () => depositBody(), code: 404, status: 'NOT_FOUND', context: ['opportunityId'] },
    { name: 'opportunity id not a UUID', path: deposit(() => 'vault-1'), body: () => depositBody(), code: 404, status: 'NOT_FOUND', context: ['opportunityId'] },
    {
      name: 'unknown opportunity and distributor: the opportunity is named first',
      path: deposit(() => randomUUID()),
      body: () => depositBody({ distributorId: 'nope' }),
      code: 404,
      status: 'NOT_FOUND',
      context: ['opportunityId'],
    },
    { name: 'unknown distributor', path: deposit(), body: () => depositBody({ distributorId: randomUUID() }), code: 404, status: 'NOT_FOUND', context: ['distributorId'] },
    { name: "another organization's distributor", path: deposit(), body: () => depositBody({ distributorId: otherDistributor }), code: 404, status: 'NOT_FOUND', context: ['distributorId'] },
    {
      name: 'swap mode on a direct-only opportunity',
      path: deposit(),
      body: () => depositBody({ mode: 'swap', tokenIn: chain.otherToken }),
      code: 400,
      status: 'INVALID_ARGUMENT',
      context: ['mode'],
    },
    {
      name: 'mode, token and amount all wrong: the mode is named first',
      path: deposit(),
      body: () => depositBody({ mode: 'swap', tokenIn: 'junk', amount: '0' }),
      code: 400,
      status: 'INVALID_ARGUMENT',
      context: ['mode'],
    },
    { name: 'tokenIn not an address', path: deposit(), body: () => depositBody({ tokenIn: 'usdc' }), code: 400, status: 'INVALID_ARGUMENT', context: ['tokenIn'] },
    { name: 'tokenIn is the receipt token', path: deposit(), body: () => depositBody({ tokenIn: chain.vault }), code: 400, status: 'INVALID_ARGUMENT', context: ['tokenIn'], error: /receipt token/ },
    {
      name: 'tokenIn is the receipt token, in swap mode too',
      path: deposit(() => chain.swapId),
      body: () => depositBody({ tokenIn: chain.swapVault, mode: 'swap' }),
      code: 400,
      status: 'INVALID_ARGUMENT',
      context: ['tokenIn'],
    },
    {
      name: 'tokenIn not a deposit token in direct mode',
      path: deposit(),
      body: () => depositBody({ tokenIn: chain.otherToken }),
      code: 400,
      status: 'INVALID_ARGUMENT',
      context: ['tokenIn'],
      error: /not a deposit token/,
    },
    {
      name: 'token and amount wrong: the token is named first',
      path: deposit(),
      body: () => depositBody({ tokenIn: chain.otherToken, amount: 'lots' }),
      code: 400,
      status: 'INVALID_ARGUMENT',
      context: ['tokenIn'],
    },
    {
      name: "direct mode with a listed deposit token that is not the vault's asset: the plugin's 400, before the chain",
      path: deposit(() => listsOther),
      body: () => depositBody({ tokenIn: chain.otherToken }),
      code: 400,
      status: 'INVALID_ARGUMENT',
      context: ['tokenIn'],
      error: /must be the vault's asset/,
    },
    {
      name: 'swap mode with the native coin: the router trades ERC-20s only, said before the chain',
      path: deposit(() => chain.swapId),
      body: () => depositBody({ tokenIn: 'native', mode: 'swap' }),
      code: 400,
      status: 'INVALID_ARGUMENT',
      context: ['tokenIn'],
      error: /native is not routed/,
    },
    {
      name: 'swap mode with slippageBps 10000: nothing guaranteed whatever the quote, said before the chain',
      path: deposit(() => chain.swapId),
      body: () => depositBody({ tokenIn: chain.otherToken, mode: 'swap', slippageBps: 10_000 }),
      code: 400,
      status: 'INVALID_ARGUMENT',
      context: ['slippageBps'],
      error: /guarantees nothing/,
    },
    ...['0', '-5', '1.5', '1e6', ' 1', '0x10', '', (2n ** 256n).toString()].map(
      (amount): Case => ({ name: `amount ${JSON.stringify(amount)}`, path: deposit(), body: () => depositBody({ amount }), code: 400, status: 'INVALID_ARGUMENT', context: ['amount'] }),
    ),
  ]
  for (const c of cases) test(c.name, () => rejects(c).then(() => undefined))
})

describe('deposit: the balance preflight', () => {
  test('more than the wallet holds: 400 insufficient token balance, with required and available', async () => {
    const before = proxy.requests.length
    const r = await h.post(`/v2/actions/deposit/${chain.directId}`, depositBody({ amount: (BALANCE + 1n).toString() }))
    expect(r.status).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(r.body.error).toBe('insufficient token balance')
    expect(r.body.context).toEqual({ required: (BALANCE + 1n).toString(), available: BALANCE.toString(), token: getAddress(chain.token) })
    // The first chain request is the batched read that carries the balance (the builder's reads ride along), beside
    // the check that the RPC serves this chain (eth_chainId, once in a while: servedChain.ts).
    expect(proxy.requests.slice(before).filter((r) => r.join() !== 'eth_chainId')[0]).toEqual(['eth_call'])
    expect(db.actions('amount = ?', (BALANCE + 1n).toString())).toHaveLength(0)
  })

  test('exactly the balance passes the preflight and is built and recorded', async () => {
    const r = await h.post(`/v2/actions/deposit/${chain.directId}`, depositBody({ amount: BALANCE.toString() }))
    expect(r.status, r.text).toBe(200)
    expect(db.actions('id = ?', r.body.actionId)).toHaveLength(1)
  })

  test('swap mode with a token the router has no pool for: 400 naming tokenIn, whatever the balance', async () => {
    const lonely = await deployToken(chain.anvil, { name: 'Lonely', symbol: 'LON', decimals: 18 })
    await mintToken(chain.anvil, lonely, member.address, 10n ** 18n)
    const recorded = db.actions().length
    const r = await h.post(`/v2/actions/deposit/${chain.swapId}`, depositBody({ tokenIn: lonely, mode: 'swap', amount: (10n ** 18n).toString() }))
    expect(r.status).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(r.body.context).toHaveProperty('tokenIn')
    expect(db.actions().length).toBe(recorded)
    // Holding less of it is the same refusal: no top-up would make it depositable (DECISIONS.md: tokenIn, any routable
    // token in swap mode, is checked before the balance).
    const short = await h.post(`/v2/actions/deposit/${chain.swapId}`, depositBody({ tokenIn: lonely, mode: 'swap', amount: (10n ** 19n).toString() }))
    expect([short.status, Object.keys(short.body.context)]).toEqual([400, ['tokenIn']])
  })
})

describe('deposit: a swap-mode tokenIn that is no token', () => {
  test("a contract without balanceOf, or one whose answer would sink others' batched reads: 400 naming tokenIn; builds beside it unharmed", async () => {
    const bomb = await deployHostile(chain.anvil, 'TestReturnBomb')
    // The router has code but no balanceOf: the read reverts.
    for (const tokenIn of [chain.router, bomb]) {
      const [bad, ...honest] = await Promise.all([
        h.post(`/v2/actions/deposit/${chain.swapId}`, depositBody({ tokenIn, mode: 'swap' })),
        ...Array.from({ length: 3 }, () => h.post(`/v2/actions/deposit/${chain.directId}`, depositBody())),
      ])
      expect(bad!.status, bad!.text).toBe(400)
      expectEnvelope(bad!.body, 400, 'INVALID_ARGUMENT')
      expect(bad!.body.error).toContain(`token ${getAddress(tokenIn)} is not an ERC-20 contract`)
      expect(Object.keys(bad!.body.context)).toEqual(['tokenIn'])
      expect(honest.map((r) => r.status)).toEqual([200, 200, 200])
    }
  })
})

describe('withdraw: every rejection, in the ruled order', () => {
  const cases: Case[] = [
    { name: 'publishable key', path: withdraw(), body: () => withdrawBody(), key: () => h.org.publishableKey, code: 401, status: 'UNAUTHORIZED', context: ['x-api-key'] },
    { name: 'empty body', path: withdraw(), body: () => ({}), code: 400, status: 'INVALID_ARGUMENT', context: ['userAddress', 'amount', 'distributorId'] },
    { name: 'slippage below 0', path: withdraw(), body: () => withdrawBody({ slippageBps: -1 }), code: 400, status: 'INVALID_ARGUMENT', context: ['slippageBps'] },
    { name: 'maxPriceImpactBps below 0', path: withdraw(), body: () => withdrawBody({ maxPriceImpactBps: -1 }), code: 400, status: 'INVALID_ARGUMENT', context: ['maxPriceImpactBps'] },
    { name: 'not a member', path: withdraw(), body: () => withdrawBody({ userAddress: stranger.address }), code: 404, status: 'NOT_FOUND', context: ['userAddress'] },
    { name: 'unknown opportunity', path: withdraw(() => randomUUID()), body: () => withdrawBody(), code: 404, status: 'NOT_FOUND', context: ['opportunityId'] },
    { name: "another organization's distributor", path: withdraw(), body: () => withdrawBody({ distributorId: otherDistributor }), code: 404, status: 'NOT_FOUND', context: ['distributorId'] },
    { name: 'tokenOut not an address', path: withdraw(), body: () => withdrawBody({ tokenOut: 'usd' }), code: 400, status: 'INVALID_ARGUMENT', context: ['tokenOut'] },
    { name: 'tokenOut is the receipt token', path: withdraw(), body: () => withdrawBody({ tokenOut: chain.vault }), code: 400, status: 'INVALID_ARGUMENT', context: ['tokenOut'] },
    {
      name: 'tokenOut another token where swaps are off',
      path: withdraw(),
      body: () => withdrawBody({ tokenOut: chain.otherToken }),
      code: 400,
      status: 'INVALID_ARGUMENT',
      context: ['tokenOut'],
    },
    {
      name: 'tokenOut native where swaps are on: the router trades ERC-20s only, said before the chain',
      path: withdraw(() => chain.swapId),
      body: () => withdrawBody({ tokenOut: 'native' }),
      code: 400,
      status: 'INVALID_ARGUMENT',
      context: ['tokenOut'],
      error: /native is not routed/,
    },
    {
      name: 'tokenOut another token with slippageBps 10000: nothing guaranteed whatever the quote, said before the chain',
      path: withdraw(() => chain.swapId),
      body: () => withdrawBody({ tokenOut: chain.otherToken, slippageBps: 10_000 }),
      code: 400,
      status: 'INVALID_ARGUMENT',
      context: ['slippageBps'],
      error: /guarantees nothing/,
    },
    { name: 'amount 0', path: withdraw(), body: () => withdrawBody({ amount: '0' }), code: 400, status: 'INVALID_ARGUMENT', context: ['amount'] },
    { name: 'amount not an integer', path: withdraw(), body: () => withdrawBody({ amount: '2.5' }), code: 400, status: 'INVALID_ARGUMENT', context: ['amount'] },
  ]
  for (const c of cases) test(c.name, () => rejects(c).then(() => undefined))

  test('more shares than the wallet holds: 400 insufficient token balance, against the vault shares', async () => {
    const r = await h.post(`/v2/actions/withdraw/${chain.directId}`, withdrawBody({ amount: '7' }))
    expect(r.status).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(r.body.error).toBe('insufficient token balance')
    expect(r.body.context).toEqual({ required: '7', available: '0', token: getAddress(chain.vault) })
  })

  test('into another token where swaps are on, more shares than held: the preflight answers, as for any withdrawal', async () => {
    const r = await h.post(`/v2/actions/withdraw/${chain.swapId}`, withdrawBody({ amount: '7', tokenOut: chain.otherToken }))
    expect(r.status).toBe(400)
    expect(r.body.error).toBe('insufficient token balance')
    expect(r.body.context).toEqual({ required: '7', available: '0', token: getAddress(chain.swapVault) })
  })
})

describe('preflight of the native coin', () => {
  test("short: insufficient token balance names the token 'native'", async () => {
    const evm = await h.deps.ecosystems.get('evm')
    const poor = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
    const e = await preflight(evm, { chainId: chain.anvil.chainId, owner: poor, token: 'native', required: 1n }).catch((e: unknown) => e)
    expect(e).toMatchObject({ status: 400, message: 'insufficient token balance', context: { required: '1', available: '0', token: 'native' } })
  })
})

describe('the chain does not answer', () => {
  test('the preflight is a retryable 503 with the envelope, naming no RPC URL; nothing is recorded', async () => {
    const down = createPublicClient({ transport: http(await closedPortUrl(), { retryCount: 0 }) })
    const broken = await createHarness({ store: db.store, clients: { evm: evmClientFromPublicClients({ [chain.anvil.chainId]: down }) } })
    const recorded = db.actions().length
    for (const [path, body] of [
      [`/v2/actions/deposit/${chain.directId}`, depositBody({ distributorId: broken.distributorId })],
      [`/v2/actions/withdraw/${chain.directId}`, withdrawBody({ distributorId: broken.distributorId })],
    ] as const) {
      const r = await broken.post(path, body)
      expect(r.status, path).toBe(503)
      expectEnvelope(r.body, 503, 'UNAVAILABLE')
      expect(r.text).not.toContain('127.0.0.1')
    }
    expect(db.actions().length).toBe(recorded)
  })

  test('a node that stops answering after the preflight: 503 once the gas measure times out, no estimates waited for after it', async () => {
    const asked: string[] = []
    const hangs = new Set(['eth_simulateV1', 'eth_estimateGas'])
    // Everything answered by anvil until the build's gas is measured; the measure's calls are never answered.
    const stalling = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(req) {
        const body = await req.text()
        const parsed = JSON.parse(body) as Json
        const methods = (Array.isArray(parsed) ? parsed : [parsed]).map((c: Json) => c.method as string)
        asked.push(...methods)
        if (methods.some((m) => hangs.has(m))) return new Promise<Response>(() => {})
        return fetch(chain.anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      },
    })
    const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=http://127.0.0.1:${stalling.port}`, EVM_RPC_TIMEOUT_MS: '300' })
    const stalled = await createHarness({ store: db.store, clients: { evm: client } })
    const recorded = db.actions().length
    const r = await stalled.post(`/v2/actions/deposit/${chain.directId}`, depositBody({ distributorId: stalled.distributorId }))
    expect(r.status, r.text).toBe(503)
    expectEnvelope(r.body, 503, 'UNAVAILABLE')
    expect(asked).toContain('eth_simulateV1')
    // Before, each step's estimate then waited out the timeout and its retry too: ~4x the timeout a build.
    expect(asked).not.toContain('eth_estimateGas')
    expect(db.actions().length).toBe(recorded)
    stalling.stop(true)
  })

  test('a node whose eth_call answer is no data (null, a number, odd hex) is a 503 too, not a token refused', async () => {
    for (const result of [null, 5, '0x12']) {
      // A node behind which something broke: everything else answered by anvil, eth_call answered with `result`.
      const garbling = Bun.serve({
        port: 0,
        hostname: '127.0.0.1',
        async fetch(req) {
          const call = (await req.json()) as Json
          if (Array.isArray(call) || call.method !== 'eth_call')
            return fetch(chain.anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(call) })
          return Response.json({ jsonrpc: '2.0', id: call.id, result })
        },
      })
      const client = createPublicClient({ chain: anvilChain, transport: http(`http://127.0.0.1:${garbling.port}`, { retryCount: 0 }), batch: { multicall: true } })
      const garbled = await createHarness({ store: db.store, clients: { evm: evmClientFromPublicClients({ [chain.anvil.chainId]: client }) } })
      const recorded = db.actions().length
      const r = await garbled.post(`/v2/actions/deposit/${chain.directId}`, depositBody({ distributorId: garbled.distributorId }))
      expect(r.status, `${result}: ${r.text}`).toBe(503)
      expectEnvelope(r.body, 503, 'UNAVAILABLE')
      expect(r.body.context).toEqual({ chainId: chain.anvil.chainId })
      expect(db.actions().length).toBe(recorded)
      garbling.stop(true)
    }
  })
})

