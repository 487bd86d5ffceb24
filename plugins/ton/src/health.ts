/** Readiness: the configured TON API answers an account-state read within a deadline. */
import { ApiError, type ChainHealth } from '@earn/core'
import { Address } from '@ton/core'
import type { TonChainClient } from './client.ts'

const HEALTH_TIMEOUT_MS = 2000
// Any address works: the state of an empty account is still an answer from the chain.
const PROBE = new Address(0, Buffer.alloc(32))

export async function health(client: TonChainClient): Promise<ChainHealth[]> {
  let provider
  try {
    provider = client.provider(PROBE)
  } catch (e) {
    // No TON_API_URL: nothing is configured, so nothing is unready.
    if (e instanceof ApiError && 'TON_API_URL' in e.context) return []
    throw e
  }
  try {
    await Promise.race([
      provider.getState(),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), HEALTH_TIMEOUT_MS)),
    ])
    return [{ chain: 'ton', ok: true }]
  } catch {
    return [{ chain: 'ton', ok: false, detail: 'unreachable' }]
  }
}
