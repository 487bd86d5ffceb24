/**
 * Cost-unit metering: a fixed hourly window on the UTC clock hour and an optional cap per UTC
 * calendar month, both per API key. One `admit` checks and charges both together; a refused
 * request is not charged. Implementations: memory.ts (in-process), redis.ts (shared), and
 * resilient.ts (Redis with an in-process fallback while Redis is unreachable).
 */
export interface Budget {
  hourly: number
  /** Null: no monthly cap. */
  monthly: number | null
}

/** A key's budgets: its own where set, else its organization's. */
export function budgetOf(record: { key: { hourlyBudget: number | null; monthlyBudget: number | null }; organization: { hourlyBudget: number; monthlyBudget: number | null } }): Budget {
  return { hourly: record.key.hourlyBudget ?? record.organization.hourlyBudget, monthly: record.key.monthlyBudget ?? record.organization.monthlyBudget }
}

export interface AdmitParameters {
  keyId: string
  cost: number
  budget: Budget
  /** Epoch milliseconds; the caller's clock decides which windows the request falls in. */
  now: number
}

export interface MeterDecision {
  admitted: boolean
  /** Which budget refused, when one did. */
  refusedBy?: 'hourly' | 'monthly'
  hourly: { limit: number; used: number; resetAt: number }
  monthly: { limit: number | null; used: number; resetAt: number }
  /**
   * The shared meter cannot count now (Redis unreachable, and the deployment admits nothing it cannot count): nothing
   * is admitted, and the counts are the last the shared meter gave for the key. Why, in a few words.
   */
  unavailable?: string
}

/** `degraded`: the meter still answers, but less exactly than configured (see resilient.ts). */
export type MeterStatus = { state: 'ok' } | { state: 'degraded'; reason: string }

export interface Meter {
  readonly kind: string
  admit(p: AdmitParameters): Promise<MeterDecision>
  /** Resolves with how well the meter works now; throws when it cannot meter at all. */
  ping(): Promise<MeterStatus>
  /** Stops timers and connections, persisting what must survive a restart. */
  close(): Promise<void>
  /** Usage counted but not yet stored (a meter that keeps its counts in the store): what a stop now would lose. */
  usageNotStored?(): { keys: number; units: number }
  /**
   * Takes back what an admit of `p` charged, where its answer came too late to be used (resilient.ts): the request
   * was answered without it (refused, or metered by the fallback), so the charge would count a request twice or one
   * never served. Never below zero. `id` names the charge: attempts under one id take it back once, however many ran
   * (one whose answer was lost is sent again).
   */
  refund?(p: AdmitParameters, id: string): Promise<void>
}

/** The windows one instant falls in. Ids name them in storage: `h:<hourId>`, `m:<monthId>`. */
export interface Windows {
  /** Whole hours since the epoch. */
  hourId: number
  hourEnd: number
  /** `YYYY-MM`, UTC. */
  monthId: string
  monthEnd: number
}

const HOUR_MS = 3_600_000

export function windowsAt(now: number): Windows {
  const hourId = Math.floor(now / HOUR_MS)
  const d = new Date(now)
  const y = d.getUTCFullYear()
  const m = d.getUTCMonth()
  return { hourId, hourEnd: (hourId + 1) * HOUR_MS, monthId: `${y}-${String(m + 1).padStart(2, '0')}`, monthEnd: Date.UTC(y, m + 1, 1) }
}

/**
 * `windowsAt`, computed once per hour: a month always starts on an hour boundary, so within one
 * hour both windows are fixed. Keeps Date objects and string formatting off the request path.
 */
export function windowCache(): (now: number) => Windows {
  let cached = windowsAt(0)
  return (now) => {
    if (Math.floor(now / HOUR_MS) !== cached.hourId) cached = windowsAt(now)
    return cached
  }
}

/**
 * The one rule, given usage already counted before this request: refuse if either budget would be
 * passed (the monthly cap is named first when both would), else charge both. redis.ts's script
 * applies the same rule inside Redis; the shared suite holds both to it.
 */
export function decide(p: AdmitParameters, w: Windows, hourUsed: number, monthUsed: number): MeterDecision {
  const monthlyRefuses = p.budget.monthly !== null && monthUsed + p.cost > p.budget.monthly
  const hourlyRefuses = hourUsed + p.cost > p.budget.hourly
  const admitted = !monthlyRefuses && !hourlyRefuses
  const charge = admitted ? p.cost : 0
  return {
    admitted,
    refusedBy: monthlyRefuses ? 'monthly' : hourlyRefuses ? 'hourly' : undefined,
    hourly: { limit: p.budget.hourly, used: hourUsed + charge, resetAt: w.hourEnd },
    monthly: { limit: p.budget.monthly, used: monthUsed + charge, resetAt: w.monthEnd },
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
  // Not the budget: the meter, which is probed every half second.
  if (d.unavailable !== undefined) {
    h['retry-after'] = '1'
    return h
  }
  if (!d.admitted) {
    const resetAt = d.refusedBy === 'monthly' ? d.monthly.resetAt : d.hourly.resetAt
    h['retry-after'] = String(Math.max(1, Math.ceil((resetAt - now) / 1000)))
    h['x-ratelimit-reset'] = String(Math.ceil(resetAt / 1000))
  }
  return h
}
