/**
 * A local Solana for tests: LiteSVM (a real SVM runtime with the SPL Token, ATA and Memo programs)
 * behind a JSON-RPC HTTP endpoint on 127.0.0.1, plus helpers to fund wallets and mint tokens.
 *
 *   const chain = await startSolana()
 *   const client = solana.connect({ SOLANA_RPC_URL: chain.url })
 *   afterAll(() => chain.stop())
 *
 * Helpers execute in process through the same recorder as RPC sends, so `getSignatureStatuses` and
 * `getTransaction` see their transactions too. Each helper starts from a fresh blockhash, so build
 * your own transactions after calling helpers (LiteSVM accepts only its latest blockhash).
 */
import { FailedTransactionMetadata, LiteSVM } from 'litesvm'
import {
  address,
  appendTransactionMessageInstructions,
  createSolanaRpc,
  createTransactionMessage,
  generateKeyPairSigner,
  lamports,
  pipe,
  setTransactionMessageFeePayerSigner,
  signTransactionMessageWithSigners,
  type Address,
  type Instruction,
  type KeyPairSigner,
  type Rpc,
  type SolanaRpcApi,
  type TransactionSigner,
} from '@solana/kit'
import { LEGACY_MEMO_PROGRAM_ADDRESS_V3, MEMO_PROGRAM_ADDRESS } from '@solana-program/memo'
import { getCreateAccountInstruction } from '@solana-program/system'
import {
  findAssociatedTokenPda,
  getCreateAssociatedTokenIdempotentInstruction,
  getInitializeAccount3Instruction,
  getInitializeMint2Instruction,
  getMintSize,
  getMintToInstruction,
  getTokenSize,
  TOKEN_PROGRAM_ADDRESS,
} from '@solana-program/token'
import { stringify, transactionErrorJson } from './solanaCodecs.ts'
import { createSolanaRpcFacade, type LandedTransaction } from './solanaRpc.ts'

export interface SolanaChain {
  svm: LiteSVM
  /** JSON-RPC endpoint: what `SOLANA_RPC_URL` would be in production. */
  url: string
  rpc: Rpc<SolanaRpcApi>
  /** Funded fee payer and mint authority of every mint the helpers create. */
  payer: KeyPairSigner
  /** Every transaction that landed, by base58 signature, with the exact bytes sent. */
  ledger: ReadonlyMap<string, LandedTransaction>
  stop(): Promise<void>
  airdrop(to: string, lamports: bigint): Promise<void>
  createMint(p?: { decimals?: number }): Promise<Address>
  /** A token account that is not the owner's associated one (wallets may hold several). */
  createTokenAccount(p: { mint: string; owner: string }): Promise<Address>
  /** Mints into `account`, or into the owner's associated token account (created if missing). */
  mintTo(p: { mint: string; owner: string; amount: bigint; account?: string }): Promise<Address>
  /** Signs with the fee payer (default: `payer`) and every signer the instructions carry. */
  send(instructions: Instruction[], feePayer?: TransactionSigner): Promise<string>
}

/**
 * @solana-program/memo (0.15) builds memos for Memo v4 (`Memo4c2p…`), which LiteSVM 1.5.0 does not
 * ship (it has v1 and v3, `MemoSq4g…`). The client builds the same instruction for both (UTF-8
 * text, optional signer accounts), so v3's program stands in at the v4 address: memos execute and
 * are logged; v4-only behaviour, if any, is not reproduced.
 */
function installMemoV4(svm: LiteSVM) {
  const v3 = svm.getAccount(LEGACY_MEMO_PROGRAM_ADDRESS_V3)
  if (!v3.exists) throw new Error('LiteSVM no longer ships Memo v3; the harness needs another source for Memo v4')
  if (!svm.getAccount(MEMO_PROGRAM_ADDRESS).exists)
    svm.addProgramWithLoader(MEMO_PROGRAM_ADDRESS, new Uint8Array(v3.data), v3.programAddress)
}

export async function startSolana(): Promise<SolanaChain> {
  const svm = new LiteSVM() // not LiteSVM.default(): that one has no programs or sysvars
  installMemoV4(svm)
  const facade = createSolanaRpcFacade(svm)
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      if (request.method !== 'POST') return new Response('Solana JSON-RPC: POST only', { status: 405 })
      let body: unknown
      try {
        body = await request.json()
      } catch {
        return Response.json({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } })
      }
      return new Response(stringify(facade.handle(body)), { headers: { 'content-type': 'application/json' } })
    },
  })
  const url = `http://127.0.0.1:${server.port}`
  const payer = await generateKeyPairSigner()
  svm.airdrop(payer.address, lamports(1_000_000_000_000n))

  async function send(instructions: Instruction[], feePayer: TransactionSigner = payer): Promise<string> {
    svm.expireBlockhash() // identical helper calls would otherwise be rejected as AlreadyProcessed
    const tx = await pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(feePayer, m),
      (m) => svm.setTransactionMessageLifetimeUsingLatestBlockhash(m),
      (m) => appendTransactionMessageInstructions(instructions, m),
      (m) => signTransactionMessageWithSigners(m),
    )
    const { signature, err, logs } = facade.submit(tx)
    if (err !== null) throw new Error(`transaction failed: ${JSON.stringify(err)}\n${logs.join('\n')}`)
    return signature
  }

  const createAccount = async (newAccount: KeyPairSigner, space: bigint) =>
    getCreateAccountInstruction({
      payer,
      newAccount,
      lamports: svm.minimumBalanceForRentExemption(space),
      space,
      programAddress: TOKEN_PROGRAM_ADDRESS,
    })

  return {
    svm,
    url,
    rpc: createSolanaRpc(url),
    payer,
    ledger: facade.ledger,
    stop: async () => {
      await server.stop(true)
    },
    async airdrop(to, amount) {
      const r = svm.airdrop(address(to), lamports(amount))
      if (!r || r instanceof FailedTransactionMetadata)
        throw new Error(`airdrop to ${to} failed: ${r ? JSON.stringify(transactionErrorJson(r.err())) : 'no result'}`)
    },
    async createMint({ decimals = 6 } = {}) {
      const mint = await generateKeyPairSigner()
      await send([
        await createAccount(mint, BigInt(getMintSize())),
        getInitializeMint2Instruction({ mint: mint.address, decimals, mintAuthority: payer.address }),
      ])
      return mint.address
    },
    async createTokenAccount({ mint, owner }) {
      const account = await generateKeyPairSigner()
      await send([
        await createAccount(account, BigInt(getTokenSize())),
        getInitializeAccount3Instruction({ account: account.address, mint: address(mint), owner: address(owner) }),
      ])
      return account.address
    },
    async mintTo({ mint, owner, amount, account }) {
      const m = address(mint)
      let token = account ? address(account) : undefined
      const create: Instruction[] = []
      if (!token) {
        ;[token] = await findAssociatedTokenPda({ owner: address(owner), mint: m, tokenProgram: TOKEN_PROGRAM_ADDRESS })
        create.push(getCreateAssociatedTokenIdempotentInstruction({ payer, owner: address(owner), mint: m, ata: token }))
      }
      await send([...create, getMintToInstruction({ mint: m, token, mintAuthority: payer, amount })])
      return token
    },
    send,
  }
}
