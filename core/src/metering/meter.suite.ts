/**
 * One suite for every Meter (Hono's routers pattern): memory.test.ts runs it in-process,
 * test/meter.redis.test.ts against a real Redis. The clock is a value passed in, so windows are
 * moved by hand: rollover is tested at the exact millisecond of a UTC hour and month.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import type { Budget, Meter } from './meter.ts'

export interface MeterFixture {
  /** Meters sharing one count: one for the in-process meter, one per client ("process") for Redis. */
  meters: Meter[]
  close(): Promise<void>
}

const at = (iso: string) => Date.parse(iso)
const key = () => `key_${randomUUID()}`
const hourly = (n: number): Budget => ({ hourly: n, monthly: null })

export function runMeterSuite(name: string, make: () => Promise<MeterFixture>) {
  describe(`meter: ${name}`, () => {
    let fixture: MeterFixture
    let meter: Meter
    beforeAll(async () => {
      fixture = await make()
      meter = fixture.meters[0]!
    })
    afterAll(() => fixture.close())

    test('admits and charges both windows, reporting when each ends', async () => {
      const now = at('2031-01-31T22:30:00Z')
      const d = await meter.admit({ keyId: key(), cost: 3, budget: { hourly: 10, monthly: 50 }, now })
      expect(d).toEqual({
        admitted: true,
        refusedBy: undefined,
        hourly: { limit: 10, used: 3, resetAt: at('2031-01-31T23:00:00Z') },
        monthly: { limit: 50, used: 3, resetAt: at('2031-02-01T00:00:00Z') },
      })
    })

    test('refuses past the hourly budget, and a refused request is not charged', async () => {
      const k = key()
      const now = at('2031-03-10T08:00:00Z')
      const admit = (cost: number) => meter.admit({ keyId: k, cost, budget: hourly(10), now })
      expect((await admit(4)).hourly.used).toBe(4)
      expect((await admit(4)).hourly.used).toBe(8)
      const refused = await admit(4)
      expect(refused).toMatchObject({ admitted: false, refusedBy: 'hourly', hourly: { used: 8 }, monthly: { used: 8 } })
      // Had the refusal been charged, 8 + 4 + 2 would pass 10.
      expect(await admit(2)).toMatchObject({ admitted: true, hourly: { used: 10 }, monthly: { used: 10 } })
      expect(await admit(1)).toMatchObject({ admitted: false, hourly: { used: 10 } })
    })

    test('the hourly window rolls over at the UTC hour, the month keeps counting', async () => {
      const k = key()
      const admit = (now: number, cost = 5) => meter.admit({ keyId: k, cost, budget: hourly(10), now })
      await admit(at('2031-03-10T08:15:00Z'))
      await admit(at('2031-03-10T08:59:59.999Z'))
      const last = await admit(at('2031-03-10T08:59:59.999Z'))
      expect(last).toMatchObject({ admitted: false, refusedBy: 'hourly', hourly: { used: 10, resetAt: at('2031-03-10T09:00:00Z') } })
      const next = await admit(at('2031-03-10T09:00:00.000Z'))
      expect(next).toMatchObject({ admitted: true, hourly: { used: 5, resetAt: at('2031-03-10T10:00:00Z') }, monthly: { used: 15 } })
    })

    test('the monthly window rolls over at the UTC month, and at the year', async () => {
      const k = key()
      const budget = { hourly: 100, monthly: 6 }
      const admit = (iso: string) => meter.admit({ keyId: k, cost: 3, budget, now: at(iso) })
      await admit('2031-01-31T23:10:00Z')
      await admit('2031-01-31T23:59:59.999Z')
      expect(await admit('2031-01-31T23:59:59.999Z')).toMatchObject({
        admitted: false,
        refusedBy: 'monthly',
        monthly: { limit: 6, used: 6, resetAt: at('2031-02-01T00:00:00Z') },
      })
      expect(await admit('2031-02-01T00:00:00.000Z')).toMatchObject({
        admitted: true,
        hourly: { used: 3 },
        monthly: { used: 3, resetAt: at('2031-03-01T00:00:00Z') },
      })
      const y = key()
      const yearEnd = { keyId: y, cost: 6, budget, now: at('2031-12-31T23:59:59.999Z') }
      expect((await meter.admit(yearEnd)).admitted).toBe(true)
      expect((await meter.admit(yearEnd)).admitted).toBe(false)
      expect(await meter.admit({ ...yearEnd, now: at('2032-01-01T00:00:00Z') })).toMatchObject({
        admitted: true,
        monthly: { used: 6, resetAt: at('2032-02-01T00:00:00Z') },
      })
    })

    test('a monthly cap lower than the hourly budget refuses first', async () => {
      const k = key()
      const admit = () => meter.admit({ keyId: k, cost: 2, budget: { hourly: 100, monthly: 5 }, now: at('2031-05-05T05:05:00Z') })
      await admit()
      await admit()
      const refused = await admit()
      expect(refused).toMatchObject({ admitted: false, refusedBy: 'monthly', hourly: { limit: 100, used: 4 }, monthly: { limit: 5, used: 4 } })
    })

    test('when both budgets would refuse, the monthly cap is named', async () => {
      const k = key()
      const admit = () => meter.admit({ keyId: k, cost: 2, budget: { hourly: 4, monthly: 4 }, now: at('2031-05-05T05:05:00Z') })
      await admit()
      await admit()
      expect((await admit()).refusedBy).toBe('monthly')
    })

    test('keys are metered apart, and a budget is read per request', async () => {
      const [a, b] = [key(), key()]
      const now = at('2031-06-01T12:00:00Z')
      expect((await meter.admit({ keyId: a, cost: 5, budget: hourly(5), now })).admitted).toBe(true)
      expect((await meter.admit({ keyId: b, cost: 5, budget: hourly(5), now })).admitted).toBe(true)
      expect((await meter.admit({ keyId: a, cost: 1, budget: hourly(5), now })).admitted).toBe(false)
      // An operator raised the key's budget: the next request sees it, the usage is kept.
      expect(await meter.admit({ keyId: a, cost: 1, budget: hourly(6), now })).toMatchObject({ admitted: true, hourly: { limit: 6, used: 6 } })
    })

    test('admits sent together are decided in the order they were made, each on what the ones before left', async () => {
      const k = key()
      const now = at('2031-03-10T08:59:59.999Z')
      const costs = [4, 4, 4, 2, 1]
      const answers = await Promise.all(costs.map((cost) => meter.admit({ keyId: k, cost, budget: hourly(10), now })))
      expect(answers.map((d) => d.admitted)).toEqual([true, true, false, true, false])
      expect(answers.map((d) => d.hourly.used)).toEqual([4, 8, 8, 10, 10])
      // Made together too: one under a budget the key was just given, and the next hour's first request.
      const [raised, nextHour] = await Promise.all([
        meter.admit({ keyId: k, cost: 1, budget: hourly(11), now }),
        meter.admit({ keyId: k, cost: 3, budget: hourly(10), now: now + 1 }),
      ])
      expect(raised).toMatchObject({ admitted: true, hourly: { limit: 11, used: 11 }, monthly: { used: 11 } })
      expect(nextHour).toMatchObject({ admitted: true, hourly: { used: 3, resetAt: at('2031-03-10T10:00:00Z') }, monthly: { used: 14 } })
    })

    test('concurrent admits never pass the budget and fall short of it by less than one cost', async () => {
      const k = key()
      const budget = { hourly: 100, monthly: 1000 }
      const costs = [1, 2, 5]
      const now = at('2031-07-07T07:07:00Z')
      // Three times the budget in units, spread over every meter sharing the count.
      const calls = Array.from({ length: 150 }, (_, i) =>
        fixture.meters[i % fixture.meters.length]!.admit({ keyId: k, cost: costs[i % costs.length]!, budget, now }).then((d) => ({
          d,
          cost: costs[i % costs.length]!,
        })),
      )
      const results = await Promise.all(calls)
      expect(results.some((r) => !r.d.admitted)).toBe(true)
      const admitted = results.filter((r) => r.d.admitted).reduce((s, r) => s + r.cost, 0)
      expect(admitted).toBeLessThanOrEqual(100)
      expect(admitted).toBeGreaterThan(100 - Math.max(...costs))
      // Every answer's count is one the shared counter really passed through.
      for (const r of results) expect(r.d.hourly.used).toBeLessThanOrEqual(100)
      const after = await meter.admit({ keyId: k, cost: 100, budget, now })
      expect(after).toMatchObject({ admitted: false, hourly: { used: admitted }, monthly: { used: admitted } })
    })
  })
}
