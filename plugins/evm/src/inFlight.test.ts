import { afterAll, describe, expect, test } from 'bun:test'
import { atMostInFlight } from './inFlight.ts'

describe('atMostInFlight', () => {
  // A node that answers each request after 30 ms, counting how many it holds at once.
  let [inFlight, maxInFlight, served] = [0, 0, 0]
  const node = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      inFlight++
      maxInFlight = Math.max(maxInFlight, inFlight)
      await Bun.sleep(30)
      inFlight--
      served++
      return new Response(await req.text())
    },
  })
  afterAll(() => node.stop(true))
  const url = `http://127.0.0.1:${node.port}`
  const reset = () => ([inFlight, maxInFlight, served] = [0, 0, 0])

  test('sends at most `cap` at once, the rest in their turn, every answer its own', async () => {
    reset()
    const limited = atMostInFlight(fetch, 4)
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => limited(url, { method: 'POST', body: String(i) }).then((r) => r.text())))
    expect(answers).toEqual(Array.from({ length: 20 }, (_, i) => String(i)))
    expect(maxInFlight).toBe(4)
  })

  test('a request whose deadline passes while it waits leaves unsent, and its place is not lost', async () => {
    reset()
    const limited = atMostInFlight(fetch, 2)
    const first = [limited(url, { method: 'POST', body: 'a' }), limited(url, { method: 'POST', body: 'b' })]
    const late = await limited(url, { method: 'POST', body: 'late', signal: AbortSignal.timeout(5) }).catch((e: unknown) => e)
    expect((late as Error).name).toBe('TimeoutError')
    await Promise.all(first)
    expect(served).toBe(2)
    // Both slots are free again: two more run side by side.
    await Promise.all([limited(url, { method: 'POST', body: 'c' }), limited(url, { method: 'POST', body: 'd' })])
    expect([served, maxInFlight]).toEqual([4, 2])
    const aborted = await limited(url, { method: 'POST', body: 'x', signal: AbortSignal.abort() }).catch((e: unknown) => e)
    expect((aborted as Error).name).toBe('AbortError')
    expect(served).toBe(4)
  })
})
