/**
 * The in-process meter: exact for one server process, the embedded default. Usage lives in a Map,
 * one entry per key, reset lazily when a request falls in a new window. It remembers what it has
 * handed out as saved, so persistent.ts can write back only what changed.
 */
import type { KeyUsage } from '../store/schema.ts'
import { decide, type Meter, windowCache } from './meter.ts'

interface Usage {
  hour: number
  hourUsed: number
  month: string
  monthUsed: number
  /** What the store already holds for this key (persistent.ts); compared on flush, never per request. */
  savedHour: number
  savedHourUsed: number
  savedMonth: string
  savedMonthUsed: number
}

export interface MemoryMeterOptions {
  /** Usage already recorded (loaded from the store at start). */
  initial?: Iterable<KeyUsage>
}

export interface UnsavedUsage {
  /** Increments since the last commit, one row per key that changed. */
  rows: KeyUsage[]
  /** Marks these increments as saved; call it once the store has them. */
  commit(): void
}

export interface MemoryMeter extends Meter {
  unsaved(): UnsavedUsage
}

export function createMemoryMeter(options: MemoryMeterOptions = {}): MemoryMeter {
  const usage = new Map<string, Usage>()
  const windows = windowCache()
  for (const r of options.initial ?? [])
    usage.set(r.keyId, {
      hour: r.hour,
      hourUsed: r.hourUsed,
      month: r.month,
      monthUsed: r.used,
      savedHour: r.hour,
      savedHourUsed: r.hourUsed,
      savedMonth: r.month,
      savedMonthUsed: r.used,
    })

  return {
    kind: 'memory',
    async admit(p) {
      const w = windows(p.now)
      let u = usage.get(p.keyId)
      if (!u) {
        u = { hour: w.hourId, hourUsed: 0, month: w.monthId, monthUsed: 0, savedHour: w.hourId, savedHourUsed: 0, savedMonth: w.monthId, savedMonthUsed: 0 }
        usage.set(p.keyId, u)
      }
      if (u.hour !== w.hourId) {
        u.hour = w.hourId
        u.hourUsed = 0
      }
      if (u.month !== w.monthId) {
        u.month = w.monthId
        u.monthUsed = 0
      }
      const d = decide(p, w, u.hourUsed, u.monthUsed)
      if (d.admitted) {
        u.hourUsed += p.cost
        u.monthUsed += p.cost
      }
      return d
    },
    async ping() {
      return { state: 'ok' }
    },
    async close() {},
    unsaved() {
      const rows: KeyUsage[] = []
      const marks: [Usage, KeyUsage, number, number][] = []
      for (const [keyId, u] of usage) {
        const used = u.monthUsed - (u.savedMonth === u.month ? u.savedMonthUsed : 0)
        const hourUsed = u.hourUsed - (u.savedHour === u.hour ? u.savedHourUsed : 0)
        if (used === 0 && hourUsed === 0) continue
        const row = { keyId, month: u.month, used, hour: u.hour, hourUsed }
        rows.push(row)
        // The absolute counts at this moment: requests admitted while the store writes are the next flush's.
        marks.push([u, row, u.monthUsed, u.hourUsed])
      }
      return {
        rows,
        commit() {
          for (const [u, row, monthUsed, hourUsed] of marks) {
            u.savedMonth = row.month
            u.savedMonthUsed = monthUsed
            u.savedHour = row.hour
            u.savedHourUsed = hourUsed
          }
        },
      }
    },
  }
}
