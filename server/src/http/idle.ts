/**
 * Bun closes a connection that sends nothing for `IDLE_TIMEOUT_SECONDS`, and a request waiting for its answer counts
 * as idle: a build whose chain read takes its full timeout and one retry (up to 2 × EVM_RPC_TIMEOUT_MS), or a TON
 * verify through several slow calls, lost its answer to an empty reply. The limit is lifted once a request is read
 * (its body included, so a stalled body is still closed) and set again when its answer has gone out.
 */
import { Elysia } from 'elysia'

export const IDLE_TIMEOUT_SECONDS = 10

export const idleWhileAnswering = new Elysia({ name: 'earn/idle' })
  .onBeforeHandle({ as: 'global' }, ({ server, request }) => {
    server?.timeout(request, 0)
  })
  .onAfterResponse({ as: 'global' }, ({ server, request }) => {
    server?.timeout(request, IDLE_TIMEOUT_SECONDS)
  })
