/**
 * API answers depend on the caller's X-API-Key (its organization's streams and activity, its usage headers), but a
 * shared cache keys on the URL alone for a custom header, as it does not for Authorization (RFC 9111 3.5): a CDN or
 * proxy told to cache everything would serve one organization's answer to another, or to a caller with no key, and
 * uncharged (an audit). So every answer but the API document says `no-store` and varies by the key. The health probes
 * are no-store too: a cached readiness would keep a dead process in rotation.
 */
import { Elysia } from 'elysia'

/** The key-free documents, the same for every caller. */
const SHARED = new Set(['/openapi.json', '/docs'])

/** The path of a request URL (absolute, or relative as Bun gives one without a usable Host), without a URL object. */
function pathOf(url: string): string {
  const start = url.charCodeAt(0) === 47 /* '/' */ ? 0 : url.indexOf('/', url.indexOf('//') + 2)
  if (start < 0) return '/'
  const query = url.indexOf('?', start)
  return query < 0 ? url.slice(start) : url.slice(start, query)
}

/** `name` added to the answer's Vary, beside what another hook put there. */
export function addVary(headers: Record<string, string | number>, name: string): void {
  const vary = headers.vary
  headers.vary = vary ? `${vary}, ${name}` : name
}

/**
 * First among the hooks that may answer (the Host check's 400 carries a key's usage too). A CORS preflight is left
 * alone: it carries no key, and the browser keeps it for its Access-Control-Max-Age.
 */
export const privateAnswers = new Elysia({ name: 'earn/private-answers' }).onRequest(({ request, set }) => {
  const method = request.method
  if (method === 'OPTIONS' && request.headers.has('access-control-request-method')) return
  if ((method === 'GET' || method === 'HEAD') && SHARED.has(pathOf(request.url))) return
  set.headers['cache-control'] = 'no-store'
  addVary(set.headers, 'X-API-Key')
})
