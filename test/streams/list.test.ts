/**
 * GET /v2/streams and the passage of time: the list is the organization's own, newest first, paginated and
 * filtered on the state as read now; a running stream past its end reads as completed and refuses transitions.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { manualClock } from '@earn/core'
import { expectEnvelope, type Json } from '../harness.ts'
import { startStreamsEnv, type StreamsEnv } from './setup.ts'

setDefaultTimeout(60_000)

const DAY = 86_400_000
const clock = manualClock(Date.UTC(2031, 0, 1))
let env: StreamsEnv
let key: string
/** Created oldest first; ends after 1..5 days. */
const ids: string[] = []

beforeAll(async () => {
  env = await startStreamsEnv({ clock })
  key = await env.organization()
  for (let i = 1; i <= 5; i++) {
    clock.advance(1000)
    const r = await env.h.post('/v2/streams', env.pointBody({ pointName: `XP ${i}`, endTime: new Date(clock.now() + i * DAY).toISOString() }), { key })
    expect(r.status, r.text).toBe(200)
    ids.push(r.body.stream.id)
  }
})
afterAll(() => env.stop())

const list = (query = '') => env.h.get(`/v2/streams${query}`, { key })
const idsOf = (body: Json) => (body.streams as Json[]).map((s) => ids.indexOf(s.id))

describe('the list', () => {
  test('newest first, in pages, with the pagination object', async () => {
    const first = await list('?limit=2')
    expect(first.status).toBe(200)
    expect(idsOf(first.body)).toEqual([4, 3])
    expect(first.body.total).toBe(5)
    expect(first.body.pagination).toEqual({ page: 1, limit: 2, total: 5, totalPages: 3, hasNext: true, hasPrevious: false })
    const last = await list('?limit=2&page=3')
    expect(idsOf(last.body)).toEqual([0])
    expect(last.body.pagination).toMatchObject({ page: 3, hasNext: false, hasPrevious: true })
    const past = await list('?limit=2&page=4')
    expect(past.status).toBe(200)
    expect(past.body.streams).toEqual([])
    expect((await list()).body.pagination).toMatchObject({ limit: 20 })
  })

  test('only the organization its key belongs to', async () => {
    const mine = await env.h.get('/v2/streams')
    expect((mine.body.streams as Json[]).some((s) => ids.includes(s.id))).toBe(false)
  })

  test('filtered by state', async () => {
    expect((await env.h.post(`/v2/streams/${ids[2]}/cancel`, undefined, { key })).body.stream.state).toBe('cancelled')
    expect((await env.h.post(`/v2/streams/${ids[3]}/pause`, undefined, { key })).body.stream.state).toBe('paused')
    expect(idsOf((await list('?state=cancelled')).body)).toEqual([2])
    expect(idsOf((await list('?state=paused')).body)).toEqual([3])
    expect(idsOf((await list('?state=active')).body)).toEqual([4, 1, 0])
    expect((await list('?state=pending')).body.total).toBe(0)
  })

  test.each([
    ['?state=running', 'state'],
    ['?limit=0', 'limit'],
    ['?limit=101', 'limit'],
    ['?page=0', 'page'],
    ['?page=two', 'page'],
  ])('%s is 400 naming the parameter', async (query, field) => {
    const r = await list(query)
    expect(r.status).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(Object.keys(r.body.context)).toEqual([field])
  })
})

describe('after the end', () => {
  test('running streams past their end read as completed, in get and in the list; cancelled ones stay cancelled', async () => {
    clock.advance(2 * DAY + 5000)
    // Ends after 1 and 2 days: completed. Stream 2 was cancelled; 3 (paused) and 4 still run.
    expect(idsOf((await list('?state=completed')).body)).toEqual([1, 0])
    expect((await env.h.get(`/v2/streams/${ids[0]}`, { key })).body.stream.state).toBe('completed')
    expect((await env.h.get(`/v2/streams/${ids[2]}`, { key })).body.stream.state).toBe('cancelled')
    expect(idsOf((await list('?state=active')).body)).toEqual([4])
    clock.advance(10 * DAY)
    expect(idsOf((await list('?state=completed')).body)).toEqual([4, 3, 1, 0])
  })

  test('a completed stream refuses pause, resume and cancel', async () => {
    for (const action of ['pause', 'resume', 'cancel']) {
      const r = await env.h.post(`/v2/streams/${ids[0]}/${action}`, undefined, { key })
      expect(r.status).toBe(400)
      expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
      expect(r.body.context).toEqual({ state: 'completed', action })
    }
  })
})
