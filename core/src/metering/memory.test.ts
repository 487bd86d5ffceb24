import { describe, expect, test } from 'bun:test'
import { createStore } from '../store/store.ts'
import { createMemoryMeter } from './memory.ts'
import { runMeterSuite } from './meter.suite.ts'
import { createPersistentMemoryMeter } from './persistent.ts'
import { createResilientMeter } from './resilient.ts'

runMeterSuite('memory', async () => {
  const meter = createMemoryMeter()
  return { meters: [meter], close: () => meter.close() }
})

runMeterSuite('memory, persisted to SQLite', async () => {
  const store = createStore({ engine: 'sqlite', path: ':memory:' })
  await store.migrate(0)
  const meter = await createPersistentMemoryMeter({ store, clock: { now: () => Date.parse('2031-01-01T00:00:00Z') }, flushMs: 10 })
  return {
    meters: [meter],
    async close() {
      await meter.close()
      await store.close()
    },
  }
})

runMeterSuite('resilient, over a healthy primary', async () => {
  const meter = createResilientMeter({ primary: createMemoryMeter(), fallback: createMemoryMeter(), outage: 'open' })
  return { meters: [meter], close: () => meter.close() }
})

describe('memory meter: what it hands out to be saved', () => {
  test('only keys that changed since the last commit, as increments', async () => {
    const now = Date.parse('2031-02-03T04:05:00Z')
    const hour = Math.floor(now / 3_600_000)
    const meter = createMemoryMeter({ initial: [{ keyId: 'a', month: '2031-02', used: 40, hour, hourUsed: 4 }] })
    expect(meter.unsaved().rows).toEqual([])
    const budget = { hourly: 100, monthly: null }
    expect((await meter.admit({ keyId: 'a', cost: 2, budget, now })).monthly.used).toBe(42)
    await meter.admit({ keyId: 'b', cost: 1, budget, now })
    const first = meter.unsaved()
    expect(first.rows).toEqual([
      { keyId: 'a', month: '2031-02', used: 2, hour, hourUsed: 2 },
      { keyId: 'b', month: '2031-02', used: 1, hour, hourUsed: 1 },
    ])
    // Not committed (the write failed): handed out again, with what came since.
    await meter.admit({ keyId: 'b', cost: 1, budget, now })
    const second = meter.unsaved()
    expect(second.rows.map((r) => r.used)).toEqual([2, 2])
    await meter.admit({ keyId: 'b', cost: 5, budget, now })
    second.commit()
    expect(meter.unsaved().rows).toEqual([{ keyId: 'b', month: '2031-02', used: 5, hour, hourUsed: 5 }])
  })

  test('a new hour or month starts its increments from zero', async () => {
    const meter = createMemoryMeter()
    const budget = { hourly: 100, monthly: null }
    await meter.admit({ keyId: 'a', cost: 7, budget, now: Date.parse('2031-02-28T23:30:00Z') })
    meter.unsaved().commit()
    await meter.admit({ keyId: 'a', cost: 3, budget, now: Date.parse('2031-03-01T00:00:00Z') })
    expect(meter.unsaved().rows).toEqual([
      { keyId: 'a', month: '2031-03', used: 3, hour: Math.floor(Date.parse('2031-03-01T00:00:00Z') / 3_600_000), hourUsed: 3 },
    ])
  })

  test("a month's last increments are handed out after the next month has begun", async () => {
    const meter = createMemoryMeter()
    const budget = { hourly: 100, monthly: null }
    const january = Date.parse('2031-01-31T23:59:50Z')
    const february = Date.parse('2031-02-01T00:00:01Z')
    await meter.admit({ keyId: 'a', cost: 7, budget, now: january })
    const during = meter.unsaved()
    await meter.admit({ keyId: 'a', cost: 3, budget, now: february })
    // The write of January's 7 lands after February's first request: committing it leaves February's 3.
    during.commit()
    const hour = (t: number) => Math.floor(t / 3_600_000)
    expect(meter.unsaved().rows).toEqual([{ keyId: 'a', month: '2031-02', used: 3, hour: hour(february), hourUsed: 3 }])

    const unwritten = createMemoryMeter()
    await unwritten.admit({ keyId: 'a', cost: 7, budget, now: january })
    await unwritten.admit({ keyId: 'a', cost: 3, budget, now: february })
    expect(unwritten.unsaved().rows).toEqual([
      { keyId: 'a', month: '2031-01', used: 7, hour: hour(january), hourUsed: 7 },
      { keyId: 'a', month: '2031-02', used: 3, hour: hour(february), hourUsed: 3 },
    ])
  })

  test('a clock stepped back across a window keeps counting in the later window', async () => {
    const meter = createMemoryMeter()
    const admitted = async (now: number, budget: { hourly: number; monthly: number | null }) => {
      let n = 0
      for (let i = 0; i < 20; i++) if ((await meter.admit({ keyId: 'a', cost: 1, budget, now })).admitted) n++
      return n
    }
    const capped = { hourly: 100, monthly: 8 }
    const [february, january] = [Date.parse('2031-02-01T00:00:00.500Z'), Date.parse('2031-01-31T23:59:59.900Z')]
    expect([await admitted(february, capped), await admitted(january, capped), await admitted(february, capped)]).toEqual([8, 0, 0])
    const refused = await meter.admit({ keyId: 'a', cost: 1, budget: capped, now: january })
    expect(refused.monthly).toEqual({ limit: 8, used: 8, resetAt: Date.parse('2031-03-01T00:00:00Z') })

    const hourly = { hourly: 5, monthly: null }
    const [later, earlier] = [Date.parse('2031-02-03T05:00:00.500Z'), Date.parse('2031-02-03T04:59:59.900Z')]
    expect([await admitted(later, hourly), await admitted(earlier, hourly), await admitted(later, hourly)]).toEqual([5, 0, 0])
  })
})
