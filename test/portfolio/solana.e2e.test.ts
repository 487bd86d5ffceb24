/**
 * The portfolio of a Solana wallet on LiteSVM with the sample catalog's Solana vault: balances from the chain,
 * receipt tokens valued 1:1, and earnings unknown (null) because Solana keeps no per-wallet vault events.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { importCatalog } from '@earn/core'
import { solana } from '@earn/plugin-solana'
import { generateKeyPairSigner } from '@solana/kit'
import { localCatalog } from '../actions/localChain.ts'
import { deploySampleSolana, interceptingEndpoint, startSolana, type SampleSolana, type SolanaChain } from '../chains/solana.ts'
import { createHarness, type Harness, type Json } from '../harness.ts'

setDefaultTimeout(60_000)

const ENTRY = localCatalog('solana').opportunities[0]!
let chain: SolanaChain
let sample: SampleSolana
let h: Harness
beforeAll(async () => {
  chain = await startSolana()
  sample = await deploySampleSolana(chain)
  h = await createHarness({ clients: { solana: solana.connect({ SOLANA_RPC_URL: chain.url }) } })
  const { opportunities } = await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, { opportunities: [ENTRY] })
  expect(opportunities.map((o) => o.chainFacts)).toEqual(['read'])
})
afterAll(async () => {
  await h?.close()
  await chain?.stop()
})

test('idle SOL and tUSD, the vtUSD position at 1:1, earnings null rather than invented', async () => {
  const wallet = (await generateKeyPairSigner()).address
  await chain.airdrop(wallet, 2_000_000_000n)
  await sample.fund(wallet, 75_000_000n)
  await sample.issueReceipts(wallet, 40_000_000n)

  const r = await h.get(`/v2/wallet/${wallet}/portfolio`, { key: h.org.publishableKey })
  expect(r.status, r.text).toBe(200)
  const [holdings] = r.body.portfolio.holdings.wallets as Json[]
  expect(holdings!.ecosystem).toBe('solana')
  expect(holdings!.tokens).toEqual([
    { chainId: 'localnet', address: 'native', symbol: 'SOL', decimals: 9, balance: '2000000000' },
    { chainId: 'localnet', address: sample.baseMint, symbol: 'tUSD', decimals: 6, balance: '75000000' },
  ])
  expect(holdings!.protocols).toEqual([
    expect.objectContaining({ opportunityId: ENTRY.id, chainId: 'localnet', vaultAddress: sample.vault, shares: '40000000', assets: '40000000' }),
  ])
  expect(r.body.portfolio.productsEarnings).toEqual([
    {
      opportunityId: ENTRY.id,
      chainId: 'localnet',
      baseToken: { address: sample.baseMint, symbol: 'tUSD', decimals: 6, chainId: 'localnet' },
      netDeposited: null,
      currentValue: '40000000',
      earned: null,
    },
  ])

  const withReceipts = await h.get(`/v1/wallet/${wallet}/portfolio?includeProtocolTokens=TRUE`, { key: h.org.publishableKey })
  expect(withReceipts.body.portfolio.holdings.wallets[0].tokens.map((t: Json) => [t.symbol, t.balance])).toEqual([
    ['SOL', '2000000000'],
    ['tUSD', '75000000'],
    ['vtUSD', '40000000'],
  ])
})

test("a Solana RPC that does not answer is 503 naming the chain and the setting to check", async () => {
  // The same store and catalog behind a server whose Solana RPC refuses every call (a closed port: nothing listens).
  const listener = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = listener.port
  listener.stop(true)
  // Not closed: it shares h's store, which h closes.
  const broken = await createHarness({ store: h.store, clients: { solana: solana.connect({ SOLANA_RPC_URL: `http://127.0.0.1:${port}` }) } })
  const r = await broken.get(`/v2/wallet/${(await generateKeyPairSigner()).address}/portfolio`, { key: h.org.publishableKey })
  expect(r.status, r.text).toBe(503)
  expect(r.body.context).toEqual({ chainId: 'localnet', SOLANA_RPC_URL: 'did not answer' })
})

test('a client that leaves a large portfolio: the reads still waiting for their turn are never sent', async () => {
  // 150 entries of their own mints, 301 balances: past the 128 reads a Solana portfolio sends at once (their requests
  // each held 500 ms), so they go in three turns, each turn's token balances in one request per token program.
  let balanceCalls = 0
  let leftAt = Number.POSITIVE_INFINITY
  let sentAfterLeaving = 0
  const endpoint = interceptingEndpoint(chain.url, async (call, forward) => {
    if (call.method !== 'getTokenAccountsByOwner' && call.method !== 'getBalance') return undefined
    balanceCalls++
    if (performance.now() > leftAt) sentAfterLeaving++
    await Bun.sleep(500)
    return forward()
  })
  const slow = await createHarness({ clients: { solana: solana.connect({ SOLANA_RPC_URL: `http://127.0.0.1:${endpoint.port}` }) } })
  try {
    for (let i = 0; i < 150; i++) {
      const [vault, base, receipt] = (await Promise.all([generateKeyPairSigner(), generateKeyPairSigner(), generateKeyPairSigner()])).map((s) => s.address)
      const listing = {
        ...ENTRY,
        id: randomUUID(),
        vaultAddress: vault,
        baseToken: { ...ENTRY.baseToken, address: base },
        receiptToken: { ...ENTRY.receiptToken, address: receipt },
        depositTokens: [{ ...ENTRY.depositTokens[0]!, address: base, chainId: 'localnet' }],
      }
      const facts = { baseToken: base, receiptToken: receipt, decimals: 6, receiptDecimals: 6, totalAssets: '0' }
      await slow.store.upsertOpportunity(
        { id: listing.id, ecosystem: 'solana', chainId: 'localnet', vaultAddress: vault!, listing: JSON.stringify(listing), chainFacts: JSON.stringify(facts), tvl: 0, refreshedAt: 1, refreshError: null, delistedAt: null, createdAt: 1, updatedAt: 1 },
        [base!],
      )
    }
    const wallet = (await generateKeyPairSigner()).address
    const left = new AbortController()
    const answer = slow.app.handle(new Request(`http://localhost/v2/wallet/${wallet}/portfolio`, { headers: { 'x-api-key': slow.org.publishableKey }, signal: left.signal }))
    await Bun.sleep(200)
    leftAt = performance.now()
    left.abort()
    await answer.catch(() => {})
    await Bun.sleep(1_000)
    // The first turn's requests, in flight when it left (SOL, and the token accounts of each token program), not the
    // next turns' (which at 500 ms would have been sent by now).
    expect(balanceCalls).toBe(3)
    expect(sentAfterLeaving).toBe(0)
  } finally {
    await slow.close()
    await endpoint.stop(true)
  }
})
