/**
 * Verify on wrapped-SOL vaults (LiteSVM), of the Token program's native mint and of Token-2022's. Balances say wrapped
 * SOL moved where no one paid it: `SyncNative` counts in lamports sent to a token account earlier, and a wallet
 * closing its own wrapped-SOL account loses tokens that come back to it as SOL. Read together, they had made a
 * deposit the wallet never made verify.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { importCatalog } from '@earn/core'
import { solana } from '@earn/plugin-solana'
import { AccountRole, address, decompileTransactionMessage, generateKeyPairSigner, getBase64Encoder, getCompiledTransactionMessageDecoder, getTransactionDecoder, lamports, type Address, type Instruction, type KeyPairSigner } from '@solana/kit'
import { getAddMemoInstruction } from '@solana-program/memo'
import { getTransferSolInstruction } from '@solana-program/system'
import { findAssociatedTokenPda, getCloseAccountInstruction, getCreateAssociatedTokenIdempotentInstruction, getMintEncoder, getSyncNativeInstruction, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { localCatalog } from './localChain.ts'
import { registerSolana } from './members.ts'
import { TOKEN_2022_PROGRAM_ADDRESS } from '../chains/solanaCodecs.ts'
import { startSolana } from '../chains/solana.ts'
import { createHarness } from '../harness.ts'

const CHAIN = 'localnet'
const SYSTEM_PROGRAM = address('11111111111111111111111111111111')
const chain = await startSolana()
const h = await createHarness({ clients: { solana: solana.connect({ SOLANA_RPC_URL: chain.url }) } })
afterAll(async () => {
  await h.close()
  await chain.stop()
})

// The native mints, as every cluster has them (LiteSVM starts without either): the Token program's placed as it
// is on chain, Token-2022's made by its own CreateNativeMint instruction (31).
const mintData = new Uint8Array(getMintEncoder().encode({ mintAuthority: null, supply: 0n, decimals: 9, isInitialized: true, freezeAuthority: null }))
const TOKEN_NATIVE = address('So11111111111111111111111111111111111111112')
chain.svm.setAccount({ address: TOKEN_NATIVE, data: mintData, executable: false, lamports: lamports(chain.svm.minimumBalanceForRentExemption(BigInt(mintData.length))), programAddress: TOKEN_PROGRAM_ADDRESS, space: BigInt(mintData.length) })
const TOKEN_2022_NATIVE = address('9pan9bMn5HatX4EJdBwg9VgCa7Uz5HL8N1m5D3NdXejP')
// A signer in an account meta, as the chain's `send` collects them (kit's AccountSignerMeta).
const createNativeMint = {
  programAddress: TOKEN_2022_PROGRAM_ADDRESS,
  accounts: [
    { address: chain.payer.address, role: AccountRole.WRITABLE_SIGNER, signer: chain.payer },
    { address: TOKEN_2022_NATIVE, role: AccountRole.WRITABLE },
    { address: SYSTEM_PROGRAM, role: AccountRole.READONLY },
  ],
  data: new Uint8Array([31]),
} as Instruction
await chain.send([createNativeMint])

for (const [name, mint, program] of [
  ['Token program', TOKEN_NATIVE, TOKEN_PROGRAM_ADDRESS],
  ['Token-2022', TOKEN_2022_NATIVE, TOKEN_2022_PROGRAM_ADDRESS],
] as const) {
  describe(`wrapped SOL of the ${name}`, async () => {
    const accountOf = async (owner: string) => (await findAssociatedTokenPda({ owner: address(owner), mint, tokenProgram: program }))[0]
    const sync = (account: Address) => getSyncNativeInstruction({ account }, { programAddress: program })
    const vault = await generateKeyPairSigner()
    const vaultAccount = await accountOf(vault.address)
    await chain.send([getCreateAssociatedTokenIdempotentInstruction({ payer: chain.payer, owner: vault.address, mint, ata: vaultAccount, tokenProgram: program })])
    const entry = {
      ...localCatalog('solana').opportunities[0]!,
      id: crypto.randomUUID(),
      name: `wSOL vault (${name})`,
      vaultAddress: vault.address,
      baseToken: { symbol: 'wSOL', address: mint, decimals: 9 },
      receiptToken: { symbol: 'vSOL', address: await chain.createMint({ decimals: 9 }) },
      depositTokens: [{ address: mint, symbol: 'wSOL', decimals: 9 }],
    }
    await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, { opportunities: [entry] })

    /** A member wallet holding `wrapped` lamports of wrapped SOL in its associated account. */
    async function member(wrapped: bigint): Promise<{ wallet: KeyPairSigner; account: Address }> {
      const wallet = await generateKeyPairSigner()
      await chain.airdrop(wallet.address, 10_000_000_000n)
      await registerSolana(h, wallet)
      const account = await accountOf(wallet.address)
      await chain.send([getCreateAssociatedTokenIdempotentInstruction({ payer: wallet, owner: wallet.address, mint, ata: account, tokenProgram: program }), getTransferSolInstruction({ source: wallet, destination: account, amount: wrapped }), sync(account)], wallet)
      return { wallet, account }
    }

    async function buildDeposit(wallet: KeyPairSigner, amount: bigint): Promise<{ serialized: string; tag: string }> {
      const r = await h.post(`/v2/actions/deposit/${entry.id}`, { userAddress: wallet.address, tokenIn: mint, amount: amount.toString(), distributorId: h.distributorId })
      expect(r.status, r.text).toBe(200)
      const serialized: string = r.body.transactions[0].transaction.serializedTransaction
      const message = getCompiledTransactionMessageDecoder().decode(getTransactionDecoder().decode(getBase64Encoder().encode(serialized)).messageBytes)
      const memo = decompileTransactionMessage(message).instructions.find((i) => i.programAddress.startsWith('Memo'))!
      return { serialized, tag: new TextDecoder().decode(memo.data) }
    }

    const verifyRows = async (signature: string) =>
      (await h.store.listDistributorActivity({ orgId: h.org.orgId, distributorId: h.distributorId, offset: 0, limit: 100 })).rows.filter((row) => row.type === 'verify' && row.txHash === signature)

    test('a deposit built by the API verifies, with what it moved', async () => {
      const { wallet } = await member(1_000_000_000n)
      const { serialized, tag } = await buildDeposit(wallet, 400_000_000n)
      const before = await chain.tokenBalance(mint, vault.address)
      const signature = await chain.signAndSend(serialized, wallet)
      expect(await chain.tokenBalance(mint, vault.address)).toBe(before + 400_000_000n)
      const v = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${signature}`)
      expect(v.status, v.text).toBe(200)
      expect(v.body).toMatchObject({ tag, verified: true })
      expect((await verifyRows(signature)).map((row) => row.amount)).toEqual(['400000000'])
    })

    test("a wallet unwrapping its own while the vault's account syncs lamports another sent it earlier deposited nothing: not verified", async () => {
      const wrapped = 1_000_000_000n
      const { wallet, account } = await member(wrapped)
      // Someone else's SOL at the vault's wrapped-SOL account, not yet counted as tokens.
      const donor = await generateKeyPairSigner()
      await chain.airdrop(donor.address, 5_000_000_000n)
      await chain.send([getTransferSolInstruction({ source: donor, destination: vaultAccount, amount: 2_000_000_000n })], donor)
      const { tag } = await buildDeposit(wallet, wrapped)
      const before = await chain.tokenBalance(mint, vault.address)
      // Not the built step: the memo, the wallet's account closed back to itself, the vault's account synced.
      const close = getCloseAccountInstruction({ account, destination: wallet.address, owner: wallet }, { programAddress: program })
      const signature = await chain.send([getAddMemoInstruction({ memo: tag }), close, sync(vaultAccount)], wallet)
      expect(await chain.tokenBalance(mint, vault.address)).toBe(before + 2_000_000_000n)
      const v = await h.get(`/v2/actions/verify?chainId=${CHAIN}&txHash=${signature}`)
      expect(v.status, v.text).toBe(200)
      expect(v.body).toMatchObject({ tag, verified: false })
      expect(await verifyRows(signature)).toEqual([])
    })
  })
}
