/**
 * A Solana opportunity stored, and deposits built, under mainnet's CAIP-2 id before chain ids had one spelling: they
 * still verify by either spelling, the entry re-imports (and is then stored as `mainnet`), and the filter finds it.
 * LiteSVM stands in for mainnet behind a proxy that answers mainnet's genesis hash (a mock only of that one answer:
 * no public cluster can run here).
 */
import { afterAll, expect, test } from 'bun:test'
import { importCatalog, respellStoredChains } from '@earn/core'
import { solana } from '@earn/plugin-solana'
import { generateKeyPairSigner, type KeyPairSigner } from '@solana/kit'
import { deploySampleSolana, startSolana } from '../chains/solana.ts'
import { createHarness, type Json } from '../harness.ts'
import { localCatalog } from './localChain.ts'
import { registerSolana } from './members.ts'

const MAINNET_GENESIS = '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d'
const CAIP = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'

const chain = await startSolana()
const sample = await deploySampleSolana(chain)
/** The node down: every call but the genesis hash (asked once, remembered) answers 503. */
let down = false
const proxy = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(request) {
    const body = await request.text()
    const call = JSON.parse(body) as { id: number; method: string }
    if (call.method === 'getGenesisHash') return Response.json({ jsonrpc: '2.0', id: call.id, result: MAINNET_GENESIS })
    if (down) return new Response('down', { status: 503 })
    return fetch(chain.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  },
})
const h = await createHarness({ clients: { solana: solana.connect({ SOLANA_RPC_URL: `http://127.0.0.1:${proxy.port}` }) } })
afterAll(async () => {
  await h.close()
  proxy.stop(true)
  await chain.stop()
})

const entry = { ...localCatalog('solana').opportunities[0]!, id: crypto.randomUUID(), chainId: 'mainnet' }

async function member(): Promise<KeyPairSigner> {
  const wallet = await generateKeyPairSigner()
  await chain.airdrop(wallet.address, 1_000_000_000n)
  await registerSolana(h, wallet)
  await sample.fund(wallet.address, 1_000_000n)
  return wallet
}

const deps = () => ({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock })

/** What an earlier release stored for a catalog entry that named mainnet by its CAIP-2 id. */
async function storeLegacy(id: string) {
  const stored = (await h.store.getOpportunity(id))!
  const legacy: Json = { ...(JSON.parse(stored.listing) as Json), chainId: CAIP }
  legacy.depositTokens = (legacy.depositTokens as Json[]).map((t) => ({ ...t, chainId: CAIP }))
  await h.store.upsertOpportunity({ ...stored, chainId: CAIP, listing: JSON.stringify(legacy) }, [sample.baseMint])
}

test('an entry and a deposit stored under the CAIP-2 id verify by either spelling, recorded once; a re-import while the chain is down keeps its facts', async () => {
  await importCatalog(deps(), { opportunities: [entry] })
  await storeLegacy(entry.id)

  const user = await member()
  const built = await h.post(`/v2/actions/deposit/${entry.id}`, { userAddress: user.address, tokenIn: sample.baseMint, amount: '250000', distributorId: h.distributorId })
  expect(built.status, built.text).toBe(200)
  const signature = await chain.signAndSend(built.body.transactions[0].transaction.serializedTransaction, user)
  const action = (await h.store.listDistributorActivity({ orgId: h.org.orgId, distributorId: h.distributorId, offset: 0, limit: 10 })).rows.find((r) => r.type === 'deposit')
  expect(action?.chainId).toBe(CAIP)

  for (const chainId of ['mainnet', CAIP]) {
    const v = await h.get(`/v2/actions/verify?chainId=${chainId}&txHash=${signature}`)
    expect([v.status, v.body.verified, v.body.metadata?.actionId], chainId).toEqual([200, true, built.body.actionId])
  }
  // One verification, under the spelling the action was built with, however it was asked.
  const rows = (await h.store.listDistributorActivity({ orgId: h.org.orgId, distributorId: h.distributorId, offset: 0, limit: 10 })).rows
  expect(rows.filter((r) => r.type === 'verify').map((r) => [r.chainId, r.txHash])).toEqual([[CAIP, signature]])
  // Shown in the one spelling, as the opportunity is, though stored in the one its tag was signed over.
  const shown = await h.get(`/v2/distributors/${h.distributorId}/activity`)
  expect([...new Set((shown.body.activities as Json[]).filter((a) => a.type !== 'signup').map((a) => a.chainId))]).toEqual(['mainnet'])

  // The same entry, as the file names it now, while the chain is down: not "moved off its vault", its facts kept
  // (listed still), and stored by name from here on.
  down = true
  const again = await importCatalog(deps(), { opportunities: [entry] }).finally(() => (down = false))
  expect(again.opportunities.map((o) => [o.result, o.chainFacts])).toEqual([['updated', 'kept']])
  expect((await h.get(`/v2/opportunities/${entry.id}`)).status).toBe(200)
  expect((await h.store.getOpportunity(entry.id))?.chainId).toBe('mainnet')
  for (const chainId of ['mainnet', CAIP]) expect((await h.get(`/v2/opportunities/?chainIds=${chainId}`)).body.total, chainId).toBe(1)
  // A deposit built before the re-import still verifies.
  expect((await h.get(`/v2/actions/verify?chainId=mainnet&txHash=${signature}`)).body.verified).toBe(true)
})

test('entries stored in an earlier spelling are rewritten to the one spelling (the server does this once its plugins load), facts and all', async () => {
  const other = { ...entry, id: crypto.randomUUID() }
  await importCatalog(deps(), { opportunities: [other] })
  const before = (await h.store.getOpportunity(other.id))!
  await storeLegacy(other.id)
  expect((await h.get(`/v2/opportunities/?chainIds=mainnet`)).body.opportunities.map((o: Json) => o.id)).not.toContain(other.id)
  expect(await respellStoredChains(deps())).toBe(1)
  expect(await respellStoredChains(deps())).toBe(0)
  const after = (await h.store.getOpportunity(other.id))!
  expect(after).toEqual({ ...before, updatedAt: after.updatedAt })
  for (const chainId of ['mainnet', CAIP]) expect((await h.get(`/v2/opportunities/?chainIds=${chainId}`)).body.opportunities.map((o: Json) => o.id), chainId).toContain(other.id)
})
