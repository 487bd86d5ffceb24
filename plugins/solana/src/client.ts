/**
 * The Solana client: configuration in, an RPC handle out. Only balance reads need it; membership
 * signatures verify offline, so a server without `SOLANA_RPC_URL` still registers Solana wallets.
 */
import { type ChainEnv, namesOneHost } from '@earn/core'
import { createSolanaRpcFromTransport, type Rpc, type SolanaRpcApi } from '@solana/kit'
import { checkedTransport } from './answers.ts'
import { coalescing, httpTransport } from './transport.ts'

export interface SolanaClient {
  /** Absent when no `SOLANA_RPC_URL` is configured; capabilities that need it say so. */
  readonly rpc?: Rpc<SolanaRpcApi>
}

export function connect(env: ChainEnv): SolanaClient {
  const url = env.SOLANA_RPC_URL?.trim()
  if (!url) return {}
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    // The value itself stays out of the message: RPC URLs often carry an API key.
    throw new Error('SOLANA_RPC_URL is not a valid URL; expected an http(s) Solana JSON-RPC endpoint')
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new Error(`SOLANA_RPC_URL must be an http(s) URL, not ${parsed.protocol}`)
  if (!namesOneHost(parsed)) throw new Error('SOLANA_RPC_URL names no single host: give one endpoint URL')
  // Built on first use, so a server that never reads a Solana balance never makes the transport;
  // even then nothing is sent until a capability calls `.send()`.
  let rpc: Rpc<SolanaRpcApi> | undefined
  return {
    get rpc() {
      // Answers read to a limit (transport.ts) and checked before kit hands them on (answers.ts).
      return (rpc ??= createSolanaRpcFromTransport(coalescing(checkedTransport(httpTransport(url)))))
    },
  }
}
