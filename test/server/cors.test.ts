/**
 * CORS: publishable keys are for browser code (SPEC), so a page on another origin can send the preflight, then the
 * call, and read the answer and its metering headers. `CORS_ORIGINS` narrows the origins or turns it off; a
 * request without Origin (not a browser) gets no CORS headers at all.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { parseConfig } from '@earn/core'
import { createHarness, expectEnvelope, type Harness } from '../harness.ts'

const PAGE = 'https://wallet.example'
const preflight = (h: Harness, path: string, origin = PAGE, method = 'POST') =>
  h.request('OPTIONS', path, { key: null, headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'content-type, x-api-key' } })

describe('any origin (the default)', () => {
  let h: Harness
  beforeAll(async () => {
    h = await createHarness()
  })
  afterAll(() => h.close())

  test('a preflight, with no key, is 204 allowing GET and POST with x-api-key, content-type and idempotency-key, and is not metered', async () => {
    for (const path of ['/v2/membership/agreement', '/v2/opportunities/', '/v2/actions/deposit/00000000-0000-4000-8000-000000000000']) {
      const r = await preflight(h, path)
      expect(r.status).toBe(204)
      expect(r.headers.get('access-control-allow-origin')).toBe('*')
      expect(r.headers.get('access-control-allow-methods')).toBe('GET, POST')
      expect(r.headers.get('access-control-allow-headers')).toBe('content-type, x-api-key, x-request-id, idempotency-key')
      expect(r.headers.get('x-ratelimit-used')).toBeNull()
    }
  })

  test('the call itself, answered or refused, lets the page read the body and the metering headers', async () => {
    const ok = await h.get('/v2/opportunities/', { key: h.org.publishableKey, headers: { origin: PAGE } })
    expect(ok.status).toBe(200)
    expect(ok.headers.get('access-control-allow-origin')).toBe('*')
    const exposed = ok.headers.get('access-control-expose-headers')!.split(', ')
    // SPEC's six metering headers, and the 429's reset time and Retry-After (DECISIONS), whether sent here or not; the
    // mark of an answer given again for an Idempotency-Key.
    for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-used', 'x-monthly-limit', 'x-monthly-usage', 'x-monthly-remaining', 'x-ratelimit-reset', 'retry-after', 'x-request-id', 'idempotent-replayed'])
      expect(exposed).toContain(name)
    const refused = await h.get('/v2/opportunities/', { key: null, headers: { origin: PAGE } })
    expectEnvelope(refused.body, 401, 'UNAUTHORIZED')
    expect(refused.headers.get('access-control-allow-origin')).toBe('*')
  })

  test('every answer but the API document is no-store and varies by X-API-Key: a shared cache keys a custom header on the URL alone', async () => {
    const answers = [
      await h.get('/v2/opportunities/', { key: h.org.publishableKey }),
      await h.get('/v2/streams', { key: h.org.secretKey }),
      await h.get('/v2/opportunities/', { key: null }),
      await h.get('/v2/nothing-here', { key: h.org.publishableKey }),
      await h.post('/v2/membership/agreement', {}),
      await h.get('/healthz', { key: null }),
    ]
    expect(answers.map((r) => [r.status, r.headers.get('cache-control'), r.headers.get('vary')])).toEqual([
      [200, 'no-store', 'X-API-Key'],
      [200, 'no-store', 'X-API-Key'],
      [401, 'no-store', 'X-API-Key'],
      [404, 'no-store', 'X-API-Key'],
      [400, 'no-store', 'X-API-Key'],
      [200, 'no-store', 'X-API-Key'],
    ])
    for (const path of ['/openapi.json', '/docs', '/openapi.json?v=2']) {
      const doc = await h.get(path, { key: null })
      expect([path, doc.headers.get('cache-control'), doc.headers.get('vary')]).toEqual([path, null, null])
    }
    // Only the documents themselves: another method on their paths is an answer like any other (a 404 with a key's usage).
    const posted = await h.post('/openapi.json', {})
    expect([posted.status, posted.headers.get('cache-control'), posted.headers.get('vary')]).toEqual([404, 'no-store', 'X-API-Key'])
  })

  test('a request without Origin gets no CORS headers, and OPTIONS without a preflight is still 404', async () => {
    const r = await h.get('/v2/opportunities/', { key: h.org.publishableKey })
    expect(r.headers.get('access-control-allow-origin')).toBeNull()
    const options = await h.request('OPTIONS', '/v2/opportunities/', { key: null })
    expectEnvelope(options.body, 404, 'NOT_FOUND')
  })
})

describe('CORS_ORIGINS', () => {
  let h: Harness
  beforeAll(async () => {
    h = await createHarness({ env: { CORS_ORIGINS: `${PAGE}, http://localhost:5173` } })
  })
  afterAll(() => h.close())

  test('a listed origin is named back, with Vary: Origin; another gets no CORS headers and its preflight is not answered', async () => {
    const allowed = await preflight(h, '/v2/opportunities/', 'http://localhost:5173', 'GET')
    expect([allowed.status, allowed.headers.get('access-control-allow-origin'), allowed.headers.get('vary')]).toEqual([204, 'http://localhost:5173', 'Origin'])
    const call = await h.get('/v2/opportunities/', { key: h.org.publishableKey, headers: { origin: PAGE } })
    expect([call.headers.get('access-control-allow-origin'), call.headers.get('vary')]).toEqual([PAGE, 'X-API-Key, Origin'])
    const other = await preflight(h, '/v2/opportunities/', 'https://evil.example', 'GET')
    expect(other.status).toBe(404)
    expect(other.headers.get('access-control-allow-origin')).toBeNull()
    const otherCall = await h.get('/v2/opportunities/', { key: h.org.publishableKey, headers: { origin: 'https://evil.example' } })
    expect(otherCall.status).toBe(200)
    expect(otherCall.headers.get('access-control-allow-origin')).toBeNull()
    // Every answer varies by origin, also one to another origin or to none, and a key-free one: a cache keying only on
    // the URL would serve a copy without the CORS headers to a listed page.
    const none = await h.get('/openapi.json', { key: null })
    expect([otherCall.headers.get('vary'), none.headers.get('vary')]).toEqual(['X-API-Key, Origin', 'Origin'])
  })

  test('none turns it off; a value that is no origin stops the start naming the variable', async () => {
    expect(parseConfig({ CORS_ORIGINS: 'none' }).corsOrigins).toBeNull()
    expect(parseConfig({}).corsOrigins).toBe('*')
    for (const bad of ['https://wallet.example/', 'wallet.example', 'ftp://x.example', 'https://a.example/path'])
      expect(() => parseConfig({ CORS_ORIGINS: bad })).toThrow(/^CORS_ORIGINS: .* is not an origin/)
  })
})
