/**
 * One capability's time with the TON endpoint, over all its calls. Each call has a limit of its own (client.ts), but
 * a capability makes several one after another (a verify up to nine: the index, the node, each hop of a transfer), so
 * an endpoint answering each just inside its limit held one request 36 s (a deposit) to 81 s (a verify) in an audit.
 * Calls made within `withinBudget` end when the budget does, as a node that did not answer (503).
 */
import type { InTurn } from '@earn/core'
import { AsyncLocalStorage } from 'node:async_hooks'

/** What a TON capability may spend with the endpoint; EVM's hanging node answers in ~10 s, one TON call may take 10. */
export const OPERATION_BUDGET_MS = 20_000

const budget = new AsyncLocalStorage<AbortSignal>()

/** `f` with its calls to the endpoint held to `ms` together; inside another budget, that one holds. */
export const withinBudget =
  <A extends unknown[], R>(f: (...args: A) => Promise<R>, ms = OPERATION_BUDGET_MS) =>
  (...args: A): Promise<R> =>
    budget.getStore() ? f(...args) : budget.run(AbortSignal.timeout(ms), () => f(...args))

/** A call's signal: its own limit, and the budget of the capability it is made in. */
export function callSignal(ms: number): AbortSignal {
  const whole = budget.getStore()
  return whole ? AbortSignal.any([AbortSignal.timeout(ms), whole]) : AbortSignal.timeout(ms)
}

/**
 * A call whose time ran out waiting for its turn (client.ts `TON_IN_FLIGHT`): the client's other calls held every
 * slot, so no service was asked, and none is to blame by name (a verify's index lookup queued behind slow node
 * calls had named a healthy index).
 */
export class NoTurnError extends Error {}

/**
 * `task` in its turn of `limit`, within `signal`; a wait that runs out is a NoTurnError. A signal aborted already (the
 * capability's budget spent before this call) is that, not a queue's fault.
 */
export function inItsTurn<T>(limit: InTurn, signal: AbortSignal, task: () => Promise<T>): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason)
  let started = false
  return limit(() => ((started = true), task()), signal).catch((e: unknown) => {
    throw started ? e : new NoTurnError('every call of this client to the TON endpoints was in flight', { cause: e })
  })
}
