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

/** The path of an absolute request URL, without building a URL object on every request. */
function pathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  if (start < 0) return '/'
  const query = url.indexOf('?', start)
  return query < 0 ? url.slice(start) : url.slice(start, query)
}

export const privateAnswers = new Elysia({ name: 'earn/private-answers' }).onRequest(({ request, set }) => {
  if (SHARED.has(pathOf(request.url))) return
  set.headers['cache-control'] = 'no-store'
  // After CORS's `Vary: Origin` where it set one.
  const vary = set.headers.vary
  set.headers.vary = vary ? `${vary}, X-API-Key` : 'X-API-Key'
})
