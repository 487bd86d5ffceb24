/**
 * Bun closes a connection that sends nothing for `IDLE_TIMEOUT_SECONDS`, and a request waiting for its answer counts
 * as idle: a build whose chain read takes its full timeout and one retry (up to 2 × EVM_RPC_TIMEOUT_MS), or a TON
 * verify through several slow calls, lost its answer to an empty reply. The limit is lifted once a request is read
 * (its body included, so a stalled body is still closed) and set again with its answer, a result or an error (once
 * it has gone out is too late: the connection would then stay open however long it sat idle). It is lifted from the
 * transform stage, where the guard checks the key and admits the request, not only from the handler: a store gone
 * silent answers the key check's 503 after its timeout plus 2 s (12 s), and an audit's clients got an empty reply at
 * 8-12 s instead. The parse hook's key check, before a body is read, lifts it for as long as it waits (`notIdleWhile`).
 */
import type { Server } from 'bun'
import { Elysia } from 'elysia'

export const IDLE_TIMEOUT_SECONDS = 10

// The server of each request whose limit is lifted: an error's context does not always carry it.
const lifted = new WeakMap<Request, Server<unknown>>()

const restore = ({ request }: { request: Request }) => {
  lifted.get(request)?.timeout(request, IDLE_TIMEOUT_SECONDS)
  lifted.delete(request)
}

/** Runs `wait` (a store or meter call) with the request's idle limit lifted, and sets the limit again after it. */
export async function notIdleWhile<T>(server: Server<unknown> | null | undefined, request: Request, wait: () => Promise<T>): Promise<T> {
  if (!server) return wait()
  server.timeout(request, 0)
  try {
    return await wait()
  } finally {
    server.timeout(request, IDLE_TIMEOUT_SECONDS)
  }
}

export const idleWhileAnswering = new Elysia({ name: 'earn/idle' })
  .onTransform({ as: 'global' }, ({ server, request }) => {
    if (!server) return
    server.timeout(request, 0)
    lifted.set(request, server)
  })
  .onAfterHandle({ as: 'global' }, restore)
  .onError({ as: 'global' }, restore)
