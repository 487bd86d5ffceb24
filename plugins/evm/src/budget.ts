/**
 * One capability's time with the chain, over all its calls. Each RPC request has its own limit (`EVM_RPC_TIMEOUT_MS`,
 * tried twice), but a capability may make several one after another: a node answering each just inside its limit held
 * a verify ~32 s and a swap deposit's first build (no eth_simulateV1) ~42 s in an audit, longer than clients wait. A
 * capability not done within four request limits (20 s at the default) is a 503 then. Its calls are not cancelled (a
 * Multicall3 batch carries other requests' reads too) and what they learn is kept (a gas measurement, history read);
 * a build abandoned this way is never recorded, since core records only what a capability returned.
 */
import { UnavailableError } from '@earn/core'
import type { EvmClient } from './client.ts'

/** A capability's budget in request limits (`EVM_RPC_TIMEOUT_MS`). */
export const BUDGET_TIMEOUTS = 4

/** `f`, answering the 503 once `client.budgetMs` has passed; `chainOf` names the chain it asks, from its arguments. */
export const withinBudget =
  <A extends unknown[], R>(f: (client: EvmClient, ...args: A) => Promise<R>, chainOf: (...args: A) => string) =>
  (client: EvmClient, ...args: A): Promise<R> =>
    new Promise<R>((resolve, reject) => {
      const timer = setTimeout(() => {
        const chainId = chainOf(...args)
        reject(new UnavailableError(`the RPC for EVM chain ${chainId} did not answer within ${client.budgetMs / 1000} s; try again later`, { chainId }))
      }, client.budgetMs)
      const settle = <T>(then: (value: T) => void) => (value: T) => {
        clearTimeout(timer)
        then(value)
      }
      let answer: Promise<R>
      try {
        answer = f(client, ...args)
      } catch (e) {
        settle(reject)(e)
        return
      }
      answer.then(settle(resolve), settle(reject))
    })
