/**
 * A Solana or TON vault is a wallet, which may hold several products' tokens: two listed opportunities at one vault
 * wallet are two positions, each with its own receipt token, not one (an audit: keyed by the vault alone, the second
 * product's position, its tokens and its earnings row were left out of the portfolio).
 */
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { importCatalog, refreshCatalog } from '@earn/core'
import { solana } from '@earn/plugin-solana'
import { generateKeyPairSigner } from '@solana/kit'
import { toNano } from '@ton/core'
import { keyPairFromSeed } from '@ton/crypto'
import { randomBytes } from 'node:crypto'
import { localCatalog } from '../actions/localChain.ts'
import { registerSolana } from '../actions/members.ts'
import { deploySampleSolana, startSolana } from '../chains/solana.ts'
import { deploySampleTon, startTon } from '../chains/ton.ts'
import { createHarness, type Json } from '../harness.ts'

setDefaultTimeout(120_000)
const SOL = localCatalog('solana').opportunities[0]!
const TON = localCatalog('ton').opportunities[0]!
const schain = await startSolana()
const ssample = await deploySampleSolana(schain)
const tchain = await startTon()
const tsample = await deploySampleTon(tchain)
const h = await createHarness({ clients: { solana: solana.connect({ SOLANA_RPC_URL: schain.url }), ton: tchain.client } })
afterAll(async () => {
  await h.close()
  await schain.stop()
})
const deps = { store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }
await importCatalog(deps, { opportunities: [SOL, TON] })

const portfolio = async (address: string) => {
  const r = await h.get(`/v2/wallet/${address}/portfolio?includeProtocolTokens=true`, { key: h.org.publishableKey })
  expect(r.status, r.text).toBe(200)
  const wallet = r.body.portfolio.holdings.wallets[0]
  return {
    tokens: Object.fromEntries(wallet.tokens.map((t: Json) => [t.symbol, t.balance])),
    protocols: Object.fromEntries(wallet.protocols.map((p: Json) => [p.opportunityId, p.shares])),
    earnings: new Set(r.body.portfolio.productsEarnings.map((e: Json) => e.opportunityId)),
  }
}

test('Solana: a second product at the sample vault wallet is a position of its own, beside the sample', async () => {
  const [base, receipt] = [await schain.createMint({ decimals: 6 }), await schain.createMint({ decimals: 6 })]
  const other = { ...SOL, id: crypto.randomUUID(), name: 'X vault', baseToken: { symbol: 'X', address: base, decimals: 6 }, receiptToken: { symbol: 'vX', address: receipt }, depositTokens: [{ address: base, symbol: 'X', decimals: 6 }] }
  expect((await importCatalog(deps, { opportunities: [other] })).opportunities.map((o) => o.chainFacts)).toEqual(['read'])
  const user = await generateKeyPairSigner()
  await schain.airdrop(user.address, 1_000_000_000n)
  await registerSolana(h, user)
  await schain.mintTo({ mint: base, owner: user.address, amount: 3_000_000n })
  const built = await h.post(`/v2/actions/deposit/${other.id}`, { userAddress: user.address, tokenIn: base, amount: '1000000', distributorId: h.distributorId })
  expect(built.status, built.text).toBe(200)
  await schain.signAndSend(built.body.transactions[0].transaction.serializedTransaction, user)
  // What the vault's operator issues for each.
  await schain.mintTo({ mint: receipt, owner: user.address, amount: 1_000_000n })
  await ssample.issueReceipts(user.address, 2_000_000n)
  const p = await portfolio(user.address)
  expect(p.tokens).toMatchObject({ X: '2000000', vX: '1000000', vtUSD: '2000000' })
  expect(p.protocols).toEqual({ [other.id]: '1000000', [SOL.id]: '2000000' })
  expect(p.earnings).toEqual(new Set([other.id, SOL.id]))
})

test('TON: a second jetton pair at the sample vault wallet is a position of its own, beside the sample', async () => {
  const [base, receipt] = [await tchain.deployJetton({ decimals: 6 }), await tchain.deployJetton({ decimals: 6 })]
  const other = { ...TON, id: crypto.randomUUID(), name: 'J vault', baseToken: { symbol: 'J', address: base.toString(), decimals: 6 }, receiptToken: { symbol: 'vJ', address: receipt.toString() }, depositTokens: [{ address: base.toString(), symbol: 'J', decimals: 6 }] }
  expect((await importCatalog(deps, { opportunities: [other] })).opportunities.map((o) => o.chainFacts)).toEqual(['read'])
  const wallet = await tchain.deployWallet('v4r2', keyPairFromSeed(randomBytes(32)), toNano('1'))
  await tchain.mintJetton(receipt, wallet.address, 5_000_000n)
  await tchain.mintJetton(tsample.receiptToken, wallet.address, 4_000_000n)
  const p = await portfolio(wallet.address.toRawString())
  expect(p.tokens).toMatchObject({ vJ: '5000000', vtUSD: '4000000' })
  expect(p.protocols).toEqual({ [other.id]: '5000000', [TON.id]: '4000000' })
})

test('a receipt token of other decimals than the base token is refused at import (one receipt unit is valued one base unit)', async () => {
  const [base, receipt] = [await schain.createMint({ decimals: 6 }), await schain.createMint({ decimals: 9 })]
  const solEntry = { ...SOL, id: crypto.randomUUID(), name: 'Nine', baseToken: { symbol: 'X', address: base, decimals: 6 }, receiptToken: { symbol: 'v9', address: receipt }, depositTokens: [{ address: base, symbol: 'X', decimals: 6 }] }
  await expect(importCatalog(deps, { opportunities: [solEntry] })).rejects.toMatchObject({
    problems: [`opportunities[0] (${solEntry.id}): receiptToken: receiptToken has 9 decimals and the base token 6: this ecosystem's vaults issue one receipt unit per base unit, so both must have the same decimals`],
  })
  const [jBase, jReceipt] = [await tchain.deployJetton({ decimals: 6 }), await tchain.deployJetton({ decimals: 9 })]
  const tonEntry = { ...TON, id: crypto.randomUUID(), name: 'Nine', baseToken: { symbol: 'J', address: jBase.toString(), decimals: 6 }, receiptToken: { symbol: 'v9', address: jReceipt.toString() }, depositTokens: [{ address: jBase.toString(), symbol: 'J', decimals: 6 }] }
  await expect(importCatalog(deps, { opportunities: [tonEntry] })).rejects.toMatchObject({ problems: [expect.stringContaining('receiptToken: receiptToken has 9 decimals and the base token 6')] })
  // A jetton whose metadata states no decimals takes the file's: checked as well, receipt or base (a re-audit).
  const [stated, unstated] = [await tchain.deployJetton({ decimals: 6 }), await tchain.deployJetton({})]
  const fileReceipt = { ...tonEntry, id: crypto.randomUUID(), baseToken: { symbol: 'J', address: stated.toString(), decimals: 6 }, receiptToken: { symbol: 'v9', address: unstated.toString(), decimals: 9 }, depositTokens: [{ address: stated.toString(), symbol: 'J', decimals: 6 }] }
  const [unstatedBase, nine] = [await tchain.deployJetton({}), await tchain.deployJetton({ decimals: 9 })]
  const fileBase = { ...tonEntry, id: crypto.randomUUID(), baseToken: { symbol: 'K', address: unstatedBase.toString(), decimals: 6 }, receiptToken: { symbol: 'v9', address: nine.toString() }, depositTokens: [{ address: unstatedBase.toString(), symbol: 'K', decimals: 6 }] }
  for (const entry of [fileReceipt, fileBase])
    await expect(importCatalog(deps, { opportunities: [entry] })).rejects.toMatchObject({ problems: [expect.stringContaining('receiptToken: receiptToken has 9 decimals and the base token 6')] })
})

test('an entry stored before that check (an earlier release) is taken off the API by the next refresh, not served valued wrong', async () => {
  const [base, six, nine] = [await schain.createMint({ decimals: 6 }), await schain.createMint({ decimals: 6 }), await schain.createMint({ decimals: 9 })]
  const entry = { ...SOL, id: crypto.randomUUID(), name: 'Earlier', vaultAddress: (await generateKeyPairSigner()).address, baseToken: { symbol: 'C', address: base, decimals: 6 }, receiptToken: { symbol: 'vC', address: six }, depositTokens: [{ address: base, symbol: 'C', decimals: 6 }] }
  await importCatalog(deps, { opportunities: [entry] })
  // As an earlier release stored it: under the 9-decimal receipt mint.
  const row = (await h.store.getOpportunity(entry.id))!
  const listing = { ...JSON.parse(row.listing), receiptToken: { symbol: 'vC', address: nine } }
  const facts = { ...JSON.parse(row.chainFacts!), receiptToken: nine, receiptDecimals: 9 }
  await h.store.upsertOpportunity({ ...row, listing: JSON.stringify(listing), chainFacts: JSON.stringify(facts) }, [base])
  expect((await h.get(`/v2/opportunities/${entry.id}`)).status).toBe(200)
  const logged: Record<string, unknown>[] = []
  await refreshCatalog({ ...deps, logger: { info() {}, error: (f) => logged.push(f) } })
  expect(logged).toContainEqual(expect.objectContaining({ msg: 'catalog entry whose receipts cannot be valued; taken off the API', opportunityId: entry.id }))
  expect((await h.get(`/v2/opportunities/${entry.id}`)).status).toBe(404)
  expect((await h.store.getOpportunity(entry.id))?.chainFacts).toBeNull()
})
