/**
 * End to end on the TON sandbox: a TON wallet registers through `ton_proof`, the API builds a jetton
 * deposit as a TON Connect request, the wallet contract (v5r1, real key pair) sends exactly its
 * messages, and the chain shows the vault holding the deposit; verify finds the tag by the wallet
 * transaction's hash. Then the balance preflight, and a withdrawal of receipt jettons.
 *
 * The opportunity is the sample below, whose addresses `deploySampleTon` makes on every fresh sandbox
 * (as catalog/local.json's EVM entries are what a fresh anvil deploys). The sandbox stands in for
 * mainnet's API, so the entry is on chain -239.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { importCatalog, refreshCatalog } from '@earn/core'
import { commentCell, connectTon, jettonTransferBody, parseJettonTransfer, readTonBalance, type TonConnectRequest } from '@earn/plugin-ton'
import { type Address, Cell, external, internal, SendMode, toNano, type Transaction } from '@ton/core'
import { WalletContractV4, WalletContractV5R1 } from '@ton/ton'
import { keyPairFromSeed, type KeyPair } from '@ton/crypto'
import { randomBytes } from 'node:crypto'
import { localCatalog } from './localChain.ts'
import { closedPortUrl } from '../chains/evm.ts'
import { deploySampleTon, SAMPLE_TON, signTonProof, startTon, type SampleTon, type TonSandbox, type TonWallet } from '../chains/ton.ts'
import { createHarness, expectEnvelope, type Harness, type Json } from '../harness.ts'

/** The sample catalog's TON entry (catalog/local.json). */
const TON_SAMPLE_ENTRY = localCatalog('ton').opportunities[0]!

const CHAIN = '-239'

const chain: TonSandbox = await startTon()
const sample: SampleTon = await deploySampleTon(chain)
// The entry names what a fresh sandbox deploys; a drift fails here, loudly.
if (
  TON_SAMPLE_ENTRY.vaultAddress !== sample.vault.address.toString() ||
  TON_SAMPLE_ENTRY.baseToken.address !== sample.baseToken.toString() ||
  TON_SAMPLE_ENTRY.receiptToken.address !== sample.receiptToken.toString()
)
  throw new Error(`the TON sample entry does not name what deploySampleTon deploys (${sample.vault.address}, ${sample.baseToken}, ${sample.receiptToken})`)
const h: Harness = await createHarness({ clients: { ton: chain.client } })
afterAll(() => h.close())
const [imported] = (await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, { opportunities: [TON_SAMPLE_ENTRY] })).opportunities

test('the catalog import reads the TON vault from the chain (its tokens from the catalog)', async () => {
  expect([imported?.chainFacts, imported?.note]).toEqual(['read', undefined])
})

test("a jetton whose metadata is off chain states no decimals: the catalog's are taken (a 6-decimal one is listed in its own scale)", async () => {
  const offChain = await chain.deployJetton() // a URI only, as bridged stablecoins often have
  const vault = await chain.deployWallet('v4r2', keyPairFromSeed(randomBytes(32)), toNano('1'))
  await chain.mintJetton(offChain, vault.address, 2_500_000n) // 2.5 of a 6-decimal token
  const receipt = await chain.deployJetton()
  const address = offChain.toString()
  const entry = (id: string, decimals: number | undefined) => ({
    ...TON_SAMPLE_ENTRY,
    id,
    vaultAddress: vault.address.toString(),
    baseToken: { symbol: 'bUSD', address, ...(decimals === undefined ? {} : { decimals }) },
    receiptToken: { symbol: 'vbUSD', address: receipt.toString() },
    depositTokens: [{ address, symbol: 'bUSD', decimals: 6 }],
    baseTokenPriceUsd: 2,
  })
  const ids = [crypto.randomUUID(), crypto.randomUUID()]
  // The base token's decimals from `baseToken`, else from its deposit token entry.
  const result = await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, { opportunities: [entry(ids[0]!, 6), entry(ids[1]!, undefined)] })
  expect(result.opportunities.map((o) => [o.chainFacts, o.note])).toEqual([['read', undefined], ['read', undefined]])
  for (const id of ids) {
    const r = await h.get(`/v2/opportunities/${id}`)
    expect(r.status, r.text).toBe(200)
    expect(r.body.opportunity).toMatchObject({ baseToken: { decimals: 6 }, tvl: 5 })
  }
  // A file giving two scales for it is refused, told as the file's own disagreement (the chain said nothing).
  const twoScales = { ...entry(crypto.randomUUID(), 6), depositTokens: [{ address, symbol: 'bUSD', decimals: 9 }] }
  const refused = await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, { opportunities: [twoScales] }).catch((e: unknown) => e)
  expect((refused as { problems?: string[] }).problems).toEqual([
    `opportunities[0] (${twoScales.id}): depositTokens[0].decimals: the file says 9 for the vault's asset ${offChain.toRawString()}, and 6 elsewhere (the chain states none; give one)`,
  ])
})

test("another vault under a listed opportunity's receipt jetton is refused: a wallet's balance of it would be a position in both", async () => {
  const deps = { store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }
  const vaults = await Promise.all([1, 2].map(() => chain.deployWallet('v4r2', keyPairFromSeed(randomBytes(32)), toNano('1'))))
  const at = (vault: TonWallet, receipt = TON_SAMPLE_ENTRY.receiptToken.address) => ({
    ...TON_SAMPLE_ENTRY,
    id: crypto.randomUUID(),
    vaultAddress: vault.address.toString(),
    receiptToken: { ...TON_SAMPLE_ENTRY.receiptToken, address: receipt },
  })
  const problem = (i: number, id: string, holder: string, holderVault: Address) =>
    `opportunities[${i}] (${id}): receiptToken: ${sample.receiptToken.toRawString()} is already the receipt token of opportunity ${holder}, another vault (${holderVault.toRawString()}); ` +
    "a wallet's balance of it would count as a position in both, and withdrawals would send it to a vault that did not issue it"
  // The sample's receipt jetton, stored for the sample's vault.
  const first = at(vaults[0]!)
  const refused = await importCatalog(deps, { opportunities: [first] }).catch((e: unknown) => e)
  expect((refused as { problems?: string[] }).problems).toEqual([problem(0, first.id, TON_SAMPLE_ENTRY.id, sample.vault.address)])
  // Within one file too: the second entry names the first one's.
  const fresh = (await chain.deployJetton()).toString()
  const [a, b] = [at(vaults[0]!, fresh), at(vaults[1]!, fresh)]
  const twice = await importCatalog(deps, { opportunities: [a, b] }).catch((e: unknown) => e)
  expect((twice as { problems?: string[] }).problems).toHaveLength(1)
  expect((twice as { problems: string[] }).problems[0]).toStartWith(`opportunities[1] (${b.id}): receiptToken: `)
  expect((twice as { problems: string[] }).problems[0]).toContain(`receipt token of opportunity ${a.id}, another vault`)
  // One vault under two ids stays one position, and is taken.
  expect((await importCatalog(deps, { opportunities: [a, { ...a, id: crypto.randomUUID() }] })).opportunities.map((o) => o.result)).toEqual(['created', 'created'])

  // Imported where TON does not answer (kept pending): checked by the receipt token the file names.
  const offline = await createHarness({ store: h.store, clients: { ton: connectTon({ TON_API_URL: `${await closedPortUrl()}/api/v2/jsonRPC` }) } })
  const pending = at(vaults[1]!)
  const refusedOffline = await importCatalog({ ...deps, ecosystems: offline.deps.ecosystems }, { opportunities: [pending] }).catch((e: unknown) => e)
  expect((refusedOffline as { problems?: string[] }).problems).toEqual([problem(0, pending.id, TON_SAMPLE_ENTRY.id, sample.vault.address)])
  // One stored all the same, served with facts under the sample's receipt jetton (an earlier release's import or
  // refresh): a refresh takes its facts away, so it is no longer served, and the sample's entry stays.
  const sampleRow = (await h.store.getOpportunity(TON_SAMPLE_ENTRY.id))!
  const vault = vaults[1]!.address.toRawString()
  const stored = { ...sampleRow, id: pending.id, vaultAddress: vault, listing: JSON.stringify({ ...JSON.parse(sampleRow.listing), id: pending.id, vaultAddress: vault }), createdAt: sampleRow.createdAt + 1 }
  await h.store.upsertOpportunity(stored, [sample.baseToken.toRawString()])
  expect((await h.get(`/v2/opportunities/${pending.id}`)).status).toBe(200)
  const logged: unknown[] = []
  await refreshCatalog({ ...deps, logger: { info: () => {}, error: (l: unknown) => logged.push(l) } })
  const after = (await h.store.getOpportunity(pending.id))!
  expect([after.chainFacts, after.refreshedAt, after.refreshError]).toEqual([null, null, expect.stringContaining(`is already the receipt token of opportunity ${TON_SAMPLE_ENTRY.id}`)])
  expect((await h.get(`/v2/opportunities/${pending.id}`)).status).toBe(404)
  expect((await h.get(`/v2/opportunities/${TON_SAMPLE_ENTRY.id}`)).status).toBe(200)
  await h.store.setOpportunityDelisted(pending.id, true, h.deps.clock.now())
})

const balance = (owner: Address, token: Address) =>
  readTonBalance(chain.client, { chainId: CHAIN, owner: owner.toRawString(), token: token.toRawString() })

/** A v5r1 wallet with TON for fees, registered through the HTTP flow with a `ton_proof`, as a TON Connect dApp does. */
async function member(tusd: bigint): Promise<{ wallet: TonWallet; keyPair: KeyPair }> {
  const keyPair = keyPairFromSeed(randomBytes(32))
  const wallet = await chain.deployWallet('v5r1', keyPair, toNano('3'))
  const address = wallet.address.toString({ bounceable: false })
  const agreement = await h.post('/v2/membership/agreement', { address, walletEcosystem: 'ton', url: 'https://app.example.com/earn' }, { key: h.org.publishableKey })
  expect(agreement.status).toBe(200)
  const signature = signTonProof({ keyPair, address: wallet.address, domain: 'app.example.com', payload: agreement.body.message, stateInit: wallet.init })
  const created = await h.post('/v2/membership/', { address, walletEcosystem: 'ton', signature, nonce: agreement.body.nonce, distributorId: h.distributorId })
  expect(created.body).toEqual({ isMember: true, error: '' })
  if (tusd > 0n) await chain.mintJetton(sample.baseToken, wallet.address, tusd)
  return { wallet, keyPair }
}

describe('TON: deposit, verify, withdraw through the API', () => {
  let user: { wallet: TonWallet; keyPair: KeyPair }
  let depositHash: string
  let actionId: string

  test('the opportunity is listed with what the chain says', async () => {
    const r = await h.get(`/v2/opportunities/${TON_SAMPLE_ENTRY.id}`)
    expect(r.status, r.text).toBe(200)
    expect(r.body.opportunity).toMatchObject({ ecosystem: 'ton', chainId: CHAIN, baseToken: { symbol: 'tUSD', decimals: 6 } })
    // Contracts in their bounceable form (TEP-2): TON an integrator sends to the listed vault comes back if it fails.
    const bounceable = (a: Address) => a.toString({ bounceable: true, urlSafe: true })
    expect(r.body.opportunity.vaultAddress).toBe(bounceable(sample.vault.address))
    expect(r.body.opportunity.vaultAddress).toStartWith('EQ')
    expect(r.body.opportunity.baseToken.address).toBe(bounceable(sample.baseToken))
    expect(r.body.opportunity.receiptToken.address).toBe(bounceable(sample.receiptToken))
  })

  test('a deposit built by the API and sent by the wallet moves the jettons to the vault', async () => {
    user = await member(1_000_000_000n)
    const amount = 250_000_000n
    const r = await h.post(`/v2/actions/deposit/${TON_SAMPLE_ENTRY.id}`, {
      userAddress: user.wallet.address.toString({ bounceable: false }),
      tokenIn: TON_SAMPLE_ENTRY.baseToken.address,
      amount: amount.toString(),
      distributorId: h.distributorId,
      referralCode: 'ton-launch',
    })
    expect(r.status, r.text).toBe(200)
    expect(r.body.transactions.map((t: Json) => t.type)).toEqual(['deposit'])
    const request = r.body.transactions[0].transaction as TonConnectRequest
    expect(request).toMatchObject({ network: CHAIN, from: user.wallet.address.toRawString(), messages: [{ amount: toNano('0.1').toString() }] })
    expect(request.validUntil).toBeGreaterThan(Math.floor(Date.now() / 1000))
    actionId = r.body.actionId

    const before = { user: await balance(user.wallet.address, sample.baseToken), vault: await balance(sample.vault.address, sample.baseToken) }
    const sent = await chain.sendTonConnect(user.wallet, user.keyPair, request)
    expect(await balance(user.wallet.address, sample.baseToken)).toBe(before.user - amount)
    expect(await balance(sample.vault.address, sample.baseToken)).toBe(before.vault + amount)
    depositHash = sent.hash
  })

  test('verify recognises the deposit by the wallet transaction hash', async () => {
    const r = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${depositHash}`, { key: h.org.publishableKey })
    expect(r.status, r.text).toBe(200)
    expect(r.body).toEqual({
      tag: expect.stringMatching(new RegExp(`^earn:v1:${h.distributorId}:${actionId}:[0-9a-f]{32}$`)),
      verified: true,
      metadata: { distributorId: h.distributorId, actionId, opportunityId: TON_SAMPLE_ENTRY.id, referralCode: 'ton-launch' },
    })
    // Recorded once, with what the wallet moved into the vault.
    const activity = await h.store.listDistributorActivity({ orgId: h.org.orgId, distributorId: h.distributorId, offset: 0, limit: 100 })
    expect(activity.rows.filter((row) => row.type === 'verify').map((row) => row.amount)).toEqual(['250000000'])
    // The same transaction named in base64, as toncenter shows it.
    const base64 = encodeURIComponent(Buffer.from(depositHash, 'hex').toString('base64'))
    expect((await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${base64}`)).body.verified).toBe(true)
  })

  test("a gasless deposit (a W5 wallet's owner-signed request carried in by a relayer's internal message) verifies; the relayer's own message does not", async () => {
    const r = await h.post(`/v2/actions/deposit/${TON_SAMPLE_ENTRY.id}`, { userAddress: user.wallet.address.toRawString(), tokenIn: TON_SAMPLE_ENTRY.baseToken.address, amount: '70000', distributorId: h.distributorId })
    expect(r.status, r.text).toBe(200)
    const request = r.body.transactions[0].transaction as TonConnectRequest
    const w5 = chain.blockchain.openContract(WalletContractV5R1.create({ publicKey: user.keyPair.publicKey }))
    const messages = request.messages.map((m) => internal({ to: m.address, value: BigInt(m.amount), bounce: true, body: Cell.fromBase64(m.payload!) }))
    const signed = w5.createTransfer({ seqno: await w5.getSeqno(), secretKey: user.keyPair.secretKey, authType: 'internal', sendMode: SendMode.PAY_GAS_SEPARATELY | SendMode.IGNORE_ERRORS, timeout: request.validUntil, messages })
    const walletTx = (result: { transactions: readonly Transaction[] }) =>
      result.transactions.find((tx) => tx.inMessage?.info.type === 'internal' && tx.inMessage.info.dest.equals(user.wallet.address))!.hash().toString('hex')
    const vault = await balance(sample.vault.address, sample.baseToken)
    const relayed = walletTx(chain.record(await chain.treasury.send({ to: user.wallet.address, value: toNano('0.2'), body: signed, bounce: true })))
    expect(await balance(sample.vault.address, sample.baseToken)).toBe(vault + 70_000n)
    const v = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${relayed}`)
    expect(v.status, v.text).toBe(200)
    expect(v.body).toMatchObject({ verified: true, metadata: { actionId: r.body.actionId } })
    // The tag in an internal message the owner did not sign: the wallet sends nothing for it, so there is no tag.
    const { tag } = v.body
    const unsigned = walletTx(chain.record(await chain.treasury.send({ to: user.wallet.address, value: toNano('0.2'), body: commentCell(tag), bounce: true })))
    expect((await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${unsigned}`)).status).toBe(404)
  })

  test('two deposits sent in one request: each is recorded with what its own message moved', async () => {
    const deposit = async (amount: bigint) => {
      const r = await h.post(`/v2/actions/deposit/${TON_SAMPLE_ENTRY.id}`, { userAddress: user.wallet.address.toRawString(), tokenIn: TON_SAMPLE_ENTRY.baseToken.address, amount: amount.toString(), distributorId: h.distributorId })
      expect(r.status, r.text).toBe(200)
      return { actionId: r.body.actionId as string, request: r.body.transactions[0].transaction as TonConnectRequest }
    }
    const [a, b] = [await deposit(100_000n), await deposit(200_000n)]
    const vault = await balance(sample.vault.address, sample.baseToken)
    const sent = await chain.sendTonConnect(user.wallet, user.keyPair, { ...a.request, messages: [...a.request.messages, ...b.request.messages] })
    expect(await balance(sample.vault.address, sample.baseToken)).toBe(vault + 300_000n)
    const r = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${sent.hash}`)
    expect(r.body).toMatchObject({ verified: true, metadata: { actionId: a.actionId } })
    // Both recorded, each with its own 100000 and 200000 (the first had been credited with 300000, the second never).
    const activity = await h.store.listDistributorActivity({ orgId: h.org.orgId, distributorId: h.distributorId, offset: 0, limit: 100 })
    expect(activity.rows.filter((row) => row.type === 'verify' && row.txHash === sent.hash).map((row) => row.amount).sort()).toEqual(['100000', '200000'])
  })

  test('two deposits in one request that both bounced (more than the balance) are answered false, each told apart as ever', async () => {
    const deposit = async () => {
      const r = await h.post(`/v2/actions/deposit/${TON_SAMPLE_ENTRY.id}`, { userAddress: user.wallet.address.toRawString(), tokenIn: TON_SAMPLE_ENTRY.baseToken.address, amount: '1000', distributorId: h.distributorId })
      expect(r.status, r.text).toBe(200)
      const message = (r.body.transactions[0].transaction as TonConnectRequest).messages[0]!
      // The built transfer, its amount raised past the balance after the build's own check: the jetton wallet refuses it.
      const transfer = parseJettonTransfer(Cell.fromBase64(message.payload!))!
      return { ...message, payload: jettonTransferBody({ ...transfer, amount: 10n ** 30n }).toBoc().toString('base64') }
    }
    const messages = [await deposit(), await deposit()]
    const sent = await chain.sendTonConnect(user.wallet, user.keyPair, { validUntil: Math.floor(Date.now() / 1000) + 60, network: CHAIN, from: user.wallet.address.toRawString(), messages })
    const r = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${sent.hash}`)
    expect(r.status, r.text).toBe(200)
    expect(r.body.verified).toBe(false)
  })

  test("the wallet's own transaction carrying the deposit's tag but moving nothing to the vault is not verified", async () => {
    const { tag } = (await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${depositHash}`)).body
    // The same comment, signed by the same wallet, on a plain TON transfer to another wallet: no deposit happened.
    const elsewhere = await chain.deployWallet('v5r1', keyPairFromSeed(randomBytes(32)), toNano('1'))
    const request: TonConnectRequest = {
      network: CHAIN,
      from: user.wallet.address.toRawString(),
      validUntil: Math.floor(Date.now() / 1000) + 300,
      messages: [{ address: elsewhere.address.toString(), amount: toNano('0.01').toString(), payload: commentCell(tag).toBoc().toString('base64') }],
    }
    const sent = await chain.sendTonConnect(user.wallet, user.keyPair, request)
    const r = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${sent.hash}`)
    expect(r.status, r.text).toBe(200)
    expect(r.body).toMatchObject({ tag, verified: false, metadata: { actionId, opportunityId: TON_SAMPLE_ENTRY.id } })
  })

  test("a masterchain wallet's transaction carrying a copied tag is answered false, not refused for its sender's workchain", async () => {
    const { tag } = (await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${depositHash}`)).body
    const keys = keyPairFromSeed(randomBytes(32))
    const contract = WalletContractV4.create({ workchain: -1, publicKey: keys.publicKey })
    chain.record(await chain.treasury.send({ to: contract.address, value: toNano('10'), init: contract.init, bounce: false }))
    const transfer = contract.createTransfer({
      seqno: await chain.blockchain.openContract(contract).getSeqno(),
      secretKey: keys.secretKey,
      sendMode: SendMode.PAY_GAS_SEPARATELY | SendMode.IGNORE_ERRORS,
      messages: [internal({ to: sample.vault.address, value: toNano('0.1'), bounce: true, body: commentCell(tag) })],
    })
    const sent = chain.record(await chain.blockchain.sendMessage(external({ to: contract.address, body: transfer })))
    const r = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${sent.transactions[0]!.hash().toString('hex')}`)
    expect(r.status, r.text).toBe(200)
    expect(r.body).toMatchObject({ tag, verified: false, metadata: { actionId } })
  })

  test('a deposit larger than the balance is 400 insufficient token balance', async () => {
    const held = await balance(user.wallet.address, sample.baseToken)
    const r = await h.post(`/v2/actions/deposit/${TON_SAMPLE_ENTRY.id}`, {
      userAddress: user.wallet.address.toRawString(),
      tokenIn: TON_SAMPLE_ENTRY.baseToken.address,
      amount: (held + 1n).toString(),
      distributorId: h.distributorId,
    })
    expect(r.status).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(r.body.error).toBe('insufficient token balance')
    expect(r.body.context).toMatchObject({ required: (held + 1n).toString(), available: held.toString() })
  })

  test('a withdrawal returns receipt jettons to the vault, and verifies', async () => {
    // The sample vault is operator-run: it issues receipt jettons for deposits; the treasury mints them here.
    const shares = 250_000_000n
    await chain.mintJetton(sample.receiptToken, user.wallet.address, shares)
    const redeem = shares / 2n
    const r = await h.post(`/v2/actions/withdraw/${TON_SAMPLE_ENTRY.id}`, {
      userAddress: user.wallet.address.toString(),
      amount: redeem.toString(),
      distributorId: h.distributorId,
    })
    expect(r.status, r.text).toBe(200)
    expect(r.body.transactions.map((t: Json) => t.type)).toEqual(['withdraw'])
    const before = await balance(sample.vault.address, sample.receiptToken)
    const sent = await chain.sendTonConnect(user.wallet, user.keyPair, r.body.transactions[0].transaction)
    expect(await balance(user.wallet.address, sample.receiptToken)).toBe(shares - redeem)
    expect(await balance(sample.vault.address, sample.receiptToken)).toBe(before + redeem)
    const v = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${sent.hash}`)
    expect(v.body).toMatchObject({ verified: true, metadata: { actionId: r.body.actionId } })
  })

  test('verify: a wallet transaction without a tag is 404; an unknown hash is 404; a malformed one is 400', async () => {
    const plain = await chain.sendTonConnect(user.wallet, user.keyPair, {
      validUntil: Math.floor(Date.now() / 1000) + 60,
      network: CHAIN,
      from: user.wallet.address.toRawString(),
      messages: [{ address: sample.vault.address.toString(), amount: toNano('0.01').toString() }],
    })
    const cases: [string, number, string][] = [
      [plain.hash, 404, 'NOT_FOUND'],
      ['ab'.repeat(32), 404, 'NOT_FOUND'],
      ['0x1234', 400, 'INVALID_ARGUMENT'],
    ]
    for (const [txHash, code, status] of cases) {
      const r = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${txHash}`, { key: h.org.publishableKey })
      expect(r.status, txHash).toBe(code)
      expectEnvelope(r.body, code, status)
      expect(r.body.context).toHaveProperty('txHash')
    }
  })
})

describe('TON: a native TON vault', () => {
  const id = crypto.randomUUID()
  test("the 400 for a short wallet says the whole of what it needs: a client topping up to `required` is then served; under the least TON a message may carry, no top-up is asked for", async () => {
    const vault = await chain.deployWallet('v4r2', keyPairFromSeed(randomBytes(32)), toNano('1'))
    const receipt = await chain.deployJetton({ decimals: 9 })
    const native = { symbol: 'TON', address: 'native', decimals: 9 }
    const deps = { store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }
    const entry = { ...TON_SAMPLE_ENTRY, id, vaultAddress: vault.address.toString(), baseToken: native, receiptToken: { symbol: 'R', address: receipt.toString() }, depositTokens: [native] }
    expect((await importCatalog(deps, { opportunities: [entry] })).opportunities.map((o) => o.chainFacts)).toEqual(['read'])
    const { wallet } = await member(0n)
    const account = await chain.blockchain.getContract(wallet.address)
    const ask = (amount: bigint) =>
      h.post(`/v2/actions/deposit/${id}`, { userAddress: wallet.address.toRawString(), tokenIn: 'native', amount: amount.toString(), distributorId: h.distributorId })

    // Short of the amount itself: told the amount and the fees kept beside it, not the amount alone.
    account.balance = toNano('1')
    const short = await ask(toNano('2'))
    expect(short.status, short.text).toBe(400)
    expectEnvelope(short.body, 400, 'INVALID_ARGUMENT')
    expect(short.body.context).toEqual({
      required: (toNano('2') + toNano('0.01')).toString(),
      available: toNano('1').toString(),
      token: 'native',
      covers: "the 2 TON deposited, and 0.01 TON kept for the wallet's fees",
    })
    account.balance = BigInt(short.body.context.required)
    const built = await ask(toNano('2'))
    expect(built.status, built.text).toBe(200)

    // Under 0.01 TON, whatever the balance: the amount is named, not a top-up.
    account.balance = 0n
    const dust = await ask(1n)
    expect(dust.status, dust.text).toBe(400)
    expectEnvelope(dust.body, 400, 'INVALID_ARGUMENT')
    expect(dust.body.context).toEqual({ amount: 'must be at least 10000000 (0.01 TON)' })
    account.balance = toNano('1')
  })
})
