/**
 * End to end on LiteSVM behind the JSON-RPC facade: a Solana wallet registers through Sign-In-With-
 * Solana, the API builds an SPL deposit as a base64 v0 transaction, the wallet signs it with its
 * key and sends it over JSON-RPC, and the chain shows the vault holding the deposit; verify finds
 * the memo's tag by the transaction signature. Then the balance preflight, and a withdrawal of
 * receipt tokens.
 *
 * The opportunity is the sample below, whose addresses `deploySampleSolana` derives from fixed seeds
 * on every fresh chain (as catalog/local.json's EVM entries are what a fresh anvil deploys). The
 * chain is `localnet`, the id the Solana plugin and its tests use for a local cluster.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { CatalogError, createStore, importCatalog } from '@earn/core'
import { solana } from '@earn/plugin-solana'
import {
  address,
  decompileTransactionMessage,
  generateKeyPairSigner,
  getBase58Decoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  signBytes,
  type KeyPairSigner,
} from '@solana/kit'
import { getAddMemoInstruction, LEGACY_MEMO_PROGRAM_ADDRESS_V3 } from '@solana-program/memo'
import { getTransferSolInstruction } from '@solana-program/system'
import { findAssociatedTokenPda, getTransferCheckedInstruction, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { localCatalog } from './localChain.ts'
import { DATABASE_URL, freshSchema } from '../services.ts'
import { deploySampleSolana, SAMPLE_SOLANA_DECIMALS, startSolana, type SampleSolana, type SolanaChain } from '../chains/solana.ts'
import { createHarness, expectEnvelope, type Harness, type Json } from '../harness.ts'

/** The sample catalog's Solana entry (catalog/local.json). */
export const SOLANA_SAMPLE_ENTRY = localCatalog('solana').opportunities[0]!

const CHAIN = 'localnet'

// Set up at load time, as the TON end-to-end test does: one chain and one server for the whole file.
const chain: SolanaChain = await startSolana()
const sample: SampleSolana = await deploySampleSolana(chain)
// The entry names what the seeds derive; a drift fails here, loudly.
if (
  SOLANA_SAMPLE_ENTRY.vaultAddress !== sample.vault ||
  SOLANA_SAMPLE_ENTRY.baseToken.address !== sample.baseMint ||
  SOLANA_SAMPLE_ENTRY.receiptToken.address !== sample.receiptMint
)
  throw new Error(`the Solana sample entry does not name what deploySampleSolana deploys (${sample.vault}, ${sample.baseMint}, ${sample.receiptMint})`)
const h: Harness = await createHarness({ clients: { solana: solana.connect({ SOLANA_RPC_URL: chain.url }) } })
afterAll(async () => {
  await h.close()
  await chain.stop()
})
const [imported] = (await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, { opportunities: [SOLANA_SAMPLE_ENTRY] }))
  .opportunities

test('the catalog import reads the Solana vault from the chain (tokens from the catalog, amounts from the chain)', () => {
  expect([imported?.chainFacts, imported?.note]).toEqual(['read', undefined])
})

test('an entry offering swap mode on Solana, which builds direct deposits only, is refused', async () => {
  const offered = { ...SOLANA_SAMPLE_ENTRY, id: crypto.randomUUID(), swapRouteEnabled: true }
  const e = await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, { opportunities: [offered] }).catch((e: CatalogError) => e)
  expect(e).toBeInstanceOf(CatalogError)
  expect((e as CatalogError).problems).toEqual([
    `opportunities[0] (${offered.id}): swapRouteEnabled: solana does not build swap deposits here (only "direct" is supported on Solana)`,
  ])
  expect(await h.store.getOpportunity(offered.id)).toBeUndefined()
})

const base58 = (bytes: Uint8Array) => getBase58Decoder().decode(bytes)

/** A wallet with SOL for fees, registered through the HTTP flow with a SIWS signature, as a dApp does. */
async function member(tusd: bigint): Promise<KeyPairSigner> {
  const wallet = await generateKeyPairSigner()
  await chain.airdrop(wallet.address, 1_000_000_000n)
  const agreement = await h.post(
    '/v2/membership/agreement',
    { address: wallet.address, walletEcosystem: 'solana', url: 'https://app.example.com/earn' },
    { key: h.org.publishableKey },
  )
  expect(agreement.status).toBe(200)
  // What `signMessage` does in a wallet: ed25519 over the UTF-8 bytes of the message, sent in base58.
  const signature = base58(new Uint8Array(await signBytes(wallet.keyPair.privateKey, new TextEncoder().encode(agreement.body.message))))
  const created = await h.post('/v2/membership/', {
    address: wallet.address,
    walletEcosystem: 'solana',
    signature,
    nonce: agreement.body.nonce,
    distributorId: h.distributorId,
  })
  expect(created.body).toEqual({ isMember: true, error: '' })
  if (tusd > 0n) await sample.fund(wallet.address, tusd)
  return wallet
}

describe('Solana: deposit, verify, withdraw through the API', () => {
  let user: KeyPairSigner
  let depositSignature: string
  let actionId: string

  test('the opportunity is listed with what the chain says', async () => {
    const r = await h.get(`/v2/opportunities/${SOLANA_SAMPLE_ENTRY.id}`)
    expect(r.status, r.text).toBe(200)
    expect(r.body.opportunity).toMatchObject({
      ecosystem: 'solana',
      chainId: CHAIN,
      vaultAddress: sample.vault,
      baseToken: { symbol: 'tUSD', address: sample.baseMint, decimals: 6 },
      receiptToken: { symbol: 'vtUSD', address: sample.receiptMint },
    })
  })

  test('a deposit built by the API, signed and sent by the wallet, moves the tokens to the vault', async () => {
    user = await member(1_000_000_000n)
    const amount = 250_000_000n
    const r = await h.post(`/v2/actions/deposit/${SOLANA_SAMPLE_ENTRY.id}`, {
      userAddress: user.address,
      tokenIn: sample.baseMint,
      amount: amount.toString(),
      distributorId: h.distributorId,
      referralCode: 'sol-launch',
    })
    expect(r.status, r.text).toBe(200)
    expect(r.body.transactions.map((t: Json) => t.type)).toEqual(['deposit'])
    const step = r.body.transactions[0] as Json
    expect(Object.keys(step.transaction)).toEqual(['serializedTransaction'])
    // Unsigned v0, the user as fee payer and only signer, the chain's latest blockhash.
    const unsigned = getTransactionDecoder().decode(getBase64Encoder().encode(step.transaction.serializedTransaction))
    const message = getCompiledTransactionMessageDecoder().decode(unsigned.messageBytes)
    expect([message.version, message.staticAccounts[0], message.header.numSignerAccounts]).toEqual([0, user.address, 1])
    expect(Object.values(unsigned.signatures)).toEqual([null])
    expect(message.lifetimeToken).toBe((await chain.rpc.getLatestBlockhash().send()).value.blockhash)
    actionId = r.body.actionId

    const before = { user: await chain.tokenBalance(sample.baseMint, user.address), vault: await chain.tokenBalance(sample.baseMint, sample.vault) }
    depositSignature = await chain.signAndSend(step.transaction.serializedTransaction, user)
    expect(await chain.tokenBalance(sample.baseMint, user.address)).toBe(before.user - amount)
    expect(await chain.tokenBalance(sample.baseMint, sample.vault)).toBe(before.vault + amount)
  })

  test('verify recognises the deposit by its signature', async () => {
    const r = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${depositSignature}`, { key: h.org.publishableKey })
    expect(r.status, r.text).toBe(200)
    expect(r.body).toEqual({
      tag: expect.stringMatching(new RegExp(`^earn:v1:${h.distributorId}:${actionId}:[0-9a-f]{32}$`)),
      verified: true,
      metadata: { distributorId: h.distributorId, actionId, opportunityId: SOLANA_SAMPLE_ENTRY.id, referralCode: 'sol-launch' },
    })
    // Recorded once, with what the wallet moved into the vault.
    const activity = await h.store.listDistributorActivity({ orgId: h.org.orgId, distributorId: h.distributorId, offset: 0, limit: 100 })
    expect(activity.rows.filter((row) => row.type === 'verify').map((row) => row.amount)).toEqual(['250000000'])
  })

  test('a CAIP-2 chain id (39 characters) is taken by verify: the action is bound to its own chain id; another cluster\'s is 503', async () => {
    // LiteSVM's genesis hash is 32 ones: this id names the same local cluster the action was built on as `localnet`.
    const local = `solana:${'1'.repeat(32)}`
    const r = await h.get(`/v2/actions/verify?chainId=${local}&txHash=${depositSignature}`)
    expect(r.status, r.text).toBe(200)
    expect(r.body).toMatchObject({ verified: false, metadata: { actionId } })
    // Mainnet's id: this server's RPC serves another cluster, so it cannot say.
    const mainnet = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'
    const other = await h.get(`/v2/actions/verify?chainId=${mainnet}&txHash=${depositSignature}`)
    expect(other.status, other.text).toBe(503)
    // Named as the server stores the chain: mainnet's CAIP-2 id is mainnet.
    expect(other.body).toMatchObject({ status: 'UNAVAILABLE', context: { chainId: 'mainnet' }, error: expect.stringContaining('serves Solana localnet') })
  })

  test("the wallet's own transaction carrying the deposit's tag but moving nothing to the vault is not verified", async () => {
    const { tag } = (await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${depositSignature}`)).body
    // The same memo, signed by the same wallet, on a transaction that only pays the faucet: no deposit happened.
    const memoOnly = await chain.send([getAddMemoInstruction({ memo: tag }), getTransferSolInstruction({ source: user, destination: chain.payer.address, amount: 1_000n })], user)
    const r = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${memoOnly}`)
    expect(r.status, r.text).toBe(200)
    expect(r.body).toMatchObject({ tag, verified: false, metadata: { actionId, opportunityId: SOLANA_SAMPLE_ENTRY.id } })
  })

  test('one transaction carrying the tags of two actions is a 400: what each moved cannot be told apart from balances, and the first must not be credited with both', async () => {
    const { tag } = (await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${depositSignature}`)).body
    const another = (tag as string).replace(actionId, crypto.randomUUID())
    const both = await chain.send(
      [getAddMemoInstruction({ memo: tag }), getAddMemoInstruction({ memo: another }), getTransferSolInstruction({ source: user, destination: chain.payer.address, amount: 1_000n })],
      user,
    )
    const r = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${both}`)
    expect(r.status, r.text).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(r.body.context).toEqual({ txHash: 'carries the tags of 2 actions' })
    // The same tag twice names one action: answered as ever.
    const twice = await chain.send(
      [getAddMemoInstruction({ memo: tag }), getAddMemoInstruction({ memo: tag }), getTransferSolInstruction({ source: user, destination: chain.payer.address, amount: 1_001n })],
      user,
    )
    expect((await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${twice}`)).body).toMatchObject({ tag, verified: false })
  })

  test("a deposit whose memo comes after another (a stream's funding tag) is still the action's: verified and recorded", async () => {
    const amount = 1_000_000n
    const r = await h.post(`/v2/actions/deposit/${SOLANA_SAMPLE_ENTRY.id}`, { userAddress: user.address, tokenIn: sample.baseMint, amount: amount.toString(), distributorId: h.distributorId })
    expect(r.status, r.text).toBe(200)
    // The built deposit's tag, read from its memo instruction.
    const unsigned = getTransactionDecoder().decode(getBase64Encoder().encode(r.body.transactions[0].transaction.serializedTransaction))
    const { instructions } = decompileTransactionMessage(getCompiledTransactionMessageDecoder().decode(unsigned.messageBytes))
    const memo = instructions.find((i) => i.programAddress === LEGACY_MEMO_PROGRAM_ADDRESS_V3)!
    const tag = new TextDecoder().decode(memo.data)
    const streamTag = `earn:v1:stream:${crypto.randomUUID()}:${'0'.repeat(32)}`
    const [source] = await findAssociatedTokenPda({ owner: address(user.address), mint: address(sample.baseMint), tokenProgram: TOKEN_PROGRAM_ADDRESS })
    const [destination] = await findAssociatedTokenPda({ owner: address(sample.vault), mint: address(sample.baseMint), tokenProgram: TOKEN_PROGRAM_ADDRESS })
    const sent = await chain.send(
      [
        getAddMemoInstruction({ memo: streamTag }),
        getAddMemoInstruction({ memo: tag }),
        getTransferCheckedInstruction({ source, mint: address(sample.baseMint), destination, authority: user, amount, decimals: SAMPLE_SOLANA_DECIMALS }),
      ],
      user,
    )
    const v = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${sent}`)
    expect(v.body).toMatchObject({ tag, verified: true, metadata: { actionId: r.body.actionId } })
    const activity = await h.store.listDistributorActivity({ orgId: h.org.orgId, distributorId: h.distributorId, offset: 0, limit: 100 })
    expect(activity.rows.filter((row) => row.type === 'verify' && row.txHash === sent).map((row) => row.amount)).toEqual([amount.toString()])
  })

  test('a memo tag whose ids no action could have (a NUL character, which PostgreSQL text refuses) is not verified, on both engines', async () => {
    const memo = `earn:v1:dist:act\u0000ion:${'a'.repeat(32)}`
    const signature = await chain.send([getAddMemoInstruction({ memo }), getTransferSolInstruction({ source: user, destination: chain.payer.address, amount: 1_000n })], user)
    const { schema, drop } = await freshSchema()
    const onPostgres = await createHarness({ store: createStore({ engine: 'postgres', url: DATABASE_URL, schema }), clients: { solana: solana.connect({ SOLANA_RPC_URL: chain.url }) } })
    try {
      for (const server of [h, onPostgres]) {
        const r = await server.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${signature}`)
        expect(r.status, r.text).toBe(200)
        expect(r.body).toEqual({ tag: memo, verified: false, metadata: { distributorId: 'dist', actionId: 'act\u0000ion', opportunityId: null } })
      }
    } finally {
      await onPostgres.close()
      await drop()
    }
  })

  test("a memo that is no tag of ours is answered as found on chain, control characters and all (a JSON field escapes them)", async () => {
    const memo = 'earn:v1:not\nours\u202e'
    const signature = await chain.send([getAddMemoInstruction({ memo }), getTransferSolInstruction({ source: user, destination: chain.payer.address, amount: 1_002n })], user)
    const r = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${signature}`)
    expect(r.body).toEqual({ tag: memo, verified: false, metadata: { distributorId: null, actionId: null, opportunityId: null } })
  })

  test('a deposit larger than the balance is 400 insufficient token balance', async () => {
    const held = await chain.tokenBalance(sample.baseMint, user.address)
    const r = await h.post(`/v2/actions/deposit/${SOLANA_SAMPLE_ENTRY.id}`, {
      userAddress: user.address,
      tokenIn: sample.baseMint,
      amount: (held + 1n).toString(),
      distributorId: h.distributorId,
    })
    expect(r.status).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(r.body.error).toBe('insufficient token balance')
    expect(r.body.context).toMatchObject({ required: (held + 1n).toString(), available: held.toString() })
  })

  test("tokens the wallet holds outside its associated account pass the balance check but are not spent: 400 naming that account", async () => {
    const held = await chain.tokenBalance(sample.baseMint, user.address)
    const second = await chain.createTokenAccount({ mint: sample.baseMint, owner: user.address })
    await chain.mintTo({ mint: sample.baseMint, owner: user.address, amount: 10_000n, account: second })
    const r = await h.post(`/v2/actions/deposit/${SOLANA_SAMPLE_ENTRY.id}`, {
      userAddress: user.address,
      tokenIn: sample.baseMint,
      amount: (held + 1n).toString(),
      distributorId: h.distributorId,
    })
    expect(r.status, r.text).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(r.body.error).toBe('insufficient token balance')
    expect(r.body.context).toMatchObject({ required: (held + 1n).toString(), available: held.toString() })
    const ata = (await findAssociatedTokenPda({ owner: address(user.address), mint: address(sample.baseMint), tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0]
    expect(r.body.context.source).toBe(ata)
  })

  test('short in all its accounts and shorter in the associated one: the 400 names the associated account, so one top-up there is enough', async () => {
    const wallet = await member(0n)
    // 600 in another account of the wallet, none in its associated account; 1,000 asked.
    const second = await chain.createTokenAccount({ mint: sample.baseMint, owner: wallet.address })
    await chain.mintTo({ mint: sample.baseMint, owner: wallet.address, amount: 600n, account: second })
    const ask = () => h.post(`/v2/actions/deposit/${SOLANA_SAMPLE_ENTRY.id}`, { userAddress: wallet.address, tokenIn: sample.baseMint, amount: '1000', distributorId: h.distributorId })
    const r = await ask()
    expect(r.status, r.text).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    const ata = (await findAssociatedTokenPda({ owner: address(wallet.address), mint: address(sample.baseMint), tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0]
    expect(r.body.context).toEqual({ required: '1000', available: '0', token: sample.baseMint, source: ata })
    await chain.mintTo({ mint: sample.baseMint, owner: wallet.address, amount: 1000n })
    expect((await ask()).status).toBe(200)
  })

  test('a withdrawal returns receipt tokens to the vault, and verifies', async () => {
    // The sample vault is operator-run: it issues receipt tokens for deposits; the harness mints them here.
    const shares = 250_000_000n
    await sample.issueReceipts(user.address, shares)
    const redeem = shares / 2n
    const short = await h.post(`/v2/actions/withdraw/${SOLANA_SAMPLE_ENTRY.id}`, {
      userAddress: user.address,
      amount: (shares + 1n).toString(),
      distributorId: h.distributorId,
    })
    expect([short.status, short.body.error]).toEqual([400, 'insufficient token balance'])
    const r = await h.post(`/v2/actions/withdraw/${SOLANA_SAMPLE_ENTRY.id}`, {
      userAddress: user.address,
      amount: redeem.toString(),
      distributorId: h.distributorId,
    })
    expect(r.status, r.text).toBe(200)
    expect(r.body.transactions.map((t: Json) => t.type)).toEqual(['withdraw'])
    const before = await chain.tokenBalance(sample.receiptMint, sample.vault)
    const signature = await chain.signAndSend(r.body.transactions[0].transaction.serializedTransaction, user)
    expect(await chain.tokenBalance(sample.receiptMint, user.address)).toBe(shares - redeem)
    expect(await chain.tokenBalance(sample.receiptMint, sample.vault)).toBe(before + redeem)
    const v = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${signature}`)
    expect(v.status, v.text).toBe(200)
    expect(v.body).toMatchObject({ verified: true, metadata: { actionId: r.body.actionId } })
  })

  test('verify: a transaction without a tag is 404; an unknown signature is 404; a malformed one is 400', async () => {
    const plain = await chain.send([getTransferSolInstruction({ source: user, destination: chain.payer.address, amount: 1_000n })], user)
    const cases: [string, number, string][] = [
      [plain, 404, 'NOT_FOUND'],
      [base58(new Uint8Array(64).fill(7)), 404, 'NOT_FOUND'],
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
