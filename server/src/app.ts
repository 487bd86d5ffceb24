/**
 * The HTTP application: cross-cutting plugins first, then one Elysia instance per feature.
 * No handler logic lives here.
 */
import { Elysia } from 'elysia'
import type { Deps } from './deps.ts'
import { healthRoutes } from './features/health/routes.ts'
import { legacyRoutes } from './features/legacy/routes.ts'
import { actionRoutes } from './features/actions/routes.ts'
import { membershipRoutes } from './features/membership/routes.ts'
import { opportunityRoutes } from './features/opportunities/routes.ts'
import { portfolioRoutes } from './features/portfolio/routes.ts'
import { activityRoutes } from './features/activity/routes.ts'
import { streamRoutes } from './features/streams/routes.ts'
import { apiDocs } from './http/docs.ts'
import { errorHandling } from './http/errors.ts'
import { cors } from './http/cors.ts'
import { privateAnswers } from './http/privateAnswers.ts'
import { hostRequired } from './http/host.ts'
import { idleWhileAnswering } from './http/idle.ts'
import { bodyParsing } from './http/parse.ts'
import { requestLogging } from './http/requestLog.ts'

export const API_VERSION = '2.0.0'

/** Each route's cost in units (its operation's `x-cost-units`), by method and path pattern, read once routes are in. */
function routeCosts(routes: readonly { method: string; path: string; hooks: unknown }[]): Map<string, number> {
  const costs = new Map<string, number>()
  for (const r of routes) {
    const cost = (r.hooks as { detail?: Record<string, unknown> } | undefined)?.detail?.['x-cost-units']
    if (typeof cost === 'number') costs.set(`${r.method} ${r.path}`, cost)
  }
  return costs
}

export function createApp(deps: Deps) {
  let costs: Map<string, number> | undefined
  // Set once the routes are in (below); the first request with a body reads them, never before the app listens.
  let routes: () => readonly { method: string; path: string; hooks: unknown }[] = () => []
  // Set once the app is made (below): a health probe without a Host is handled again as an absolute request.
  let handle: (request: Request) => Promise<Response> = () => Promise.reject(new Error('the app is not made yet'))
  // standardHostname off: Elysia would otherwise find the path after the 11th character of the URL, past the end
  // of a short host (`http://api/v2/...`, what a proxy to an upstream named `api` sends).
  const app = new Elysia({ name: 'earn-api', handler: { standardHostname: false } })
    .use(requestLogging({ clock: deps.clock, logger: deps.logger, enabled: deps.config.logRequests }))
    // Before the error handling, whose onError answers and so ends the chain: the idle limit is set again first.
    .use(idleWhileAnswering)
    .use(errorHandling(deps))
    .use(privateAnswers)
    // Before the Host check, whose 400 then varies by Origin as every answer does where CORS_ORIGINS lists origins.
    .use(cors(deps.config.corsOrigins))
    .use(hostRequired((probe) => handle(probe)))
    .use(bodyParsing(deps, (method, route) => (costs ??= routeCosts(routes())).get(`${method} ${route}`)))
    .use(healthRoutes(deps))
    .use(membershipRoutes(deps))
    .use(opportunityRoutes(deps))
    .use(actionRoutes(deps))
    .use(portfolioRoutes(deps))
    .use(activityRoutes(deps))
    .use(streamRoutes(deps))
    .use(legacyRoutes(deps))
  routes = () => app.routes
  handle = (request) => app.handle(request)
  return app.use(apiDocs(API_VERSION, () => app))
}

export type App = ReturnType<typeof createApp>
