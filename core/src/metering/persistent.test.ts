import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { manualClock } from '../clock.ts'
import type { KeyUsage } from '../store/schema.ts'
import { createStore, type Store } from '../store/store.ts'
import { createPersistentMemoryMeter } from './persistent.ts'

const dir = mkdtempSync(join(tmpdir(), 'earn-meter-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let n = 0
async function openStore(path = join(dir, `s${n++}.sqlite`)) {
  const store = createStore({ engine: 'sqlite', path })
  await store.migrate(0)
  return { store, path }
}

const budget = { hourly: 100, monthly: 1000 }

describe('the embedded meter keeps usage across restarts', () => {
  test('a graceful stop writes everything; the next start continues the hour and the month', async () => {
    const clock = manualClock(Date.parse('2031-08-20T10:15:00Z'))
    const { store, path } = await openStore()
    const first = await createPersistentMemoryMeter({ store, clock, flushMs: 60_000 })
    for (let i = 0; i < 3; i++) await first.admit({ keyId: 'k', cost: 7, budget, now: clock.now() })
    await first.close()
    await store.close()

    clock.advance(10 * 60_000)
    const reopened = await openStore(path)
    const second = await createPersistentMemoryMeter({ store: reopened.store, clock, flushMs: 60_000 })
    expect(await second.admit({ keyId: 'k', cost: 1, budget, now: clock.now() })).toMatchObject({ hourly: { used: 22 }, monthly: { used: 22 } })
    // Next hour: the hour starts over, the month goes on.
    clock.set(Date.parse('2031-08-20T11:00:00Z'))
    expect(await second.admit({ keyId: 'k', cost: 1, budget, now: clock.now() })).toMatchObject({ hourly: { used: 1 }, monthly: { used: 23 } })
    await second.close()
    // Next month, next start: nothing carried over.
    clock.set(Date.parse('2031-09-01T00:00:00Z'))
    const third = await createPersistentMemoryMeter({ store: reopened.store, clock, flushMs: 60_000 })
    expect(await third.admit({ keyId: 'k', cost: 1, budget, now: clock.now() })).toMatchObject({ hourly: { used: 1 }, monthly: { used: 1 } })
    await third.close()
    expect((await reopened.store.loadKeyUsage('2031-08'))[0]).toMatchObject({ keyId: 'k', used: 23 })
    await reopened.store.close()
  })

  test('a crash loses at most what came after the last periodic write', async () => {
    const clock = manualClock(Date.parse('2031-08-20T10:15:00Z'))
    const { store } = await openStore()
    const meter = await createPersistentMemoryMeter({ store, clock, flushMs: 30 })
    await meter.admit({ keyId: 'k', cost: 5, budget, now: clock.now() })
    const deadline = Date.now() + 5000
    while ((await store.loadKeyUsage('2031-08')).length === 0 && Date.now() < deadline) await Bun.sleep(10)
    await meter.admit({ keyId: 'k', cost: 2, budget, now: clock.now() })
    // "Crash": no close. A new process reads what the last periodic write left.
    const after = await createPersistentMemoryMeter({ store, clock, flushMs: 60_000 })
    const used = (await after.admit({ keyId: 'k', cost: 1, budget, now: clock.now() })).monthly.used
    expect([6, 8]).toContain(used) // 5 written; the 2 only if the next write came first
    await meter.close()
    await after.close()
    await store.close()
  })

  test('writes only keys that changed; a failed write is retried with what came since', async () => {
    const clock = manualClock(Date.parse('2031-08-20T10:15:00Z'))
    const { store: real } = await openStore()
    const writes: KeyUsage[][] = []
    let failNext = true
    const store: Pick<Store, 'loadKeyUsage' | 'addKeyUsage' | 'claimUsageWrite'> = {
      loadKeyUsage: (m) => real.loadKeyUsage(m),
      claimUsageWrite: (w) => real.claimUsageWrite(w),
      async addKeyUsage(rows, write) {
        writes.push(rows.map((r) => ({ ...r })))
        if (failNext) {
          failNext = false
          throw new Error('disk full')
        }
        await real.addKeyUsage(rows, write)
      },
    }
    const meter = await createPersistentMemoryMeter({ store, clock, flushMs: 60_000 })
    await meter.admit({ keyId: 'a', cost: 1, budget, now: clock.now() })
    await meter.admit({ keyId: 'b', cost: 1, budget, now: clock.now() })
    await expect(meter.flush()).rejects.toThrow('disk full')
    await meter.admit({ keyId: 'a', cost: 1, budget, now: clock.now() })
    await meter.flush()
    await meter.flush() // nothing changed: no write
    await meter.admit({ keyId: 'b', cost: 3, budget, now: clock.now() })
    await meter.close()
    expect(writes.map((w) => w.map((r) => `${r.keyId}+${r.used}`))).toEqual([['a+1', 'b+1'], ['a+2', 'b+1'], ['b+3']])
    expect(new Map((await real.loadKeyUsage('2031-08')).map((r) => [r.keyId, r.used]))).toEqual(new Map([['a', 2], ['b', 4]]))
    await real.close()
  })

  test("close tries the last write until the store takes it (a full disk freed during the stop); meanwhile it says what a stop would lose", async () => {
    const clock = manualClock(Date.parse('2031-08-20T10:15:00Z'))
    const { store: real } = await openStore()
    let refusals = 3
    const errors: unknown[] = []
    const store: Pick<Store, 'loadKeyUsage' | 'addKeyUsage' | 'claimUsageWrite'> = {
      loadKeyUsage: (m) => real.loadKeyUsage(m),
      claimUsageWrite: (w) => real.claimUsageWrite(w),
      async addKeyUsage(rows, write) {
        if (refusals-- > 0) throw new Error('database or disk is full')
        await real.addKeyUsage(rows, write)
      },
    }
    const meter = await createPersistentMemoryMeter({ store, clock, flushMs: 60_000, onError: (e) => errors.push(e) })
    await meter.admit({ keyId: 'a', cost: 4, budget, now: clock.now() })
    await meter.admit({ keyId: 'b', cost: 3, budget, now: clock.now() })
    expect(meter.usageNotStored()).toEqual({ keys: 2, units: 7 })
    await meter.close()
    expect(errors).toHaveLength(3)
    expect(meter.usageNotStored()).toEqual({ keys: 0, units: 0 })
    expect(new Map((await real.loadKeyUsage('2031-08')).map((r) => [r.keyId, r.used]))).toEqual(new Map([['a', 4], ['b', 3]]))
    await real.close()
  })

  test('a write that committed but whose answer was lost (a COMMIT answer dropped) is not sent again: counted once', async () => {
    const clock = manualClock(Date.parse('2031-08-20T10:15:00Z'))
    const { store: real } = await openStore()
    let loseAnswer = true
    const store: Pick<Store, 'loadKeyUsage' | 'addKeyUsage' | 'claimUsageWrite'> = {
      loadKeyUsage: (m) => real.loadKeyUsage(m),
      claimUsageWrite: (w) => real.claimUsageWrite(w),
      async addKeyUsage(rows, write) {
        await real.addKeyUsage(rows, write)
        if (loseAnswer) {
          loseAnswer = false
          throw new Error('PostgreSQL gave no answer within 12000 ms')
        }
      },
    }
    const meter = await createPersistentMemoryMeter({ store, clock, flushMs: 60_000 })
    await meter.admit({ keyId: 'a', cost: 7, budget, now: clock.now() })
    await expect(meter.flush()).rejects.toThrow('no answer')
    await meter.admit({ keyId: 'a', cost: 2, budget, now: clock.now() })
    await meter.flush()
    await meter.close()
    expect((await real.loadKeyUsage('2031-08')).map((r) => [r.keyId, r.used, r.hourUsed])).toEqual([['a', 9, 9]])
    await real.close()
  })

  test('a write that failed without committing is sent again whole', async () => {
    const clock = manualClock(Date.parse('2031-08-20T10:15:00Z'))
    const { store: real } = await openStore()
    let fail = true
    const store: Pick<Store, 'loadKeyUsage' | 'addKeyUsage' | 'claimUsageWrite'> = {
      loadKeyUsage: (m) => real.loadKeyUsage(m),
      claimUsageWrite: (w) => real.claimUsageWrite(w),
      async addKeyUsage(rows, write) {
        if (fail) {
          fail = false
          throw new Error('connection refused')
        }
        await real.addKeyUsage(rows, write)
      },
    }
    const meter = await createPersistentMemoryMeter({ store, clock, flushMs: 60_000 })
    await meter.admit({ keyId: 'a', cost: 7, budget, now: clock.now() })
    await expect(meter.flush()).rejects.toThrow('refused')
    await meter.close()
    expect((await real.loadKeyUsage('2031-08')).map((r) => [r.keyId, r.used])).toEqual([['a', 7]])
    await real.close()
  })

  test("a check whose own answer was lost, asked again, does not take its claim for the write: the usage is sent again, counted once", async () => {
    const clock = manualClock(Date.parse('2031-08-20T10:15:00Z'))
    const { store: real } = await openStore()
    let [failWrite, loseClaim] = [true, true]
    const store: Pick<Store, 'loadKeyUsage' | 'addKeyUsage' | 'claimUsageWrite'> = {
      loadKeyUsage: (m) => real.loadKeyUsage(m),
      async claimUsageWrite(w) {
        const written = await real.claimUsageWrite(w)
        if (loseClaim) {
          loseClaim = false
          throw new Error('connection lost')
        }
        return written
      },
      async addKeyUsage(rows, write) {
        if (failWrite) {
          failWrite = false
          throw new Error('connection refused')
        }
        await real.addKeyUsage(rows, write)
      },
    }
    const meter = await createPersistentMemoryMeter({ store, clock, flushMs: 60_000 })
    await meter.admit({ keyId: 'a', cost: 7, budget, now: clock.now() })
    await expect(meter.flush()).rejects.toThrow('refused')
    await meter.admit({ keyId: 'a', cost: 2, budget, now: clock.now() })
    await expect(meter.flush()).rejects.toThrow('lost')
    await meter.flush()
    await meter.close()
    expect((await real.loadKeyUsage('2031-08')).map((r) => [r.keyId, r.used])).toEqual([['a', 9]])
    await real.close()
  })
})
