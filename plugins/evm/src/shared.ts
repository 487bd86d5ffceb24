/**
 * Identical requests in flight share one answer. A portfolio page or a burst of builds asks the same thing many
 * times at once (the same token's symbol, the same wallet's balance); only the first asks the chain, the others
 * wait for it. The entry leaves when the request settles, so nothing answered is ever served again: the next
 * caller reads the chain afresh.
 */
import type { EvmClient } from './client.ts'

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
