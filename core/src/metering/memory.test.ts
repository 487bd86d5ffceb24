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
  const meter = createResilientMeter({ primary: createMemoryMeter(), fallback: createMemoryMeter() })
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
})
