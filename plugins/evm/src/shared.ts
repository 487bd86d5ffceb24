/**
 * Identical requests in flight share one answer. A portfolio page or a burst of builds asks the same thing many
 * times at once (the same token's symbol, the same wallet's balance); only the first asks the chain, the others
 * wait for it. The entry leaves when the request settles, so nothing answered is ever served again: the next
 * caller reads the chain afresh.
 */
import type { PublicClient } from 'viem'
import { callBatcher, type EvmClient } from './client.ts'

export interface Shared<T> {
  value: T
  /** Whether this caller's request was the one sent (the others joined it). */
  first: boolean
}

export async function shared<T>(client: EvmClient, key: string, run: () => Promise<T>): Promise<Shared<T>> {
  const inFlight = client.state.inFlight
  const pending = inFlight.get(key) as Promise<T> | undefined
  if (pending) return { value: await pending, first: false }
  const promise = run()
  inFlight.set(key, promise)
  try {
    return { value: await promise, first: true }
  } finally {
    // Only our own entry: a later request under the same key may already have replaced it.
    if (inFlight.get(key) === promise) inFlight.delete(key)
  }
}

/** `shared` for callers that do not care who asked. */
export const share = async <T>(client: EvmClient, key: string, run: () => Promise<T>): Promise<T> =>
  (await shared(client, key, run)).value

/**
 * `share` for chain state a build acts on (balances, allowances, vault limits, quotes): a caller joins another's read
 * only while that read waits in a batch that has not left, so the answer is read after the caller arrived. A read
 * already sent may answer from before a transaction the caller saw mined (a remote RPC takes its time to answer), so
 * a caller arriving then reads afresh. Without a batcher every read leaves at once, and none is joined.
 */
export function shareUnsent<T>(client: EvmClient, chainId: string, publicClient: PublicClient, key: string, run: () => Promise<T>): Promise<T> {
  const batcher = callBatcher(client, chainId, publicClient)
  return batcher ? share(client, `${key}|${batcher.sent}`, run) : run()
}
