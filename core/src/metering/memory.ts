/**
 * The in-process meter: exact for one server process, the embedded default. Usage lives in a Map,
 * one entry per key, moved lazily to a new window when a request falls in a later one. It keeps what
 * it has counted since the last write as increments per month, so persistent.ts writes back only what
 * changed, the end of a month included.
 */
import type { KeyUsage } from '../store/schema.ts'
import { decide, type Meter, windowCache, windowsAt } from './meter.ts'

const HOUR_MS = 3_600_000

interface Usage {
  hour: number
  hourUsed: number
  month: string
  monthUsed: number
  /** Counted and not yet written, per month (two only across a month's end). */
  unwritten: Map<string, { used: number; hour: number; hourUsed: number }>
}

export interface MemoryMeterOptions {
  /** Usage already recorded (loaded from the store at start). */
  initial?: Iterable<KeyUsage>
}

export interface UnsavedUsage {
  /** Increments since the last commit, one row per key and month that changed. */
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
  for (const r of options.initial ?? []) usage.set(r.keyId, { hour: r.hour, hourUsed: r.hourUsed, month: r.month, monthUsed: r.used, unwritten: new Map() })

  return {
    kind: 'memory',
    async admit(p) {
      let u = usage.get(p.keyId)
      // Windows only move forward: a clock stepped back (NTP) keeps counting in the later window, where moving back
      // would start it from zero and hand the key its budget again. (Redis keeps a counter per window for the same.)
      let w = windows(p.now)
      if (u && w.hourId < u.hour) w = windowsAt(u.hour * HOUR_MS)
      if (!u) {
        u = { hour: w.hourId, hourUsed: 0, month: w.monthId, monthUsed: 0, unwritten: new Map() }
        usage.set(p.keyId, u)
      }
      if (u.month !== w.monthId) {
        u.month = w.monthId
        u.monthUsed = 0
      }
      if (u.hour !== w.hourId) {
        u.hour = w.hourId
        u.hourUsed = 0
      }
      const d = decide(p, w, u.hourUsed, u.monthUsed)
      if (d.admitted && p.cost !== 0) {
        u.hourUsed += p.cost
        u.monthUsed += p.cost
        const pending = u.unwritten.get(u.month)
        if (!pending) u.unwritten.set(u.month, { used: p.cost, hour: u.hour, hourUsed: p.cost })
        else {
          pending.used += p.cost
          // The store keeps one hour's count per row and replaces an older hour's: only this hour's increments go.
          pending.hourUsed = pending.hour === u.hour ? pending.hourUsed + p.cost : p.cost
          pending.hour = u.hour
        }
      }
      return d
    },
    async ping() {
      return { state: 'ok' }
    },
    async close() {},
    unsaved() {
      const rows: KeyUsage[] = []
      for (const [keyId, u] of usage) for (const [month, pending] of u.unwritten) rows.push({ keyId, month, ...pending })
      return {
        rows,
        commit() {
          // Requests admitted while the store wrote are counted on top of these rows: only the rows' part is taken off.
          for (const row of rows) {
            const unwritten = usage.get(row.keyId)!.unwritten
            const pending = unwritten.get(row.month)!
            pending.used -= row.used
            if (pending.hour === row.hour) pending.hourUsed -= row.hourUsed
            if (pending.used === 0) unwritten.delete(row.month)
          }
        },
      }
    },
  }
}
