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
  createKeyPairSignerFromPrivateKeyBytes,
  createSolanaRpc,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  getBase64Encoder,
  getTransactionDecoder,
  lamports,
  pipe,
  setTransactionMessageFeePayerSigner,
  signTransaction,
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
  getTokenDecoder,
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
  /** A new mint at a random address, or at `mint`'s (for addresses a catalog can name); Token, or Token-2022 when given. */
  createMint(p?: { decimals?: number; mint?: KeyPairSigner; tokenProgram?: Address }): Promise<Address>
  /** A token account that is not the owner's associated one (wallets may hold several). */
  createTokenAccount(p: { mint: string; owner: string }): Promise<Address>
  /** Mints into `account`, or into the owner's associated token account (created if missing). */
  mintTo(p: { mint: string; owner: string; amount: bigint; account?: string }): Promise<Address>
  /** Signs with the fee payer (default: `payer`) and every signer the instructions carry. */
  send(instructions: Instruction[], feePayer?: TransactionSigner): Promise<string>
  /**
   * What a wallet does with an API step: decodes `serializedTransaction`, signs it with its key and
   * sends it over JSON-RPC (with preflight). Resolves to the base58 signature.
   */
  signAndSend(serializedTransaction: string, wallet: KeyPairSigner): Promise<string>
  /** The amount in `owner`'s associated token account for `mint`, read from the SVM directly; 0 if none. */
  tokenBalance(mint: string, owner: string): Promise<bigint>
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
  const rpc = createSolanaRpc(url)
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

  const createAccount = async (newAccount: KeyPairSigner, space: bigint, programAddress: Address = TOKEN_PROGRAM_ADDRESS) =>
    getCreateAccountInstruction({
      payer,
      newAccount,
      lamports: svm.minimumBalanceForRentExemption(space),
      space,
      programAddress,
    })
  // The token program that owns a mint: each helper below works for Token and Token-2022 mints alike.
  const programOf = (mint: Address): Address => {
    const account = svm.getAccount(mint)
    return account.exists ? account.programAddress : TOKEN_PROGRAM_ADDRESS
  }

  return {
    svm,
    url,
    rpc,
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
    async createMint({ decimals = 6, mint: given, tokenProgram = TOKEN_PROGRAM_ADDRESS } = {}) {
      const mint = given ?? (await generateKeyPairSigner())
      await send([
        await createAccount(mint, BigInt(getMintSize()), tokenProgram),
        getInitializeMint2Instruction({ mint: mint.address, decimals, mintAuthority: payer.address }, { programAddress: tokenProgram }),
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
      const tokenProgram = programOf(m)
      if (!token) {
        ;[token] = await findAssociatedTokenPda({ owner: address(owner), mint: m, tokenProgram })
        create.push(getCreateAssociatedTokenIdempotentInstruction({ payer, owner: address(owner), mint: m, ata: token, tokenProgram }))
      }
      await send([...create, getMintToInstruction({ mint: m, token, mintAuthority: payer, amount }, { programAddress: tokenProgram })])
      return token
    },
    send,
    async signAndSend(serializedTransaction, wallet) {
      const unsigned = getTransactionDecoder().decode(getBase64Encoder().encode(serializedTransaction))
      const signed = await signTransaction([wallet.keyPair], unsigned)
      return rpc.sendTransaction(getBase64EncodedWireTransaction(signed), { encoding: 'base64' }).send()
    },
    async tokenBalance(mint, owner) {
      const [ata] = await findAssociatedTokenPda({ owner: address(owner), mint: address(mint), tokenProgram: programOf(address(mint)) })
      const account = svm.getAccount(ata)
      return account.exists ? getTokenDecoder().decode(account.data).amount : 0n
    },
  }
}

/**
 * The sample catalog's Solana opportunity: a vault (a plain wallet acting as deposit authority),
 * its base token and its receipt token, at addresses fixed by seeds so `catalog/` can name them.
 * On this sample the harness plays the vault's operator: its payer is both mints' authority.
 */
export const SAMPLE_SOLANA_LABELS = {
  vault: 'earn-sample/solana/vault',
  baseMint: 'earn-sample/solana/base-mint',
  receiptMint: 'earn-sample/solana/receipt-mint',
} as const
export const SAMPLE_SOLANA_DECIMALS = 6

/** SHA-256 of the label is the ed25519 private key: the same address on every run and machine. */
async function signerFromLabel(label: string): Promise<KeyPairSigner> {
  const seed = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(label)))
  return createKeyPairSignerFromPrivateKeyBytes(seed)
}

export interface SampleSolana {
  vault: Address
  baseMint: Address
  receiptMint: Address
  decimals: number
  /** Mints base tokens to a wallet (its "USDC"). */
  fund(owner: string, amount: bigint): Promise<void>
  /** Mints receipt tokens to a wallet, as the vault's operator would against a deposit. */
  issueReceipts(owner: string, amount: bigint): Promise<void>
}

export async function sampleSolanaAddresses(): Promise<{ vault: Address; baseMint: Address; receiptMint: Address }> {
  const [vault, baseMint, receiptMint] = await Promise.all(Object.values(SAMPLE_SOLANA_LABELS).map(signerFromLabel))
  return { vault: vault!.address, baseMint: baseMint!.address, receiptMint: receiptMint!.address }
}

/**
 * Creates the sample opportunity's accounts on `chain`, as its operator would before listing it:
 * both mints and the vault's associated account for each (so deposits need no account creation).
 * Safe to call twice on one chain.
 */
export async function deploySampleSolana(chain: SolanaChain): Promise<SampleSolana> {
  const [vault, baseMint, receiptMint] = await Promise.all(Object.values(SAMPLE_SOLANA_LABELS).map(signerFromLabel))
  for (const mint of [baseMint!, receiptMint!]) {
    if (!chain.svm.getAccount(mint.address).exists) await chain.createMint({ decimals: SAMPLE_SOLANA_DECIMALS, mint })
    await chain.mintTo({ mint: mint.address, owner: vault!.address, amount: 0n })
  }
  return {
    vault: vault!.address,
    baseMint: baseMint!.address,
    receiptMint: receiptMint!.address,
    decimals: SAMPLE_SOLANA_DECIMALS,
    fund: async (owner, amount) => void (await chain.mintTo({ mint: baseMint!.address, owner, amount })),
    issueReceipts: async (owner, amount) => void (await chain.mintTo({ mint: receiptMint!.address, owner, amount })),
  }
}

export interface RpcCall {
  id: unknown
  method: string
}

/**
 * A JSON-RPC endpoint in front of the chain, standing for a broken or hostile node: `answer` may answer a call itself
 * (`forward` asks the chain), or leave it to the chain by answering undefined.
 */
export function interceptingEndpoint(chainUrl: string, answer: (call: RpcCall, forward: () => Promise<Response>) => Response | undefined | Promise<Response | undefined>) {
  return Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const text = await req.text()
      const forward = () => fetch(chainUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text })
      return (await answer(JSON.parse(text) as RpcCall, forward)) ?? forward()
    },
  })
}
