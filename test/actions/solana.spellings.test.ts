/**
 * A Solana opportunity stored, and deposits built, under mainnet's CAIP-2 id before chain ids had one spelling: they
 * still verify by either spelling, the entry re-imports (and is then stored as `mainnet`), and the filter finds it.
 * LiteSVM stands in for mainnet behind a proxy that answers mainnet's genesis hash (a mock only of that one answer:
 * no public cluster can run here).
 */
import { afterAll, expect, test } from 'bun:test'
import { importCatalog } from '@earn/core'
import { solana } from '@earn/plugin-solana'
import { generateKeyPairSigner, getBase58Decoder, signBytes, type KeyPairSigner } from '@solana/kit'
import { deploySampleSolana, startSolana } from '../chains/solana.ts'
import { createHarness, type Json } from '../harness.ts'
import { localCatalog } from './localChain.ts'

const MAINNET_GENESIS = '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d'
const CAIP = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'

const chain = await startSolana()
const sample = await deploySampleSolana(chain)
const proxy = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(request) {
    const body = await request.text()
    const call = JSON.parse(body) as { id: number; method: string }
    if (call.method === 'getGenesisHash') return Response.json({ jsonrpc: '2.0', id: call.id, result: MAINNET_GENESIS })
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
  const agreement = await h.post('/v2/membership/agreement', { address: wallet.address, walletEcosystem: 'solana', url: 'https://app.example.com' }, { key: h.org.publishableKey })
  const signature = getBase58Decoder().decode(new Uint8Array(await signBytes(wallet.keyPair.privateKey, new TextEncoder().encode(agreement.body.message))))
  const created = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'solana', signature, nonce: agreement.body.nonce, distributorId: h.distributorId })
  expect(created.body).toEqual({ isMember: true, error: '' })
  await sample.fund(wallet.address, 1_000_000n)
  return wallet
}

test('an entry and a deposit stored under the CAIP-2 id verify by either spelling; a re-import stores the name', async () => {
  await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, { opportunities: [entry] })
  // What an earlier release stored for a catalog that named mainnet by its CAIP-2 id.
  const stored = (await h.store.getOpportunity(entry.id))!
  const legacy: Json = { ...(JSON.parse(stored.listing) as Json), chainId: CAIP }
  legacy.depositTokens = (legacy.depositTokens as Json[]).map((t) => ({ ...t, chainId: CAIP }))
  await h.store.upsertOpportunity({ ...stored, chainId: CAIP, listing: JSON.stringify(legacy) }, [sample.baseMint])

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

  // The same entry, as the file names it now: not "moved off its vault", and stored by name from here on.
  const again = await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, { opportunities: [entry] })
  expect(again.opportunities.map((o) => [o.result, o.chainFacts])).toEqual([['updated', 'read']])
  expect((await h.store.getOpportunity(entry.id))?.chainId).toBe('mainnet')
  for (const chainId of ['mainnet', CAIP]) expect((await h.get(`/v2/opportunities/?chainIds=${chainId}`)).body.total, chainId).toBe(1)
  // A deposit built before the re-import still verifies.
  expect((await h.get(`/v2/actions/verify?chainId=mainnet&txHash=${signature}`)).body.verified).toBe(true)
})
