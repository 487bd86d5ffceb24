/**
 * Whether a chain's RPC serves that chain. One configured (or repointed) at another chain's node answers every read
 * with that chain's state: a build passed its preflight on another chain's balances, verify recorded a deposit mined
 * elsewhere, and a stream went active on a transfer its treasury never got (an audit). So every capability that reads
 * a chain's state checks its identity first, at most once per `SERVED_CHECK_MS` a chain (one `eth_chainId`, asked
 * again in the background while the chain is in use, so only a chain idle that long has a request wait for it,
 * outside the capability's own time budget, which `withinBudget` then starts). First, not beside: what a capability
 * learns is kept (settled vault histories, gas measured, a node without eth_simulateV1), and another chain's would
 * stay wrong once the RPC was pointed back.
 */
import type { EvmClient } from './client.ts'
import { requirePublicClient } from './client.ts'
import { assertServesChain } from './rpc.ts'
import { share } from './shared.ts'

/** How long a chain's RPC, once found to serve it, is taken to go on doing so (readiness asks each probe). */
export const SERVED_CHECK_MS = 30_000
/** Past this, a request on the chain asks again in the background (the answer still stands until SERVED_CHECK_MS). */
const SERVED_RECHECK_MS = 20_000

/** Resolves once the chain's RPC is known to serve it (at once, where found so within `maxAgeMs`); rejects 503 if not. */
export async function checkServed(client: EvmClient, chainId: string, maxAgeMs = SERVED_CHECK_MS): Promise<void> {
  const at = client.state.servedChecked.get(chainId)
  if (at !== undefined && performance.now() - at < maxAgeMs) return
  await share(client, `${chainId}|servesChain`, async () => {
    await assertServesChain(requirePublicClient(client, chainId), chainId)
    client.state.servedChecked.set(chainId, performance.now())
  })
}

/**
 * `f`, once its chain's RPC is known to serve it: another chain, or an RPC that does not answer, is the answer (a 503
 * naming the chain), `f` never run. (Asking `f` after an unanswered check had a request wait out two timeouts where
 * one tells.) `refuse` throws for what needs no chain to refuse (a malformed hash), before the check: a client's
 * mistake is a 400 whether or not the chain answers. A check made lately adds nothing, not even a turn of the event loop.
 */
export const onServedChain =
  <A extends unknown[], R>(f: (client: EvmClient, ...args: A) => Promise<R>, chainOf: (...args: A) => string, refuse?: (...args: A) => void) =>
  async (client: EvmClient, ...args: A): Promise<R> => {
    refuse?.(...args)
    const chainId = chainOf(...args)
    const at = client.state.servedChecked.get(chainId)
    const age = at === undefined ? Infinity : performance.now() - at
    if (age >= SERVED_CHECK_MS) await checkServed(client, chainId)
    // Asked again before it lapses, in the background: a chain in use never has a request wait for the check.
    else if (age >= SERVED_RECHECK_MS) checkServed(client, chainId, SERVED_RECHECK_MS).catch(() => {})
    return f(client, ...args)
  }
