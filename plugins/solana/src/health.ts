/** Readiness: the configured RPC answers getSlot within a deadline. */
import type { ChainHealth } from '@earn/core'
import { MalformedAnswerError } from './answers.ts'
import type { SolanaClient } from './client.ts'

const HEALTH_TIMEOUT_MS = 2000

export async function health(client: SolanaClient): Promise<ChainHealth[]> {
  if (!client.rpc) return []
  try {
    await client.rpc.getSlot().send({ abortSignal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) })
    return [{ chain: 'solana', ok: true }]
  } catch (e) {
    // kit's errors can carry the URL; the fact is enough for an operator.
    return [{ chain: 'solana', ok: false, detail: e instanceof MalformedAnswerError ? 'answers malformed' : 'unreachable' }]
  }
}
