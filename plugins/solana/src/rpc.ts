/**
 * What every chain-touching capability needs from the client: the RPC (or a 503 naming the setting
 * when none is configured), a deadline, and one mapping of transport failures to 503.
 */
import { ApiError, ChainNotConfiguredError, InvalidArgumentError, UnavailableError } from '@earn/core'
import { isSolanaError, type Rpc, type SolanaError, type SolanaRpcApi } from '@solana/kit'
import { MalformedAnswerError } from './answers.ts'
import type { SolanaClient } from './client.ts'

/** kit sets no deadline of its own; a stalled RPC must not hold a request open. */
export const RPC_TIMEOUT_MS = 10_000

/**
 * Reads use `confirmed`: a deposit shows up in seconds rather than after finalization (~13 s), and a
 * blockhash from a confirmed block leaves the wallet most of its ~60 s validity window.
 */
export const COMMITMENT = 'confirmed' as const

export function requireRpc(client: SolanaClient, capability: string): Rpc<SolanaRpcApi> {
  const rpc = client.rpc
  if (!rpc)
    // The deployment's configuration, not the request, is what is missing: a server-side 503.
    throw new ChainNotConfiguredError(`this server has no SOLANA_RPC_URL configured, so it cannot serve ${capability}`, {
      SOLANA_RPC_URL: 'not configured',
    })
  return rpc
}

export const deadline = (): AbortSignal => AbortSignal.timeout(RPC_TIMEOUT_MS)

/**
 * What talking to the node can throw: kit's errors (HTTP status, JSON-RPC error), a timeout or
 * abort, a socket failure (Bun's fetch sets a `code` such as ECONNREFUSED), or an answer that is not
 * the method's (answers.ts).
 */
function isTransportFailure(e: unknown): boolean {
  return (isSolanaError(e) && !isCodecError(e)) || e instanceof DOMException || e instanceof MalformedAnswerError || typeof (e as { code?: unknown } | null)?.code === 'string'
}

/** kit's codec errors (8078xxx) come from decoding bytes the plugin chose to decode: its bug, not the node's failure. */
const isCodecError = (e: SolanaError): boolean => e.context.__code >= 8_078_000 && e.context.__code < 8_079_000

/**
 * Our own expected failures pass through and transport failures are the node's problem (503);
 * anything else is a bug and stays itself, so the server logs it as one rather than blaming the
 * node. The message never carries the URL: it may hold an API key.
 */
export function rpcFailure(e: unknown): unknown {
  if (e instanceof ApiError || !isTransportFailure(e)) return e
  return new UnavailableError('the Solana RPC did not answer; try again later', { SOLANA_RPC_URL: 'did not answer' }, { cause: e })
}
