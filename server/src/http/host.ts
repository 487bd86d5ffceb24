/**
 * Every request must name its host: RFC 9112 (3.2) makes an HTTP/1.1 request without `Host` a 400. Bun hands such
 * a request (an empty `Host`, or HTTP/1.0 without one) a relative URL, on which finding the path by position, as
 * routing does, goes wrong.
 */
import { InvalidArgumentError } from '@earn/core'
import { Elysia } from 'elysia'

export const hostRequired = new Elysia({ name: 'earn/host' }).onRequest(({ request }) => {
  if (request.url.charCodeAt(0) === 47 /* '/' */)
    throw new InvalidArgumentError('the request has no Host header; send one (HTTP/1.1 requires it)', { host: 'missing' })
})
