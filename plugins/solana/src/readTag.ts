/**
 * Reads a landed transaction by its signature and returns the attribution tag its memo carries.
 *
 * The transaction is fetched as base64 and decoded here rather than asked for as `jsonParsed`: a
 * node parses memos only for the Memo program ids it knows, and older nodes do not know v4, the one
 * we build for. The raw bytes say the same on every node.
 */
import { InvalidArgumentError, NotFoundError, type ReadTagParameters, type ReadTagResult } from '@earn/core'
import {
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getBase58Encoder,
  getTransactionDecoder,
  signature as toSignature,
  type CompiledTransactionMessage,
} from '@solana/kit'
import { MalformedAnswerError } from './answers.ts'
import { ownsSolanaChain } from './chain.ts'
import type { SolanaClient } from './client.ts'
import { clusterRpc } from './cluster.ts'
import { COMMITMENT, deadline, rpcFailure } from './rpc.ts'
import { findTag, type CompiledInstructionLike } from './tag.ts'

export async function readTag(client: SolanaClient, p: ReadTagParameters): Promise<ReadTagResult> {
  const { failed, message, from, txHash } = await landedTransaction(client, p)
  // A failed transaction still lands (and pays its fee) but moved nothing: its memo must not
  // attribute a deposit that did not happen.
  if (failed) return { tag: null, txHash, from }
  return { tag: findTag(topLevelInstructions(message)), txHash, from }
}

/**
 * The landed transaction, its decoded message and fee payer, and the node's metadata; 400 for a
 * malformed signature, 404 when the cluster does not have it. Shared with readTransfers.ts.
 */
export async function landedTransaction(client: SolanaClient, p: ReadTagParameters) {
  if (!ownsSolanaChain(p.chainId))
    throw new InvalidArgumentError(`chainId ${p.chainId} is not a Solana cluster`, { chainId: 'not a Solana cluster' })
  if (!isBase58Signature(p.txHash))
    throw new InvalidArgumentError('txHash is not a Solana transaction signature', {
      txHash: 'must be a base58 transaction signature (64 bytes)',
    })
  const rpc = await clusterRpc(client, p.chainId, 'Solana attribution')
  let found
  try {
    found = await rpc
      .getTransaction(toSignature(p.txHash), { encoding: 'base64', maxSupportedTransactionVersion: 0, commitment: COMMITMENT })
      .send({ abortSignal: deadline() })
  } catch (e) {
    throw rpcFailure(e)
  }
  // Also what a node answers for a transaction older than its history: it cannot be checked here.
  if (!found) throw new NotFoundError('no such transaction on this Solana cluster', { txHash: p.txHash })

  let message: CompiledTransactionMessage
  try {
    const wire = getTransactionDecoder().decode(getBase64Encoder().encode(found.transaction[0]))
    message = getCompiledTransactionMessageDecoder().decode(wire.messageBytes)
  } catch (e) {
    // The node's bytes for a transaction it says landed are not one.
    throw rpcFailure(new MalformedAnswerError(`the Solana RPC answered getTransaction with bytes that are not a transaction (${e instanceof Error ? e.message.split('\n')[0] : 'undecodable'})`))
  }
  if (message.staticAccounts.length === 0) throw rpcFailure(new MalformedAnswerError('the Solana RPC answered getTransaction with a transaction without accounts'))
  // Program ids are always static keys (lookup tables cannot supply them), and the fee payer is
  // the first static key, so both are read without resolving any lookup table.
  const from = message.staticAccounts[0]!
  // Base58 spells 64 bytes one way only: the signature as asked is already canonical.
  return { failed: Boolean(found.meta?.err), message, from, meta: found.meta, txHash: p.txHash }
}

const BASE58 = /^[1-9A-HJ-NP-Za-km-z]{64,88}$/

/** kit's `isSignature` throws, rather than answering false, on characters outside base58. */
function isBase58Signature(input: string): boolean {
  return BASE58.test(input) && getBase58Encoder().encode(input).length === 64
}

/** Version 1 messages split instructions into headers and payloads; the rest list them whole. */
export function topLevelInstructions(message: CompiledTransactionMessage): CompiledInstructionLike[] {
  const keys = message.staticAccounts
  if (message.version === 1)
    return message.instructionHeaders.map((h, i) => ({
      programAddress: keys[h.programAccountIndex]!,
      data: message.instructionPayloads[i]?.instructionData,
    }))
  return message.instructions.map((ix) => ({ programAddress: keys[ix.programAddressIndex]!, data: ix.data }))
}
