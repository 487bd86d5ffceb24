/** Request id on every response and one structured log line per request. */
import { Elysia } from 'elysia'
import { type Clock, maskKeys, quoted } from '@earn/core'
import type { Logger } from '../logger.ts'
import { pathOf, requestState, startRequest } from './request.ts'

export const requestLogging = (deps: { clock: Clock; logger: Logger; enabled: boolean }) => {
  const plugin = new Elysia({ name: 'earn/request-log' }).onRequest(({ request, set }) => {
    const state = startRequest(request, performance.now())
    set.headers['x-request-id'] = state.id
  })
  // Registered only when logging is on: an after-response hook costs every request even when it returns at once.
  if (!deps.enabled) return plugin
  return plugin.onAfterResponse({ as: 'global' }, ({ request, set, route }) => {
      const state = requestState(request)
      if (!state) return
      deps.logger.info({
        requestId: state.id,
        method: request.method,
        ...(route ? { route } : { route: '(no route)', path: loggedPath(request.url) }),
        status: state.status ?? (typeof set.status === 'number' ? set.status : 200),
        durationMs: Math.round((performance.now() - state.startedAt) * 100) / 100,
        org: state.auth?.organization.id,
      })
    })
}

/** An unrouted path, as the 404 quotes it (cut to 80 characters), keys masked (the logger never takes a key). */
const loggedPath = (url: string): string => quoted(maskKeys(pathOf(url)))
