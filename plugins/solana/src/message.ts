/**
 * Turns instructions into what a Solana wallet signs: a v0 transaction, the user as fee payer, a
 * recent blockhash, every signature slot zero-filled, base64 of the wire bytes. Wallet adapters
 * (`signTransaction`, `signAndSendTransaction`) take exactly this after a base64 decode.
 */
import { InvalidArgumentError } from '@earn/core'
import {
  appendTransactionMessageInstructions,
  compileTransaction,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  isTransactionWithinSizeLimit,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Address,
  type Blockhash,
  type Instruction,
  type Rpc,
  type SolanaRpcApi,
} from '@solana/kit'
import { COMMITMENT } from './rpc.ts'

export interface Lifetime {
  blockhash: Blockhash
  /** The transaction is refused once the chain passes this height (~60-90 s after the read). */
  lastValidBlockHeight: bigint
}

export async function latestLifetime(rpc: Rpc<SolanaRpcApi>, abortSignal: AbortSignal): Promise<Lifetime> {
  const { value } = await rpc.getLatestBlockhash({ commitment: COMMITMENT }).send({ abortSignal })
  return value
}

export interface UnsignedTransactionParameters {
  feePayer: Address
  lifetime: Lifetime
  instructions: readonly Instruction[]
}

/**
 * Version 0, not legacy: every current wallet signs it, and it leaves room for address lookup
 * tables should a protocol's deposit ever need more accounts than fit in a packet.
 */
export function unsignedTransaction(p: UnsignedTransactionParameters): string {
  const transaction = pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(p.feePayer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(p.lifetime, m),
    (m) => appendTransactionMessageInstructions(p.instructions, m),
    (m) => compileTransaction(m),
  )
  // Caught here rather than by the wallet, which would refuse it only when asked to sign.
  if (!isTransactionWithinSizeLimit(transaction))
    throw new InvalidArgumentError('the transaction would exceed the Solana packet size', { transaction: 'too large' })
  // Signatures the wallet has not made yet are encoded as 64 zero bytes, as the wire format wants.
  return getBase64EncodedWireTransaction(transaction)
}

/** Metadata every Solana step carries: the wallet needs the height to know when to rebuild. */
export const lifetimeMetadata = (lifetime: Lifetime) => ({
  recentBlockhash: lifetime.blockhash,
  lastValidBlockHeight: lifetime.lastValidBlockHeight.toString(),
})
