/**
 * Cost-unit metering: a fixed hourly window on the UTC clock hour and an optional cap per UTC
 * calendar month, both per API key. One `admit` checks and charges both together; a refused
 * request is not charged.
 */
export interface Budget {
  hourly: number
  /** Null: no monthly cap. */
  monthly: number | null
}

export interface AdmitParameters {
  keyId: string
  cost: number
  budget: Budget
  now: number
}

export interface MeterDecision {
  admitted: boolean
  /** Which budget refused, when one did. */
  refusedBy?: 'hourly' | 'monthly'
  hourly: { limit: number; used: number; resetAt: number }
  monthly: { limit: number | null; used: number; resetAt: number }
}

export interface Meter {
  readonly kind: string
  admit(p: AdmitParameters): Promise<MeterDecision>
  ping(): Promise<void>
  close(): Promise<void>
}

const HOUR_MS = 3_600_000

export function hourWindow(now: number) {
  const start = Math.floor(now / HOUR_MS) * HOUR_MS
  return { id: start / HOUR_MS, start, end: start + HOUR_MS }
}

export function monthWindow(now: number) {
  const d = new Date(now)
  const y = d.getUTCFullYear()
  const m = d.getUTCMonth()
  return { id: `${y}-${String(m + 1).padStart(2, '0')}`, start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) }
}

/** The decision for usage already counted before this request, applying the rule in one place. */
export function decide(p: AdmitParameters, hourUsed: number, monthUsed: number): MeterDecision {
  const hour = hourWindow(p.now)
  const month = monthWindow(p.now)
  const monthlyRefuses = p.budget.monthly !== null && monthUsed + p.cost > p.budget.monthly
  const hourlyRefuses = hourUsed + p.cost > p.budget.hourly
  const admitted = !monthlyRefuses && !hourlyRefuses
  const charge = admitted ? p.cost : 0
  return {
    admitted,
    refusedBy: monthlyRefuses ? 'monthly' : hourlyRefuses ? 'hourly' : undefined,
    hourly: { limit: p.budget.hourly, used: hourUsed + charge, resetAt: hour.end },
    monthly: { limit: p.budget.monthly, used: monthUsed + charge, resetAt: month.end },
  }
}

/** The six headers (and the two of a refusal), computed from a decision. */
export function meterHeaders(d: MeterDecision, now: number): Record<string, string> {
  const h: Record<string, string> = {
    'x-ratelimit-limit': String(d.hourly.limit),
    'x-ratelimit-remaining': String(Math.max(0, d.hourly.limit - d.hourly.used)),
    'x-ratelimit-used': String(d.hourly.used),
    'x-monthly-usage': String(d.monthly.used),
  }
  if (d.monthly.limit !== null) {
    h['x-monthly-limit'] = String(d.monthly.limit)
    h['x-monthly-remaining'] = String(Math.max(0, d.monthly.limit - d.monthly.used))
  }
  if (!d.admitted) {
    const resetAt = d.refusedBy === 'monthly' ? d.monthly.resetAt : d.hourly.resetAt
    h['retry-after'] = String(Math.max(1, Math.ceil((resetAt - now) / 1000)))
    h['x-ratelimit-reset'] = String(Math.ceil(resetAt / 1000))
  }
  return h
}
