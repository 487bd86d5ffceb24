/**
 * GET /v2/opportunities/ and /v2/opportunities/{id} over the sample catalog on anvil: the object's fields,
 * filters, pagination, every filter that does not parse (400 naming it), 404, and the keys that may call them.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { importCatalog, type Store } from '@earn/core'
import { randomUUID } from 'node:crypto'
import { getAddress } from 'viem'
import { localCatalog, startLocalChain, type LocalChain } from '../actions/localChain.ts'
import { createHarness, expectEnvelope, type Harness, type Json } from '../harness.ts'

// Chains and server processes start here; bun 1.4.5 does not apply bunfig's [test] timeout, so set it per file.
setDefaultTimeout(60_000)

let chain: LocalChain
let h: Harness
beforeAll(async () => {
  chain = await startLocalChain()
  h = await createHarness({ clients: { evm: chain.evmClient() } })
  await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, localCatalog())
})
afterAll(async () => {
  await h.close()
  await chain.anvil.stop()
})

/** More opportunities with chosen TVLs, straight into the store (their vaults need not exist for listing). */
async function seed(store: Store, n: number, chainId: string) {
  for (let i = 0; i < n; i++) {
    const listing = { ...localCatalog().opportunities[0], id: randomUUID(), name: `Seeded ${i}`, chainId, vaultAddress: '0x' + String(i + 1).padStart(40, '0') } as Json
    listing.depositTokens = [{ address: '0x' + 'ee'.repeat(20), symbol: 'EEE', decimals: 18, chainId }]
    listing.baseToken = { symbol: 'EEE' }
    listing.receiptToken = { symbol: 'vEEE' }
    const facts = { baseToken: '0x' + 'ee'.repeat(20), receiptToken: listing.vaultAddress, decimals: 18, totalAssets: String(BigInt(i + 1) * 10n ** 18n) }
    await store.upsertOpportunity(
      { id: listing.id, ecosystem: 'evm', chainId, vaultAddress: listing.vaultAddress, listing: JSON.stringify(listing), chainFacts: JSON.stringify(facts), tvl: (i + 1) * 1000, refreshedAt: 1, refreshError: null, delistedAt: null, createdAt: 1, updatedAt: 1 },
      ['0x' + 'ee'.repeat(20)],
    )
  }
}

describe('GET /v2/opportunities/{opportunityId}', () => {
  test('the opportunity: catalog fields and chain facts, addresses in EIP-55', async () => {
    const r = await h.get(`/v2/opportunities/${chain.directId}`, { key: h.org.publishableKey })
    expect(r.status).toBe(200)
    const chainId = chain.anvil.chainId
    expect(r.body).toEqual({
      opportunity: {
        id: chain.directId,
        name: 'Test USD Vault',
        description: expect.any(String),
        ecosystem: 'evm',
        chainId,
        protocol: 'ERC-4626',
        vaultAddress: getAddress(chain.vault),
        baseToken: { address: getAddress(chain.token), symbol: 'tUSD', decimals: 6, chainId },
        receiptToken: { address: getAddress(chain.vault), symbol: 'vtUSD', decimals: 6, chainId },
        depositTokens: [{ address: getAddress(chain.token), symbol: 'tUSD', decimals: 6, chainId }],
        tvl: 0,
        estimatedApr: 4.5,
        minDepositAmountUsd: 1,
        swapDirectEnabled: true,
        swapRouteEnabled: false,
        transactionalProperties: { depositStepsType: 'instant', redeemStepsType: 'instant' },
        totalAssets: '0',
        refreshedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      },
    })
    // Upper-case UUIDs name the same opportunity.
    expect((await h.get(`/v2/opportunities/${chain.directId.toUpperCase()}`)).body.opportunity.id).toBe(chain.directId)
  })

  test('an unknown id is 404 naming opportunityId; no key is 401', async () => {
    for (const id of [randomUUID(), 'not-a-uuid']) {
      const r = await h.get(`/v2/opportunities/${id}`)
      expect(r.status).toBe(404)
      expectEnvelope(r.body, 404, 'NOT_FOUND')
      expect(r.body.context).toEqual({ opportunityId: 'unknown opportunity' })
    }
    // A long id is quoted cut, not echoed whole.
    const long = await h.get(`/v2/opportunities/${'a'.repeat(5000)}`)
    expect(long.status).toBe(404)
    expect(long.body.error).toBe(`opportunity ${'a'.repeat(80)}… (5000 characters) not found; list them with GET /v2/opportunities/`)
    const r = await h.get(`/v2/opportunities/${chain.directId}`, { key: null })
    expect(r.status).toBe(401)
    expectEnvelope(r.body, 401, 'UNAUTHORIZED')
  })
})

describe('GET /v2/opportunities/', () => {
  test('lists the catalog with the pagination object; publishable key suffices; metered', async () => {
    const r = await h.get('/v2/opportunities/', { key: h.org.publishableKey })
    expect(r.status).toBe(200)
    expect(r.body.total).toBe(2)
    expect(r.body.opportunities.map((o: Json) => o.id).sort()).toEqual([chain.directId, chain.swapId].sort())
    expect(r.body.pagination).toEqual({ page: 1, limit: 100, total: 2, totalPages: 1, hasNext: false, hasPrevious: false })
    expect(r.headers.get('x-ratelimit-used')).not.toBeNull()
    // The path without the trailing slash is the same endpoint.
    expect((await h.get('/v2/opportunities')).body.total).toBe(2)
  })

  test('filters: chainIds, depositToken (any case), tvlGreaterThan; largest TVL first; pages', async () => {
    const other = '424242'
    await seed(h.store, 5, other)
    const onOther = await h.get(`/v2/opportunities/?chainIds=${other}`)
    expect(onOther.body.total).toBe(5)
    expect(onOther.body.opportunities.map((o: Json) => o.tvl)).toEqual([5000, 4000, 3000, 2000, 1000])
    expect((await h.get(`/v2/opportunities/?chainIds=${chain.anvil.chainId},${other}`)).body.total).toBe(7)
    expect((await h.get(`/v2/opportunities/?chainIds=${chain.anvil.chainId}, 99`)).body.total).toBe(2)

    for (const form of [chain.token, chain.token.toLowerCase(), '0x' + chain.token.slice(2).toUpperCase()]) {
      const r = await h.get(`/v2/opportunities/?depositToken=${form}`)
      expect(r.body.opportunities.map((o: Json) => o.id).sort(), form).toEqual([chain.directId, chain.swapId].sort())
    }
    expect((await h.get(`/v2/opportunities/?depositToken=${chain.vault}`)).body.total).toBe(0)
    const big = await h.get(`/v2/opportunities/?tvlGreaterThan=2500&chainIds=${other}`)
    expect(big.body.opportunities.map((o: Json) => o.tvl)).toEqual([5000, 4000, 3000])
    expect((await h.get(`/v2/opportunities/?tvlGreaterThan=5000`)).body.total).toBe(0)

    const page = await h.get(`/v2/opportunities/?chainIds=${other}&limit=2&page=2`)
    expect(page.body.opportunities.map((o: Json) => o.tvl)).toEqual([3000, 2000])
    expect(page.body).toMatchObject({ total: 5, pagination: { page: 2, limit: 2, total: 5, totalPages: 3, hasNext: true, hasPrevious: true } })
    const last = await h.get(`/v2/opportunities/?chainIds=${other}&limit=2&page=3`)
    expect(last.body.pagination).toMatchObject({ hasNext: false, hasPrevious: true })
    const beyond = await h.get(`/v2/opportunities/?chainIds=${other}&limit=2&page=9`)
    expect(beyond.body).toMatchObject({ opportunities: [], total: 5, pagination: { page: 9, totalPages: 3, hasNext: false } })
    expect((await h.get('/v2/opportunities/?limit=500')).status).toBe(200)
    // `native`, as the catalog names a chain's own coin.
    const coin = '434343'
    const listing = { ...localCatalog().opportunities[0], id: randomUUID(), chainId: coin, vaultAddress: '0x' + 'ab'.repeat(20) } as Json
    listing.depositTokens = [{ address: 'native', symbol: 'ETH', decimals: 18, chainId: coin }]
    const facts = { baseToken: '0x' + 'ee'.repeat(20), receiptToken: listing.vaultAddress, decimals: 18, totalAssets: '0' }
    await h.store.upsertOpportunity(
      { id: listing.id, ecosystem: 'evm', chainId: coin, vaultAddress: listing.vaultAddress, listing: JSON.stringify(listing), chainFacts: JSON.stringify(facts), tvl: 0, refreshedAt: 1, refreshError: null, delistedAt: null, createdAt: 1, updatedAt: 1 },
      ['native'],
    )
    const native = await h.get('/v2/opportunities/?depositToken=native')
    expect(native.status, native.text).toBe(200)
    expect(native.body.opportunities.map((o: Json) => o.id)).toEqual([listing.id])
    // In any case, as a build's tokenIn and a stream's rewardToken take it.
    expect((await h.get('/v2/opportunities/?depositToken=NATIVE')).body.opportunities.map((o: Json) => o.id)).toEqual([listing.id])
  })

  test("a Solana cluster is one chain in either spelling: mainnet's CAIP-2 id is stored as mainnet, and either filter finds it", async () => {
    const caip = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'
    const entry = { ...localCatalog('solana').opportunities[0]!, id: randomUUID(), chainId: caip } as Json
    entry.depositTokens = (entry.depositTokens as Json[]).map((t) => ({ ...t, chainId: 'mainnet' }))
    await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, { opportunities: [entry] })
    const row = await h.store.getOpportunity(entry.id)
    expect([row?.chainId, JSON.parse(row!.listing).chainId]).toEqual(['mainnet', 'mainnet'])
    // This server has no Solana RPC, so the entry waits for its facts; these stand in for a refresh's.
    const facts = { baseToken: entry.baseToken.address, receiptToken: entry.receiptToken.address, decimals: 6, receiptDecimals: 6, totalAssets: '0' }
    await h.store.upsertOpportunity({ ...row!, chainFacts: JSON.stringify(facts), refreshedAt: 1 }, [entry.baseToken.address])
    for (const spelling of ['mainnet', caip, `mainnet,${caip}`]) {
      const r = await h.get(`/v2/opportunities/?chainIds=${spelling}`)
      expect([r.status, r.body.opportunities.map((o: Json) => [o.id, o.chainId])], spelling).toEqual([200, [[entry.id, 'mainnet']]])
    }
    // A CAIP-2 id of a cluster without a name (a local validator's) stays its own chain.
    expect((await h.get(`/v2/opportunities/?chainIds=solana:${'1'.repeat(32)}`)).body.total).toBe(0)
    // A prefix shorter than CAIP-2's 32 characters (earlier releases took them) names it too.
    expect((await h.get('/v2/opportunities/?chainIds=solana:5eykt4')).body.total).toBe(1)
    await h.store.setOpportunityDelisted(entry.id, true, 1)
  })

  test('a negative tvlGreaterThan is a number like any other: it filters nothing out', async () => {
    const all = await h.get('/v2/opportunities/')
    const negative = await h.get('/v2/opportunities/?tvlGreaterThan=-1')
    expect(negative.status, negative.text).toBe(200)
    expect(negative.body.opportunities.map((o: Json) => o.id)).toEqual(all.body.opportunities.map((o: Json) => o.id))
    expect(all.body.opportunities.length).toBeGreaterThan(0)
  })

  test('tvlGreaterThan is compared exactly, in cents: a filter a hair under a TVL keeps it, one a hair over drops it', async () => {
    const chainId = '454545'
    await seed(h.store, 5, chainId) // TVLs 1,000 to 5,000
    const above = async (filter: string) => {
      const r = await h.get(`/v2/opportunities/?chainIds=${chainId}&tvlGreaterThan=${filter}`)
      expect(r.status, r.text).toBe(200)
      return r.body.opportunities.map((o: Json) => o.tvl)
    }
    // Each of these reads as 5000 once made a double: the TVL of 5,000 had been hidden by the first.
    expect(await above('4999.99999999999999999')).toEqual([5000])
    expect(await above('4999.999999999999999999999999e0')).toEqual([5000])
    expect(await above('5000.00000000000000001')).toEqual([])
    expect(await above('5000')).toEqual([])
    expect(await above('499999.999999999999999e-2')).toEqual([5000])
    expect(await above('1000')).toEqual([5000, 4000, 3000, 2000])
    expect(await above('999.999')).toEqual([5000, 4000, 3000, 2000, 1000])
    // A negative filter below zero by less than a double can tell keeps a TVL of 0 (it had read as -0, not below 0).
    await h.store.upsertOpportunity({ ...(await h.store.getOpportunity((await h.get(`/v2/opportunities/?chainIds=${chainId}&limit=1`)).body.opportunities[0].id))!, tvl: 0 }, ['0x' + 'ee'.repeat(20)])
    expect(await above('-1e-400')).toEqual([4000, 3000, 2000, 1000, 0])
  })

  test('a tvlGreaterThan past what a double holds is still a number: above every TVL (none listed), or below every one (all)', async () => {
    const all = await h.get('/v2/opportunities/')
    const above = await h.get(`/v2/opportunities/?tvlGreaterThan=1${'0'.repeat(309)}`)
    expect([above.status, above.body.total]).toEqual([200, 0])
    const below = await h.get('/v2/opportunities/?tvlGreaterThan=-1e400')
    expect([below.status, below.body.total]).toEqual([200, all.body.total])
    expect(all.body.total).toBeGreaterThan(0)
  })

  test('a long run of digits followed by a stray character is refused at once (no backtracking)', async () => {
    const started = performance.now()
    const r = await h.get(`/v2/opportunities/?tvlGreaterThan=${'1'.repeat(100_000)}x`)
    expect([r.status, Object.keys(r.body.context)]).toEqual([400, ['tvlGreaterThan']])
    expect(performance.now() - started).toBeLessThan(1_000)
  })

  test('a filter that does not parse is 400 naming it', async () => {
    const cases: [string, string][] = [
      ['chainIds=', 'chainIds'],
      ['chainIds=,', 'chainIds'],
      ['chainIds=abc', 'chainIds'],
      ['chainIds=1,-5', 'chainIds'],
      ['depositToken=usdc', 'depositToken'],
      ['depositToken=0x1234', 'depositToken'],
      ['tvlGreaterThan=lots', 'tvlGreaterThan'],
      ['tvlGreaterThan=Infinity', 'tvlGreaterThan'],
      ['tvlGreaterThan=1e', 'tvlGreaterThan'],
      ['tvlGreaterThan=--1', 'tvlGreaterThan'],
      ['tvlGreaterThan=.', 'tvlGreaterThan'],
      ['tvlGreaterThan=', 'tvlGreaterThan'],
      ['page=0', 'page'],
      ['page=1.5', 'page'],
      ['page=x', 'page'],
      ['limit=0', 'limit'],
      ['limit=501', 'limit'],
      ['limit=-3', 'limit'],
      // A repeated key would keep one of its values silently.
      ['chainIds=31337&chainIds=1', 'chainIds'],
      ['limit=abc&limit=1', 'limit'],
    ]
    for (const [query, field] of cases) {
      const r = await h.get(`/v2/opportunities/?${query}`)
      expect(r.status, query).toBe(400)
      expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
      expect(Object.keys(r.body.context), query).toEqual([field])
    }
  })

  test("a deposit token no ecosystem takes is told each ecosystem's reason: a checksum typo is named as one", async () => {
    // The token's EIP-55 form with one letter's case flipped: the checksum says a character is mistyped.
    const at = chain.token.slice(2).search(/[a-fA-F]/) + 2
    const flipped = chain.token.slice(0, at) + (chain.token[at] === chain.token[at]!.toUpperCase() ? chain.token[at]!.toLowerCase() : chain.token[at]!.toUpperCase()) + chain.token.slice(at + 1)
    const r = await h.get(`/v2/opportunities/?depositToken=${flipped}`)
    expect(r.status, r.text).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(r.body.context.depositToken).toContain('evm (mixed-case address does not match its EIP-55 checksum')
    const short = await h.get('/v2/opportunities/?depositToken=0x1234')
    expect(short.body.context.depositToken).toContain('evm (has 4 hexadecimal characters after 0x; an EVM address has 40)')
  })
})
