/**
 * The rejections of the deposit and withdraw endpoints that errors.test.ts does not reach: those that depend on the
 * server's configuration (no RPC, no router, an RPC that fails after the preflight, a store that fails), on the
 * catalog (pending, swap-only), on the swap's arithmetic (slippage 10000, dust, no pool), and the shared HTTP paths
 * (no content type, 413, 429, malformed key, schema limits, NUL) as these two routes answer them. Each answers the
 * envelope and records nothing.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { importCatalog } from '@earn/core'
import { evmClientFromPublicClients, type EvmClient } from '@earn/plugin-evm'
import { createPublicClient, erc20Abi, getAddress, http } from 'viem'
import type { PrivateKeyAccount } from 'viem/accounts'
import { anvilChain, deployToken, mintToken, recordingProxy, sendUnsigned, startAnvil } from '../chains/evm.ts'
import { createHarness, expectEnvelope, type Harness, type Json } from '../harness.ts'
import { localCatalog, startLocalChain, type LocalChain } from './localChain.ts'
import { fundedMember } from './members.ts'
import { fileStore } from './records.ts'

setDefaultTimeout(60_000)

let chain: LocalChain
let h: Harness
let member: PrivateKeyAccount
const db = fileStore()
const pendingId = randomUUID()
const swapOnlyId = randomUUID()
const BALANCE = 100n * 10n ** 6n

const clientOf = (url: string, swapRouters?: Record<string, `0x${string}`>) =>
  evmClientFromPublicClients(
    { [chain.anvil.chainId]: createPublicClient({ chain: anvilChain, transport: http(url, { retryCount: 0 }), batch: { multicall: true } }) },
    swapRouters ? { swapRouters } : {},
  )

beforeAll(async () => {
  chain = await startLocalChain()
  h = await createHarness({ store: db.store, clients: { evm: chain.evmClient() } })
  await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, localCatalog())
  // Listed, its chain never read (imported while the chain was down): not served, so nothing is built on it.
  const direct = (await h.store.getOpportunity(chain.directId))!
  await h.store.upsertOpportunity({ ...direct, id: pendingId, listing: JSON.stringify({ ...JSON.parse(direct.listing), id: pendingId }), chainFacts: null, refreshedAt: null }, [
    chain.token.toLowerCase(),
  ])
  // The swap vault listed for swaps alone.
  const swap = (await h.store.getOpportunity(chain.swapId))!
  await h.store.upsertOpportunity({ ...swap, id: swapOnlyId, listing: JSON.stringify({ ...JSON.parse(swap.listing), id: swapOnlyId, swapDirectEnabled: false }) }, [chain.token.toLowerCase()])
  member = await fundedMember(h, chain, BALANCE)
  await mintToken(chain.anvil, chain.otherToken, member.address, 10n ** 20n)
  // Shares of the swap vault, for withdrawals into another token.
  const built = await h.post(`/v2/actions/deposit/${chain.swapId}`, { userAddress: member.address, tokenIn: chain.token, amount: '10000000', distributorId: h.distributorId })
  expect(built.status, built.text).toBe(200)
  for (const t of built.body.transactions as Json[]) expect((await sendUnsigned(chain.anvil, member, t.transaction)).status).toBe('success')
})
afterAll(async () => {
  await h.close()
  await chain.anvil.stop()
  db.cleanup()
})

const depositBody = (over: Json = {}) => ({ userAddress: member.address, tokenIn: chain.token, amount: '1000000', distributorId: h.distributorId, ...over })
const withdrawBody = (over: Json = {}) => ({ userAddress: member.address, amount: '1000', distributorId: h.distributorId, ...over })

// Harnesses made in a test share this file's store and are left open: closing one would shut the store.

/** The envelope with this status and exactly this context, and no action recorded. */
async function refused<R extends { status: number; body: Json; text: string }>(r: Promise<R>, code: number, status: string, context: Json, error?: RegExp) {
  const recorded = db.actions().length
  const answer = await r
  expect(answer.status, answer.text).toBe(code)
  expectEnvelope(answer.body, code, status)
  expect(answer.body.context).toEqual(context)
  if (error) expect(answer.body.error).toMatch(error)
  expect(db.actions().length).toBe(recorded)
  return answer
}

describe('the catalog', () => {
  test('an opportunity whose chain was never read is not found, for deposits and withdrawals', async () => {
    await refused(h.post(`/v2/actions/deposit/${pendingId}`, depositBody()), 404, 'NOT_FOUND', { opportunityId: 'unknown opportunity' })
    await refused(h.post(`/v2/actions/withdraw/${pendingId}`, withdrawBody()), 404, 'NOT_FOUND', { opportunityId: 'unknown opportunity' })
  })

  test("the opportunity's vault as the wallet (a member too) is 400 naming userAddress, deposit and withdrawal: a transfer to itself moves nothing", async () => {
    // Solana and TON vaults are wallets that can sign in; here the vault's address is made a member directly.
    const vault = chain.vault.toLowerCase()
    const now = Date.now()
    const nonce = randomUUID()
    await h.store.insertNonce({ nonce, orgId: h.org.orgId, ecosystem: 'evm', address: vault, message: 'm', chainId: chain.anvil.chainId, domain: 'd', uri: 'https://d', issuedAt: now, expiresAt: now + 60_000, consumedAt: null })
    const made = await h.store.createMemberWithNonce(nonce, { ecosystem: 'evm', address: vault, orgId: h.org.orgId, distributorId: null, chainId: chain.anvil.chainId, createdAt: now }, now)
    expect(made.ok).toBe(true)
    const context = { userAddress: "is the opportunity's vault" }
    await refused(h.post(`/v2/actions/deposit/${chain.directId}`, depositBody({ userAddress: getAddress(vault) })), 400, 'INVALID_ARGUMENT', context, new RegExp(`is this opportunity's vault \\(${getAddress(vault)}\\)`))
    await refused(h.post(`/v2/actions/withdraw/${chain.directId}`, withdrawBody({ userAddress: vault })), 400, 'INVALID_ARGUMENT', context)
  })

  test('a direct deposit where only swaps are enabled is 400 naming mode and what is enabled', async () => {
    await refused(h.post(`/v2/actions/deposit/${swapOnlyId}`, depositBody()), 400, 'INVALID_ARGUMENT', { mode: 'not enabled (enabled: swap)' })
  })

  test("mode swap with the vault's own token where only swaps are enabled is 400 naming tokenIn: it would be the direct deposit the operator took off", async () => {
    await refused(
      h.post(`/v2/actions/deposit/${swapOnlyId}`, depositBody({ mode: 'swap', slippageBps: 50 })),
      400,
      'INVALID_ARGUMENT',
      { tokenIn: "is the vault's own token, which only a direct deposit takes, and direct deposits are not enabled on this opportunity; swap another token in" },
    )
  })

  test('an unknown opportunity and an address no ecosystem takes: the address is named', async () => {
    const r = await refused(h.post(`/v2/actions/deposit/${randomUUID()}`, depositBody({ userAddress: '0x1234' })), 400, 'INVALID_ARGUMENT', { userAddress: 'not an address' })
    expect(r.body.error).toMatch(/^userAddress is not a wallet address of evm \(.+\), solana \(.+\), ton \(.+\)$/)
    // A checksum typo is named as one, as it is for a known opportunity.
    const typo = member.address.replace(/[a-f]/, (c) => c.toUpperCase())
    const t = await refused(h.post(`/v2/actions/deposit/${randomUUID()}`, depositBody({ userAddress: typo })), 400, 'INVALID_ARGUMENT', { userAddress: 'not an address' })
    expect(t.body.error).toContain('checksum')
  })
})

describe('the swap', () => {
  test('slippageBps 10000 guarantees nothing: 400 naming slippageBps, deposit and withdrawal', async () => {
    const context = { slippageBps: 'must be below 10000 for a swap' }
    await refused(h.post(`/v2/actions/deposit/${chain.swapId}`, depositBody({ mode: 'swap', tokenIn: chain.otherToken, amount: (10n ** 18n).toString(), slippageBps: 10_000 })), 400, 'INVALID_ARGUMENT', context)
    await refused(h.post(`/v2/actions/withdraw/${chain.swapId}`, withdrawBody({ tokenOut: chain.otherToken, slippageBps: 10_000 })), 400, 'INVALID_ARGUMENT', context)
  })

  test('dust: a pool that pays nothing is 400 naming amount; a quote of a unit or so, whose impact cannot be measured, names maxPriceImpactBps too', async () => {
    await refused(h.post(`/v2/actions/deposit/${chain.swapId}`, depositBody({ mode: 'swap', tokenIn: chain.otherToken, amount: '1' })), 400, 'INVALID_ARGUMENT', { amount: 'too small to swap; swap more' }, /pays nothing/)
    // Its minimum, rounded up, is the unit quoted (rounded down it had been 0, refused as such).
    await refused(
      h.post(`/v2/actions/deposit/${chain.swapId}`, depositBody({ mode: 'swap', tokenIn: chain.otherToken, amount: (10n ** 12n).toString(), slippageBps: 5_000 })),
      400,
      'INVALID_ARGUMENT',
      { amount: 'too small to measure its price impact', maxPriceImpactBps: 'set 10000 to accept an unmeasured impact' },
    )
  })

  test("a swap moving its pool's price further than maxPriceImpactBps (default 1000) is 400 naming both; a build says the impact it accepted", async () => {
    // A sixth of the pool's tokens in: the price moves ~14%, past the default bound.
    const whale = await fundedMember(h, chain, 0n)
    const big = 200_000n * 10n ** 18n
    await mintToken(chain.anvil, chain.otherToken, whale.address, big)
    const body = (over: Json = {}) => depositBody({ userAddress: whale.address, mode: 'swap', tokenIn: chain.otherToken, amount: big.toString(), ...over })
    const r = await refused(h.post(`/v2/actions/deposit/${chain.swapId}`, body()), 400, 'INVALID_ARGUMENT', {
      amount: expect.stringMatching(/^moves the price 1[0-9]{3} bps; swap less$/),
      maxPriceImpactBps: expect.stringMatching(/^1000 is less than the swap's 1[0-9]{3}$/),
    })
    expect(r.body.error).toMatch(/more than maxPriceImpactBps 1000: swap less, or raise maxPriceImpactBps to accept it$/)
    const impact = Number(/moves the price (\d+) bps/.exec(String((r.body.context as Json).amount))![1])
    // Accepted at exactly its impact, and refused a basis point below it.
    await refused(h.post(`/v2/actions/deposit/${chain.swapId}`, body({ maxPriceImpactBps: impact - 1 })), 400, 'INVALID_ARGUMENT', {
      amount: `moves the price ${impact} bps; swap less`,
      maxPriceImpactBps: `${impact - 1} is less than the swap's ${impact}`,
    })
    const built = await h.post(`/v2/actions/deposit/${chain.swapId}`, body({ maxPriceImpactBps: impact }))
    expect(built.status, built.text).toBe(200)
    const swap = (built.body.transactions as Json[]).find((t) => t.type === 'swap')!
    expect(swap.metadata).toMatchObject({ priceImpactBps: impact })
    // A small swap builds under the default, its impact said too (a millionth of the pool: nothing past rounding).
    const small = await h.post(`/v2/actions/deposit/${chain.swapId}`, depositBody({ mode: 'swap', tokenIn: chain.otherToken, amount: (10n ** 18n).toString() }))
    expect(small.status, small.text).toBe(200)
    expect([0, 1]).toContain(((small.body.transactions as Json[]).find((t) => t.type === 'swap')!.metadata as Json).priceImpactBps)
  })

  test('a withdrawal into another token is held to maxPriceImpactBps too, on what its redeem pays', async () => {
    const whale = await fundedMember(h, chain, 200_000n * 10n ** 6n)
    const deposited = await h.post(`/v2/actions/deposit/${chain.swapId}`, depositBody({ userAddress: whale.address, amount: (200_000n * 10n ** 6n).toString() }))
    expect(deposited.status, deposited.text).toBe(200)
    for (const t of deposited.body.transactions as Json[]) expect((await sendUnsigned(chain.anvil, whale, t.transaction)).status).toBe('success')
    const shares = await chain.anvil.publicClient.readContract({ address: chain.swapVault, abi: erc20Abi, functionName: 'balanceOf', args: [whale.address] })
    const body = (over: Json = {}) => withdrawBody({ userAddress: whale.address, amount: shares.toString(), tokenOut: chain.otherToken, ...over })
    // 200,000 tUSD into a pool of ~1,100,000: past the default bound.
    const r = await refused(h.post(`/v2/actions/withdraw/${chain.swapId}`, body()), 400, 'INVALID_ARGUMENT', {
      amount: expect.stringMatching(/^moves the price 1[0-9]{3} bps; swap less$/),
      maxPriceImpactBps: expect.stringMatching(/^1000 is less than the swap's 1[0-9]{3}$/),
    })
    const impact = Number(/moves the price (\d+) bps/.exec(String((r.body.context as Json).amount))![1])
    const built = await h.post(`/v2/actions/withdraw/${chain.swapId}`, body({ maxPriceImpactBps: 10_000 }))
    expect(built.status, built.text).toBe(200)
    expect((built.body.transactions as Json[]).find((t) => t.type === 'swap')!.metadata).toMatchObject({ priceImpactBps: impact })
  })

  test('an amount the pool cannot price (its arithmetic overflows) is 400 naming amount, not a missing pool', async () => {
    const whale = await fundedMember(h, chain, 0n)
    const huge = 2n ** 255n
    await mintToken(chain.anvil, chain.otherToken, whale.address, huge)
    const r = await refused(
      h.post(`/v2/actions/deposit/${chain.swapId}`, depositBody({ userAddress: whale.address, mode: 'swap', tokenIn: chain.otherToken, amount: huge.toString() })),
      400,
      'INVALID_ARGUMENT',
      { amount: 'too large for the pool to price; swap less' },
    )
    expect(r.body.error).toContain('too large to swap')
  })

  test('a withdrawal into a token the router has no pool for is 400 naming tokenOut', async () => {
    const lonely = await deployToken(chain.anvil, { name: 'Lonely', symbol: 'LON', decimals: 18 })
    const r = await refused(h.post(`/v2/actions/withdraw/${chain.swapId}`, withdrawBody({ tokenOut: lonely })), 400, 'INVALID_ARGUMENT', {
      tokenOut: expect.stringContaining('cannot price'),
    })
    expect(r.body.error).toContain('not available for this token')
    // Addresses in text a person reads are in their checksum form, as everywhere else in responses.
    expect(r.body.context.tokenOut).toContain(getAddress(lonely))
  })

  test('a withdrawal into a token the router cannot price is refused as such though the wallet is short of shares: a top-up would not help', async () => {
    const lonely = await deployToken(chain.anvil, { name: 'Lonely', symbol: 'LON', decimals: 18 })
    // More shares than the member holds: the balance preflight and the vault's maxRedeem both refuse them.
    const held = await chain.anvil.publicClient.readContract({ address: chain.swapVault, abi: erc20Abi, functionName: 'balanceOf', args: [member.address] })
    await refused(h.post(`/v2/actions/withdraw/${chain.swapId}`, withdrawBody({ tokenOut: lonely, amount: (held + 1n).toString() })), 400, 'INVALID_ARGUMENT', {
      tokenOut: expect.stringContaining('cannot price'),
    })
    // A token the router prices: the short balance is what is said.
    await refused(h.post(`/v2/actions/withdraw/${chain.swapId}`, withdrawBody({ tokenOut: chain.otherToken, amount: (held + 1n).toString() })), 400, 'INVALID_ARGUMENT', {
      required: (held + 1n).toString(),
      available: held.toString(),
      token: expect.any(String),
    })
  })

  test('a deposit of a token the router cannot price is refused as such whatever the balance: a top-up would not help (the ruled order checks tokenIn first)', async () => {
    const lonely = await deployToken(chain.anvil, { name: 'Lonely', symbol: 'LON', decimals: 18 })
    // The member holds none of it: the balance preflight alone would have said "insufficient token balance".
    await refused(h.post(`/v2/actions/deposit/${chain.swapId}`, depositBody({ mode: 'swap', tokenIn: lonely, amount: (10n ** 18n).toString() })), 400, 'INVALID_ARGUMENT', {
      tokenIn: expect.stringContaining('cannot price'),
    })
    // A token it can price, short: the balance, as ever.
    const short = await h.post(`/v2/actions/deposit/${chain.swapId}`, depositBody({ mode: 'swap', tokenIn: chain.otherToken, amount: (10n ** 40n).toString() }))
    expect([short.status, short.body.error]).toEqual([400, 'insufficient token balance'])
  })

  test('a server with no swap router for the chain refuses swaps both ways, naming the token field', async () => {
    const noRouter = await createHarness({ store: db.store, clients: { evm: clientOf(chain.anvil.url) } })
    const own = { distributorId: noRouter.distributorId }
    const deposit = await refused(noRouter.post(`/v2/actions/deposit/${chain.swapId}`, depositBody({ ...own, mode: 'swap', tokenIn: chain.otherToken })), 400, 'INVALID_ARGUMENT', {
      tokenIn: expect.stringContaining('no swap router'),
    })
    expect(deposit.body.error).toContain(`chain ${chain.anvil.chainId}`)
    await refused(noRouter.post(`/v2/actions/withdraw/${chain.swapId}`, withdrawBody({ ...own, tokenOut: chain.otherToken })), 400, 'INVALID_ARGUMENT', {
      tokenOut: expect.stringContaining('no swap router'),
    })
  })
})

describe('the server and its chain', () => {
  test('no RPC configured for the opportunity\'s chain: 400 naming chainId, both endpoints', async () => {
    const noRpc = await createHarness({ store: db.store, clients: { evm: evmClientFromPublicClients({}) } })
    const context = { chainId: `no RPC configured for chain ${chain.anvil.chainId}` }
    await refused(noRpc.post(`/v2/actions/deposit/${chain.directId}`, depositBody({ distributorId: noRpc.distributorId })), 400, 'INVALID_ARGUMENT', context)
    await refused(noRpc.post(`/v2/actions/withdraw/${chain.directId}`, withdrawBody({ distributorId: noRpc.distributorId })), 400, 'INVALID_ARGUMENT', context)
  })

  test("an RPC serving another chain than the one it is configured for: builds and verify are 503 naming the chain, never that chain's state", async () => {
    // The wallet holds tUSD on the opportunity's chain only; the other node (chain 8453) has the same contracts' addresses empty.
    const other = await startAnvil({ args: ['--chain-id', '8453'] })
    try {
      const wrong = await createHarness({ store: db.store, clients: { evm: clientOf(other.url) } })
      const context = { chainId: chain.anvil.chainId }
      const error = new RegExp(`the RPC configured for EVM chain ${chain.anvil.chainId} serves chain 8453`)
      await refused(wrong.post(`/v2/actions/deposit/${chain.directId}`, depositBody({ distributorId: wrong.distributorId })), 503, 'UNAVAILABLE', context, error)
      await refused(wrong.post(`/v2/actions/withdraw/${chain.directId}`, withdrawBody({ distributorId: wrong.distributorId })), 503, 'UNAVAILABLE', context, error)
      const verify = await wrong.get(`/v2/actions/verify?chainId=${chain.anvil.chainId}&txHash=0x${'ab'.repeat(32)}`, { key: wrong.org.publishableKey })
      expect([verify.status, verify.body.context], verify.text).toEqual([503, context])
      const portfolio = await wrong.get(`/v2/wallet/${member.address}/portfolio`, { key: wrong.org.publishableKey })
      expect([portfolio.status, portfolio.body.context?.chainId], portfolio.text).toEqual([503, chain.anvil.chainId])
      // Nothing read there is kept for the chain (checked first, not beside): no gas measured, no history settled.
      const { state } = (await wrong.deps.ecosystems.get('evm')).client as EvmClient
      expect([state.gasMeasured.size, state.settledFlows.size, [...state.cannotSimulate]]).toEqual([0, 0, []])
    } finally {
      await other.stop()
    }
  })

  test('an RPC that fails after the preflight (measuring gas) is a retryable 503 naming the chain; nothing is recorded', async () => {
    const failing = recordingProxy(chain.anvil.url, { refuse: (call) => call.method === 'eth_simulateV1' || call.method === 'eth_estimateGas' })
    // A fresh client: nothing measured yet, so the build must measure.
    const broken = await createHarness({ store: db.store, clients: { evm: clientOf(failing.url) } })
    try {
      const r = await refused(broken.post(`/v2/actions/deposit/${chain.directId}`, depositBody({ distributorId: broken.distributorId })), 503, 'UNAVAILABLE', { chainId: chain.anvil.chainId })
      expect(r.text).not.toContain('127.0.0.1')
      expect(failing.count('eth_estimateGas')).toBeGreaterThan(0)
    } finally {
      failing.stop()
    }
  })

  test('a store that fails to record the action: 500 INTERNAL with the request id, and no transactions handed out', async () => {
    const failing = await createHarness({ store: { ...db.store, insertActions: () => Promise.reject(new Error('disk full')) }, clients: { evm: chain.evmClient() } })
    const r = await failing.post(`/v2/actions/deposit/${chain.directId}`, depositBody({ distributorId: failing.distributorId }))
    expect(r.status).toBe(500)
    expectEnvelope(r.body, 500, 'INTERNAL')
    expect(r.body.error).toContain(r.headers.get('x-request-id')!)
    expect(r.text).not.toContain('disk full')
    expect(r.body).not.toHaveProperty('transactions')
  })
})

describe('the HTTP layer, as the action routes answer it', () => {
  const deposit = () => `/v2/actions/deposit/${chain.directId}`
  const withdraw = () => `/v2/actions/withdraw/${chain.directId}`

  test('a body without a content type is 400 saying to send application/json', async () => {
    const r = await h.app.handle(
      new Request(`http://localhost${deposit()}`, { method: 'POST', headers: { 'x-api-key': h.org.secretKey }, body: new TextEncoder().encode(JSON.stringify(depositBody())) }),
    )
    expect(r.status).toBe(400)
    const body = (await r.json()) as Json
    expectEnvelope(body, 400, 'INVALID_ARGUMENT')
    expect(body.context['content-type']).toMatch(/missing.*application\/json/)
  })

  test('malformed JSON, a null body and a body over 1 MiB', async () => {
    await refused(h.request('POST', withdraw(), { rawBody: '{"userAddress": ' }), 400, 'INVALID_ARGUMENT', { body: 'malformed JSON' })
    const nullBody = await h.request('POST', deposit(), { rawBody: 'null' })
    expect(nullBody.status).toBe(400)
    expectEnvelope(nullBody.body, 400, 'INVALID_ARGUMENT')
    await refused(h.request('POST', deposit(), { rawBody: JSON.stringify({ ...depositBody(), pad: 'x'.repeat(1024 * 1024) }) }), 413, 'PAYLOAD_TOO_LARGE', { body: 'too large' })
  })

  test('schema limits name their field', async () => {
    for (const [over, field] of [
      [{ amount: '1'.repeat(101) }, 'amount'],
      [{ referralCode: 'r'.repeat(65) }, 'referralCode'],
      // Shown back by verify and activity as one line.
      [{ referralCode: 'launch\nverified: true' }, 'referralCode'],
      [{ distributorId: 'd'.repeat(65) }, 'distributorId'],
      [{ userAddress: '0x' + 'a'.repeat(199) }, 'userAddress'],
    ] as const) {
      const r = await h.post(deposit(), depositBody(over))
      expect(r.status, field).toBe(400)
      expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
      expect(Object.keys(r.body.context), field).toEqual([field])
    }
  })

  test('withdraw: no key, a malformed key, an unknown distributor, an address that does not parse, 2^256 shares, a NUL in the path', async () => {
    await refused(h.post(withdraw(), withdrawBody(), { key: '' }), 401, 'UNAUTHORIZED', {})
    const malformed = await h.post(withdraw(), withdrawBody(), { key: 'sk_live_short' })
    expect(malformed.status).toBe(401)
    expectEnvelope(malformed.body, 401, 'UNAUTHORIZED')
    await refused(h.post(withdraw(), withdrawBody({ distributorId: randomUUID() })), 404, 'NOT_FOUND', { distributorId: expect.any(String) })
    await refused(h.post(withdraw(), withdrawBody({ userAddress: '0x1234' })), 400, 'INVALID_ARGUMENT', { userAddress: expect.stringContaining('an EVM address has 40') })
    await refused(h.post(withdraw(), withdrawBody({ amount: (2n ** 256n).toString() })), 400, 'INVALID_ARGUMENT', { amount: expect.any(String) })
    const nul = await h.post(`/v2/actions/withdraw/${chain.directId}%00`, withdrawBody())
    expect(nul.status).toBe(400)
    expectEnvelope(nul.body, 400, 'INVALID_ARGUMENT')
  })

  test('past the hourly budget: 429 naming the budget, with the metering headers, not charged, nothing built', async () => {
    // A deposit costs 10 units: a budget of 10 takes one.
    const tight = await createHarness({ store: db.store, clients: { evm: chain.evmClient() }, org: { hourlyBudget: 10 } })
    const body = depositBody({ distributorId: tight.distributorId })
    expect((await tight.post(deposit(), body)).status).toBe(200)
    const r = await refused(tight.post(deposit(), body), 429, 'RESOURCE_EXHAUSTED', { budget: 'hourly' })
    expect(r.headers.get('x-ratelimit-remaining')).toBe('0')
    expect(r.headers.get('retry-after')).toMatch(/^\d+$/)
  })
})
