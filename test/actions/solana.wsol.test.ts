/**
 * Verify on a wrapped-SOL vault (LiteSVM). Balances say wrapped SOL moved where no one paid it: `SyncNative` counts
 * in lamports sent to a token account earlier, and a wallet closing its own wrapped-SOL account loses tokens that
 * come back to it as SOL. Read together, they had made a deposit the wallet never made verify.
 */
import { afterAll, expect, test } from 'bun:test'
import { importCatalog } from '@earn/core'
import { solana } from '@earn/plugin-solana'
import { address, decompileTransactionMessage, generateKeyPairSigner, getBase58Decoder, getBase64Encoder, getCompiledTransactionMessageDecoder, getTransactionDecoder, lamports, signBytes, type Address, type KeyPairSigner } from '@solana/kit'
import { getAddMemoInstruction } from '@solana-program/memo'
import { getTransferSolInstruction } from '@solana-program/system'
import { findAssociatedTokenPda, getCloseAccountInstruction, getCreateAssociatedTokenIdempotentInstruction, getMintEncoder, getSyncNativeInstruction, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { localCatalog } from './localChain.ts'
import { startSolana } from '../chains/solana.ts'
import { createHarness } from '../harness.ts'

const CHAIN = 'localnet'
const WSOL = address('So11111111111111111111111111111111111111112')
const chain = await startSolana()
// The native mint, as every cluster has it (LiteSVM starts without one).
const mint = new Uint8Array(getMintEncoder().encode({ mintAuthority: null, supply: 0n, decimals: 9, isInitialized: true, freezeAuthority: null }))
chain.svm.setAccount({ address: WSOL, data: mint, executable: false, lamports: lamports(chain.svm.minimumBalanceForRentExemption(BigInt(mint.length))), programAddress: TOKEN_PROGRAM_ADDRESS, space: BigInt(mint.length) })
const h = await createHarness({ clients: { solana: solana.connect({ SOLANA_RPC_URL: chain.url }) } })
afterAll(async () => {
  await h.close()
  await chain.stop()
})

const wsolAccount = async (owner: string) => (await findAssociatedTokenPda({ owner: address(owner), mint: WSOL, tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0]
const vault = await generateKeyPairSigner()
const vaultAccount = await wsolAccount(vault.address)
await chain.send([getCreateAssociatedTokenIdempotentInstruction({ payer: chain.payer, owner: vault.address, mint: WSOL, ata: vaultAccount })])
const entry = {
  ...localCatalog('solana').opportunities[0]!,
  id: crypto.randomUUID(),
  name: 'wSOL vault',
  vaultAddress: vault.address,
  baseToken: { symbol: 'wSOL', address: WSOL, decimals: 9 },
  receiptToken: { symbol: 'vSOL', address: await chain.createMint({ decimals: 9 }) },
  depositTokens: [{ address: WSOL, symbol: 'wSOL', decimals: 9 }],
}
await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, { opportunities: [entry] })

/** A member wallet holding `wrapped` lamports of wrapped SOL in its associated account. */
async function member(wrapped: bigint): Promise<{ wallet: KeyPairSigner; account: Address }> {
  const wallet = await generateKeyPairSigner()
  await chain.airdrop(wallet.address, 10_000_000_000n)
  const agreement = await h.post('/v2/membership/agreement', { address: wallet.address, walletEcosystem: 'solana', url: 'https://app.example.com/earn' }, { key: h.org.publishableKey })
  const signature = getBase58Decoder().decode(new Uint8Array(await signBytes(wallet.keyPair.privateKey, new TextEncoder().encode(agreement.body.message))))
  const created = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'solana', signature, nonce: agreement.body.nonce, distributorId: h.distributorId })
  expect(created.body).toEqual({ isMember: true, error: '' })
  const account = await wsolAccount(wallet.address)
  await chain.send([getCreateAssociatedTokenIdempotentInstruction({ payer: wallet, owner: wallet.address, mint: WSOL, ata: account }), getTransferSolInstruction({ source: wallet, destination: account, amount: wrapped }), getSyncNativeInstruction({ account })], wallet)
  return { wallet, account }
}

async function buildDeposit(wallet: KeyPairSigner, amount: bigint): Promise<{ serialized: string; tag: string }> {
  const r = await h.post(`/v2/actions/deposit/${entry.id}`, { userAddress: wallet.address, tokenIn: WSOL, amount: amount.toString(), distributorId: h.distributorId })
  expect(r.status, r.text).toBe(200)
  const serialized: string = r.body.transactions[0].transaction.serializedTransaction
  const message = getCompiledTransactionMessageDecoder().decode(getTransactionDecoder().decode(getBase64Encoder().encode(serialized)).messageBytes)
  const memo = decompileTransactionMessage(message).instructions.find((i) => i.programAddress.startsWith('Memo'))!
  return { serialized, tag: new TextDecoder().decode(memo.data) }
}

test('a wrapped-SOL deposit built by the API verifies, with what it moved', async () => {
  const { wallet } = await member(1_000_000_000n)
  const { serialized, tag } = await buildDeposit(wallet, 400_000_000n)
  const before = await chain.tokenBalance(WSOL, vault.address)
  const signature = await chain.signAndSend(serialized, wallet)
  expect(await chain.tokenBalance(WSOL, vault.address)).toBe(before + 400_000_000n)
  const v = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${signature}`)
  expect(v.status, v.text).toBe(200)
  expect(v.body).toMatchObject({ tag, verified: true })
  const activity = await h.store.listDistributorActivity({ orgId: h.org.orgId, distributorId: h.distributorId, offset: 0, limit: 100 })
  expect(activity.rows.filter((row) => row.type === 'verify' && row.txHash === signature).map((row) => row.amount)).toEqual(['400000000'])
})

test("a wallet unwrapping its own wrapped SOL while the vault's account syncs lamports another sent it earlier deposited nothing: not verified", async () => {
  const wrapped = 1_000_000_000n
  const { wallet, account } = await member(wrapped)
  // Someone else's SOL at the vault's wrapped-SOL account, not yet counted as tokens.
  const donor = await generateKeyPairSigner()
  await chain.airdrop(donor.address, 5_000_000_000n)
  await chain.send([getTransferSolInstruction({ source: donor, destination: vaultAccount, amount: 2_000_000_000n })], donor)
  const { tag } = await buildDeposit(wallet, wrapped)
  const before = await chain.tokenBalance(WSOL, vault.address)
  // Not the built step: the memo, the wallet's account closed back to itself, the vault's account synced.
  const signature = await chain.send([getAddMemoInstruction({ memo: tag }), getCloseAccountInstruction({ account, destination: wallet.address, owner: wallet }), getSyncNativeInstruction({ account: vaultAccount })], wallet)
  expect(await chain.tokenBalance(WSOL, vault.address)).toBe(before + 2_000_000_000n)
  const v = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${signature}`)
  expect(v.status, v.text).toBe(200)
  expect(v.body).toMatchObject({ tag, verified: false })
  const activity = await h.store.listDistributorActivity({ orgId: h.org.orgId, distributorId: h.distributorId, offset: 0, limit: 100 })
  expect(activity.rows.filter((row) => row.type === 'verify' && row.txHash === signature)).toEqual([])
})
