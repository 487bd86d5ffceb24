/**
 * Whether a chain's RPC serves that chain. One configured (or repointed) at another chain's node answers every read
 * with that chain's state: a build passed its preflight on another chain's balances, verify recorded a deposit mined
 * elsewhere, and a stream went active on a transfer its treasury never got (an audit). So every capability that reads
 * a chain's state checks its identity first, at most once per `SERVED_CHECK_MS` a chain (one `eth_chainId`, which
 * the requests arriving while it is asked wait for together: a round trip added every 30 s). First, not beside: what
 * a capability learns is kept (settled vault histories, gas measured, a node without eth_simulateV1), and another
 * chain's would stay wrong once the RPC was pointed back.
 */
import type { EvmClient } from './client.ts'
import { requirePublicClient } from './client.ts'
import { assertServesChain } from './rpc.ts'
import { share } from './shared.ts'

/** How long a chain's RPC, once found to serve it, is taken to go on doing so (readiness asks each probe). */
export const SERVED_CHECK_MS = 30_000

/** Resolves once the chain's RPC is known to serve it (at once, where it was found so lately); rejects 503 if not. */
export async function checkServed(client: EvmClient, chainId: string): Promise<void> {
  const at = client.state.servedChecked.get(chainId)
  if (at !== undefined && performance.now() - at < SERVED_CHECK_MS) return
  await share(client, `${chainId}|servesChain`, async () => {
    await assertServesChain(requirePublicClient(client, chainId), chainId)
    client.state.servedChecked.set(chainId, performance.now())
  })
}

/**
 * `f`, once its chain's RPC is known to serve it: another chain, or an RPC that does not answer, is the answer (a 503
 * naming the chain), `f` never run. (Asking `f` after an unanswered check had a request wait out two timeouts where
 * one tells; its refusals of what needs no chain, a malformed hash, then wait for the chain to answer, as a 503.) A
 * check made lately adds nothing, not even a turn of the event loop.
 */
export const onServedChain =
  <A extends unknown[], R>(f: (client: EvmClient, ...args: A) => Promise<R>, chainOf: (...args: A) => string) =>
  async (client: EvmClient, ...args: A): Promise<R> => {
    const chainId = chainOf(...args)
    const at = client.state.servedChecked.get(chainId)
    if (at === undefined || performance.now() - at >= SERVED_CHECK_MS) await checkServed(client, chainId)
    return f(client, ...args)
  }
