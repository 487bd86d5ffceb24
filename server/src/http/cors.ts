/**
 * Browsers: publishable keys are for client-side code (SPEC), so a page on another origin must be able to call the
 * API. A preflight (OPTIONS with Access-Control-Request-Method) is answered here, before routing, the key check and
 * the meter: a browser sends it without the key. Other responses to an allowed origin say it may read them and
 * the metering headers. Only requests carrying an Origin header (browsers) get any of this: other clients pay
 * nothing for it.
 */
import { Elysia } from 'elysia'
import { addVary } from './privateAnswers.ts'

// Every metering header (SPEC's six, and the 429's reset time and Retry-After), the request id, and the mark of an
// answer given again for an Idempotency-Key.
const EXPOSED_HEADERS = [
  'x-request-id',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-used',
  'x-ratelimit-reset',
  'x-monthly-limit',
  'x-monthly-usage',
  'x-monthly-remaining',
  'retry-after',
  'idempotent-replayed',
]
const EXPOSED = EXPOSED_HEADERS.join(', ')
const PREFLIGHT = {
  'access-control-allow-methods': 'GET, POST',
  'access-control-allow-headers': 'content-type, x-api-key, x-request-id, idempotency-key',
  // Browsers cap it lower (Chrome 2 h); ten minutes bounds how long a narrowed CORS_ORIGINS takes to be seen.
  'access-control-max-age': '600',
}

export function cors(origins: '*' | readonly string[] | null) {
  const plugin = new Elysia({ name: 'earn/cors' })
  if (origins === null) return plugin
  const allowOf = (origin: string) => (origins === '*' ? '*' : origins.includes(origin) ? origin : undefined)
  return plugin.onRequest(({ request, set }) => {
    // With a list the answer depends on the origin, so shared caches must key on it: every answer says so, also one to
    // no origin or a refused one (a cache keeping such a copy would serve it, without the CORS headers, to a page of
    // an allowed origin: an audit).
    const vary: Record<string, string> = origins === '*' ? {} : { vary: 'Origin' }
    if (origins !== '*') addVary(set.headers, 'Origin')
    const origin = request.headers.get('origin')
    if (origin === null) return
    const allow = allowOf(origin)
    if (allow === undefined) return
    if (request.method === 'OPTIONS' && request.headers.has('access-control-request-method'))
      return new Response(null, { status: 204, headers: { ...PREFLIGHT, 'access-control-allow-origin': allow, ...vary } })
    set.headers['access-control-allow-origin'] = allow
    set.headers['access-control-expose-headers'] = EXPOSED
  })
}
