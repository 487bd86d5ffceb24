/**
 * The preflight bench's socket load generator reads answers by Content-Length itself; a slip there would count
 * requests that were never answered, or stall, and the bench would print a wrong figure without failing.
 */
import { afterAll, expect, test } from 'bun:test'
import { requestBytes, socketClosedLoop } from '../../bench/load.ts'

let received = 0
const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  async fetch(req) {
    received++
    const url = new URL(req.url)
    if (url.pathname === '/chunked')
      // A part now and the rest later: Bun sends it chunked (a body that ends at once gets a Content-Length).
      return new Response(
        new ReadableStream({
          start: (c) => c.enqueue(new TextEncoder().encode('a')),
          async pull(c) {
            await Bun.sleep(20)
            c.enqueue(new TextEncoder().encode('part'))
            c.close()
          },
        }),
      )
    const body = await req.text()
    // Large answers arrive in several reads; the status follows the body so each answer can be told apart.
    const size = Number(url.searchParams.get('size'))
    return new Response('x'.repeat(size) + body, { status: body === 'teapot' ? 418 : 200 })
  },
})
afterAll(() => server.stop(true))
const origin = `http://127.0.0.1:${server.port}`

test('every answer is counted once, by its status, across answers larger than one read', async () => {
  received = 0
  const requests = [
    requestBytes(`${origin}/?size=10`, { method: 'POST', body: 'ok' }),
    requestBytes(`${origin}/?size=300000`, { method: 'POST', body: 'teapot' }),
  ]
  const r = await socketClosedLoop({ origins: [origin], connections: 4, durationMs: 300, request: (i) => requests[i % 2]! })
  expect(r.requests).toBeGreaterThan(10)
  // A closed loop ends with every request answered: the server saw exactly the requests counted.
  expect(r.requests).toBe(received)
  expect((r.statuses[200] ?? 0) + (r.statuses[418] ?? 0)).toBe(r.requests)
  expect(Math.abs((r.statuses[200] ?? 0) - (r.statuses[418] ?? 0))).toBeLessThanOrEqual(4)
  expect(r.latencies.length).toBe(r.requests)
})

test('an answer without Content-Length fails the run instead of being miscounted', async () => {
  const request = requestBytes(`${origin}/chunked`, { method: 'GET' })
  await expect(socketClosedLoop({ origins: [origin], connections: 1, durationMs: 200, request: () => request })).rejects.toThrow(/without content-length/)
})
