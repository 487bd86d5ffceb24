/**
 * The per-operation guard: API key, cost-unit metering, then key scope, before the request's schema
 * is validated, so a request without a valid key is 401 whatever its body. Metering comes before the
 * scope check so every answer to a valid key (a scope 401 too) carries its usage headers.
 */
import { ApiError, InvalidArgumentError, type KeyWithOrganization, quoted, UnauthorizedError, UnavailableError } from '@earn/core'
import { type OperationId, OPERATIONS } from '@earn/core/metering/costs'
import { budgetOf, meterHeaders } from '@earn/core/metering/meter'
import type { Deps } from '../deps.ts'
import { BadStringInBody, BODY_TOO_LARGE, MALFORMED_JSON, OVER_BUDGET_BODY, PayloadTooLargeError, UNAUTHENTICATED_BODY, UnreadableBody } from './parse.ts'
import { pathOf, requestState } from './request.ts'

const UNAUTHORIZED_TEXT = {
  MISSING: 'missing API key: send your key in the X-API-Key header',
  MALFORMED: 'invalid API key: a key is pk_live_ or sk_live_ and base58 characters, at most 128 in all, sent in one X-API-Key header',
  NOT_FOUND: 'invalid API key: no such key',
  REVOKED: 'invalid API key: this key was revoked',
} as const

export class RateLimitedError extends ApiError {
  constructor(which: 'hourly' | 'monthly', cost: number, limit: number) {
    // An operation dearer than the whole budget is refused in every window: waiting for the reset would not help.
    super(
      'RESOURCE_EXHAUSTED',
      cost > limit
        ? `this operation costs ${cost} cost units, more than this API key's whole ${which} budget of ${limit}: no ${which === 'hourly' ? 'hour' : 'month'} admits it; ` +
            'the operator raises this key\'s budget (`bun run cli key budget`)'
        : `${which} cost-unit budget exhausted for this API key; retry after the window resets`,
      { budget: which },
    )
  }
}

/**
 * A valid key's usage headers for an answer that charges nothing (a path no route takes, a body to send again): a
 * cost-0 admit. A key past a lowered budget is refused even that, but such an answer is no 429 to wait out, so it
 * carries no Retry-After. A meter that cannot answer now leaves the answer without them.
 */
export async function unchargedUsage(deps: Pick<Deps, 'meter' | 'clock'>, record: KeyWithOrganization): Promise<Record<string, string>> {
  try {
    const now = deps.clock.now()
    const { 'retry-after': _, 'x-ratelimit-reset': __, ...usage } = meterHeaders(await deps.meter.admit({ keyId: record.key.id, cost: 0, budget: budgetOf(record), now }), now)
    return usage
  } catch {
    return {}
  }
}

export async function guard(
  deps: Deps,
  id: OperationId,
  parameters: readonly string[] | null,
  ctx: { request: Request; set: { headers: Record<string, unknown> }; body?: unknown; params?: Record<string, unknown> },
) {
  const state = requestState(ctx.request)
  const policy = OPERATIONS[id]
  // The rest of an oversized body is never read: closing the connection drops it, where keeping the connection
  // would hold a graceful shutdown for as long as the client takes to send it. Whatever the answer (401, 413).
  if (ctx.body === BODY_TOO_LARGE || ctx.body === UNAUTHENTICATED_BODY || ctx.body === OVER_BUDGET_BODY) ctx.set.headers.connection = 'close'
  const verified = await deps.keys.verify(ctx.request.headers.get('x-api-key'))
  if (verified.code !== 'VALID') throw new UnauthorizedError(UNAUTHORIZED_TEXT[verified.code])
  // Valid now, not when the body came (a key created meanwhile, a store that answered again): the body was not read.
  if (ctx.body === UNAUTHENTICATED_BODY) {
    // Not charged (nothing was served), but told its usage, as every answer to a valid key is.
    if (state) state.headers = await unchargedUsage(deps, verified.record)
    throw new UnavailableError('the API key could not be checked when the request arrived, so its body was not read; send the request again', { 'x-api-key': 'checked late' })
  }
  const { key, organization } = verified.record
  if (state) state.auth = { kind: verified.kind, keyId: key.id, organization }

  const now = deps.clock.now()
  // Its body was not read, the budget spent when it came (parse.ts). Refused below as any request then, uncharged; a
  // window that reset meanwhile would admit it, and it is asked again instead, unserved and uncharged.
  if (ctx.body === OVER_BUDGET_BODY) {
    const spent = await deps.meter.admit({ keyId: key.id, cost: 0, budget: budgetOf(verified.record), now })
    const fits = (w: { limit: number | null; used: number }) => w.limit === null || w.used + policy.cost <= w.limit
    if (fits(spent.hourly) && fits(spent.monthly)) {
      if (state) state.headers = meterHeaders(spent, now)
      throw new UnavailableError('the budget of this API key was spent when the request arrived, so its body was not read; it has been renewed since: send the request again', {
        'x-api-key': 'budget renewed',
      })
    }
  }
  const decision = await deps.meter.admit({
    keyId: key.id,
    cost: policy.cost,
    budget: budgetOf(verified.record),
    now,
  })
  const headers = meterHeaders(decision, now)
  if (state) state.headers = headers
  Object.assign(ctx.set.headers, headers)
  // No budget refused it: the shared meter could not count it, and nothing is admitted uncounted (METER_REDIS_OUTAGE).
  if (decision.unavailable !== undefined)
    throw new UnavailableError(`this server cannot meter requests now (${decision.unavailable}) and admits none it cannot count; retry shortly`, { meter: 'unavailable' })
  if (!decision.admitted) {
    const which = decision.refusedBy ?? 'hourly'
    throw new RateLimitedError(which, policy.cost, (which === 'monthly' ? decision.monthly.limit : decision.hourly.limit) ?? Number.POSITIVE_INFINITY)
  }

  // Renewed between the check above and this admit: charged, but its body is not here to serve.
  if (ctx.body === OVER_BUDGET_BODY) throw new UnavailableError('the budget of this API key was renewed while the request arrived; send the request again', { 'x-api-key': 'budget renewed' })
  if (policy.key === 'secret' && verified.kind !== 'secret')
    throw new UnauthorizedError('this endpoint requires a secret key (sk_live_); publishable keys may only read', {
      'x-api-key': 'secret key required',
    })
  // A removed endpoint (an operation taking any query) answers "removed" whatever its caller sends: a body or query it
  // would not have taken had hidden that it is gone, and charged a 400 (an audit).
  if (parameters === null) return
  if (ctx.body === BODY_TOO_LARGE) throw new PayloadTooLargeError()
  if (ctx.body === MALFORMED_JSON) throw new InvalidArgumentError('request body is not valid JSON', { body: 'malformed JSON' })
  if (ctx.body instanceof UnreadableBody) throw new InvalidArgumentError(ctx.body.message, { [ctx.body.field]: ctx.body.problem })
  if (ctx.body instanceof BadStringInBody) throw ctx.body.problem === 'nul' ? nulError(ctx.body.field) : loneSurrogateError(ctx.body.field)
  const query = ctx.request.url.indexOf('?')
  // A NUL reaches a URL only percent-encoded; no path segment or query value takes one.
  if (ctx.request.url.includes('%00')) throw nulError(query >= 0 && ctx.request.url.slice(query).includes('%00') ? 'query' : 'path')
  if (query >= 0) checkQuery(ctx.request.url.slice(query + 1), parameters)
  refuseUndecodablePath(ctx.request.url, query, ctx.params)
}

/**
 * A path segment that does not percent-decode is 400. Through `app.handle` Elysia gives validation null for it, but
 * a listening Bun server decodes it leniently (U+FFFD for the bad escape), so the route would answer "not found".
 */
function refuseUndecodablePath(url: string, query: number, params: Record<string, unknown> | undefined) {
  const path = query >= 0 ? url.slice(0, query) : url
  if (!path.includes('%')) return
  const bad = pathOf(path).split('/').find((segment) => !decodes(segment))
  if (bad === undefined) return
  // The parameter it fed: the one whose value is null (app.handle) or holds the replacement character (Bun.serve).
  const field = Object.entries(params ?? {}).find(([, v]) => v === null || (typeof v === 'string' && v.includes('\uFFFD')))?.[0] ?? 'path'
  throw new InvalidArgumentError(`path segment ${bad} is not valid percent-encoding`, { [field]: 'is not valid percent-encoding' })
}

function decodes(segment: string): boolean {
  try {
    decodeURIComponent(segment)
    return true
  } catch {
    return false
  }
}

/**
 * Every query parameter is one the operation takes, given once (lists are comma-separated) and with a value:
 * validation would drop an unknown one and keep one value of a repeated one, and an empty one read as absent
 * (`state=` from a client whose variable was unset listed every stream), answering a question the client did not ask.
 */
function checkQuery(search: string, parameters: readonly string[] | null) {
  const seen = new Set<string>()
  // URLSearchParams drops a leading `?`: given the `?` the query began with, a second one stays in the name, as the
  // router reads it.
  for (const [key, value] of new URLSearchParams(`?${search}`)) {
    if (parameters && !parameters.includes(key)) throw unknownParameter(key, parameters)
    if (seen.has(key)) throw new InvalidArgumentError(`query parameter ${quoted(key)} is given more than once; give it once (lists are comma-separated)`, { [quoted(key)]: 'repeated' })
    seen.add(key)
    if (value === '') throw new InvalidArgumentError(`query parameter ${quoted(key)} is empty; give it a value, or leave it out where it is optional`, { [quoted(key)]: 'must not be empty' })
  }
}

// A name the client wrote is shown cut (as every id it sends is): one of 900 KB came back twice, in the message and as
// the context's key.
function unknownParameter(name: string, parameters: readonly string[]) {
  const key = quoted(name)
  // `chainIds[]=1` is how several clients send a list by default.
  const base = name.endsWith('[]') ? name.slice(0, -2) : undefined
  if (base !== undefined && parameters.includes(base))
    return new InvalidArgumentError(`query parameter ${key}: send ${base} once, a list comma-separated (${base}=a,b)`, { [key]: `unknown; send ${base}` })
  const takes = parameters.length ? `it takes ${parameters.join(', ')}` : 'it takes none'
  const named = key === '' ? 'a query parameter without a name (`?=…`)' : `query parameter ${key}`
  return new InvalidArgumentError(`${named} is not one this operation takes; ${takes}`, { [key]: 'unknown' })
}

const nulError = (path: string, field = quoted(path)) =>
  new InvalidArgumentError(`${field} contains a NUL character (\\u0000), which no field accepts`, { [field]: 'contains a NUL character' })
const loneSurrogateError = (path: string, field = quoted(path)) =>
  new InvalidArgumentError(`${field} contains a lone surrogate (a \\ud800-\\udfff escape without its pair), which is no character`, {
    [field]: 'contains a lone surrogate',
  })
