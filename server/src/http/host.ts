/**
 * Every request must name one valid host: RFC 9112 (3.2) makes an HTTP/1.1 request without `Host`, with several or
 * with an invalid one a 400. Bun hands a request without a usable one (an empty or invalid `Host`, or HTTP/1.0
 * without one) a relative URL, on which finding the path by position, as routing does, goes wrong.
 */
import { InvalidArgumentError } from '@earn/core'
import { Elysia } from 'elysia'

/** A request without one valid Host: refused before any route, so the error hook adds a valid key's usage itself. */
export class HostError extends InvalidArgumentError {}

/** The health probes' paths, answered without a Host (see `hostRequired`). */
const PROBES = /^\/(healthz|readyz)(\?|$)/

/**
 * `probe` answers a health probe sent without a Host, as an absolute request: a load balancer's default check is often
 * HTTP/1.0 without one (HAProxy's `option httpchk GET /readyz`), and a 400 to it took every server out of rotation.
 */
export const hostRequired = (probe: (request: Request) => Response | Promise<Response>) => new Elysia({ name: 'earn/host' }).onRequest(({ request }) => {
  const host = request.headers.get('host')
  if (request.url.charCodeAt(0) === 47 /* '/' */) {
    if (!host && PROBES.test(request.url)) return probe(new Request(`http://localhost${request.url}`, { method: request.method, headers: request.headers }))
    // Bun gives a Host it cannot use (`a b`, `a/b`, `a@b`) the same relative URL as none.
    if (host) throw new HostError(`the Host header ${JSON.stringify(asSent(host).slice(0, 64))} is not a host; send the server's host name and port`, { host: 'invalid' })
    throw new HostError('the request has no Host header; send one (HTTP/1.1 requires it)', { host: 'missing' })
  }
  // Several Host lines arrive joined by a comma, which no host name holds (RFC 9112 3.2: one Host, else 400).
  if (host?.includes(',')) throw new HostError('the request has more than one Host header; send one', { host: 'repeated' })
})

/**
 * A header as the client wrote it: Bun reads header bytes as Latin-1, so a UTF-8 name (`é`) came back as `Ã©`. Bytes
 * that are no UTF-8 stay as read.
 */
function asSent(value: string): string {
  if (!/[\u0080-\u00ff]/.test(value)) return value
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(value, 'latin1'))
  } catch {
    return value
  }
}
