/**
 * Per-request state shared by the cross-cutting hooks. Keyed by the Request object because some
 * hooks (404, parse errors) run before Elysia has a route context to derive into.
 */
import type { KeyKind, Organization } from '@earn/core'

export interface RequestState {
  id: string
  startedAt: number
  auth?: { kind: KeyKind; keyId: string; organization: Organization }
  /** Metering headers for a valid key; sent on every response, errors and 429 included. */
  headers: Record<string, string>
  /** True once the key check ran (it runs at most once per request). */
  authenticated: boolean
  status?: number
}

const states = new WeakMap<Request, RequestState>()

/**
 * A client's request id, kept where it is an id: one shaped like an API key (pasted in error, as a key is easily) is
 * replaced, since the id is logged and sent back (an audit found a secret key in the log that way).
 */
const KEY_SHAPED = /[ps]k_live_/i

export function startRequest(request: Request, now: number): RequestState {
  const given = request.headers.get('x-request-id')?.slice(0, 64).replace(/[^\w.-]/g, '')
  const state: RequestState = {
    id: given && !KEY_SHAPED.test(given) ? given : crypto.randomUUID(),
    startedAt: now,
    headers: {},
    authenticated: false,
  }
  states.set(request, state)
  return state
}

export const requestState = (request: Request): RequestState | undefined => states.get(request)

/** The organization of the request's key; the guard has verified it before any handler runs. */
export function callerOrganization(request: Request): Organization {
  const organization = states.get(request)?.auth?.organization
  if (!organization) throw new Error('a handler ran without the guard: route options must spread operation()')
  return organization
}

/**
 * The path of a request URL. Bun hands a request without a Host header (HTTP/1.0, or an empty one) a relative URL,
 * which `new URL` alone refuses; such requests are refused with a 400, and that answer must not throw.
 */
export const pathOf = (url: string): string => new URL(url, 'http://host.invalid').pathname
