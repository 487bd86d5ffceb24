/**
 * The in-process meter: exact for one server process, the embedded default. Usage lives in a Map;
 * monthly totals are handed to `persist` so a restart does not forget them.
 */
import { decide, hourWindow, type Meter, monthWindow } from './meter.ts'

interface Usage {
  hour: number
  hourUsed: number
  month: string
  monthUsed: number
}

export interface MemoryMeterOptions {
  /** Monthly usage already recorded for the current month, by key id (loaded from the store at start). */
  initialMonthly?: Map<string, { month: string; used: number }>
}

export function createMemoryMeter(options: MemoryMeterOptions = {}) {
  const usage = new Map<string, Usage>()
  for (const [keyId, m] of options.initialMonthly ?? [])
    usage.set(keyId, { hour: -1, hourUsed: 0, month: m.month, monthUsed: m.used })

  const meter: Meter & { monthlySnapshot(): Map<string, { month: string; used: number }> } = {
    kind: 'memory',
    async admit(p) {
      const hour = hourWindow(p.now).id
      const month = monthWindow(p.now).id
      let u = usage.get(p.keyId)
      if (!u) usage.set(p.keyId, (u = { hour, hourUsed: 0, month, monthUsed: 0 }))
      if (u.hour !== hour) {
        u.hour = hour
        u.hourUsed = 0
      }
      if (u.month !== month) {
        u.month = month
        u.monthUsed = 0
      }
      const d = decide(p, u.hourUsed, u.monthUsed)
      if (d.admitted) {
        u.hourUsed = d.hourly.used
        u.monthUsed = d.monthly.used
      }
      return d
    },
    async ping() {},
    async close() {},
    monthlySnapshot() {
      return new Map([...usage].map(([k, u]) => [k, { month: u.month, used: u.monthUsed }]))
    },
  }
  return meter
}
