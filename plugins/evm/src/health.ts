/** Readiness: every configured chain answers eth_chainId, with the chain id it is configured as. */
import type { ChainHealth } from '@earn/core'
import type { EvmClient } from './client.ts'

const HEALTH_TIMEOUT_MS = 2000

const timeout = () =>
  new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${HEALTH_TIMEOUT_MS} ms`)), HEALTH_TIMEOUT_MS))

export function health(client: EvmClient): Promise<ChainHealth[]> {
  return Promise.all(
    client.chainIds.map(async (chain): Promise<ChainHealth> => {
      try {
        const answered = await Promise.race([client.publicClient(chain)!.getChainId(), timeout()])
        return String(answered) === chain ? { chain, ok: true } : { chain, ok: false, detail: `the RPC serves chain ${answered}` }
      } catch (e) {
        // viem's messages can carry the URL (and its key); the kind of failure is enough for an operator.
        return { chain, ok: false, detail: e instanceof Error && e.message.startsWith('no answer') ? e.message : 'unreachable' }
      }
    }),
  )
}
