/**
 * What a process does when the shared meter (Redis) does not answer. The policy, stated in the README:
 *
 * - A primary call that fails or takes longer than `timeoutMs` marks the primary down. With `outage: 'closed'` that
 *   request and every later one are refused (a decision `unavailable`, with the key's counts as Redis last gave them),
 *   and `ping` fails, so no request is admitted past a budget (DECISIONS) and readiness fails. With `outage: 'open'`
 *   they are metered by `fallback`, an in-process meter, against the key's full budgets: while Redis is down each
 *   server process meters alone, so within an hour a key may be admitted its budget in Redis and again in each
 *   process; requests are never refused or failed for want of Redis.
 * - While down, the primary is probed every `probeMs` (node-redis reconnects underneath); the first
 *   answer makes it primary again, and exact shared metering resumes by itself. A primary that refuses again
 *   within `FLAP_MS` of coming back (it answers the probe's PING but refuses the metering script: an ACL,
 *   a read-only replica after a failover, out of memory) is probed half as often each time, down to once
 *   every `MAX_PROBE_MS`, so it does not switch (and log) twice a second for as long as that lasts. A lost
 *   connection is not a refusal: a network that flaps is probed every `probeMs` each time.
 * - Usage counted in-process during an outage is not merged back into Redis. A request whose Redis call timed out
 *   is answered without it (refused, or metered by the fallback); should the call's charge still land, it is taken
 *   back once its answer comes (`refund`, sent again for a while where it fails): a slow Redis had charged every 503
 *   it caused, and each retry of it (an audit). Only an answer that never comes (the connection lost after the charge)
 *   leaves a request counted in Redis as well.
 */
import type { AdmitParameters, Meter, MeterDecision, MeterStatus } from './meter.ts'
import { runningTimeout } from '../runningTimeout.ts'

export interface ResilientMeterOptions {
  primary: Meter
  fallback: Meter
  /**
   * A primary call slower than this, in the process's own running time (see `deadlines`), counts as a
   * failure. Default 500.
   */
  timeoutMs?: number
  /** While the primary is down: refuse every request (`closed`), or meter each process alone (`open`). */
  outage: 'closed' | 'open'
  /** How often a down primary is probed. Default 500. */
  probeMs?: number
  /** Told when the primary goes down (with the cause) and when it is back. */
  onChange?(state: 'primary' | 'fallback', cause?: unknown): void
  /** Whether a failure is the primary's own refusal (an error it answered), not a connection lost. Default: never. */
  refused?(cause: unknown): boolean
  /**
   * Told when a late-answered charge was not confirmed taken back (every retry failed, or the meter closed first): the
   * key may stay counted for it in the primary, which an operator reconciling a customer's usage needs to know.
   */
  onRefundLost?(p: AdmitParameters, cause: unknown): void
}

export interface ResilientMeter extends Meter {
  /** Which meter answers admits now. */
  readonly state: 'primary' | 'fallback'
}

export class MeterTimeoutError extends Error {
  constructor(ms: number) {
    super(`meter did not answer within ${ms} ms`)
  }
}

/**
 * A rejection once the calls have had `ms` of this process's running time (a pause of the process's own is not
 * Redis's outage: runningTimeout.ts), shared by every call that starts within the same quarter of `ms`: one timer
 * chain per slot instead of one per request (a call thus gets between 0.75 and 1 times `ms`). Taking our pause for
 * Redis's outage would have the process meter alone, and a key pass its budget, for nothing.
 */
function deadlines(ms: number): () => Promise<never> {
  let current: Promise<never> | undefined
  let since = -Infinity
  return () => {
    const now = performance.now()
    if (!current || now - since > ms / 4) {
      since = now
      current = new Promise<never>((_, reject) => void runningTimeout(() => reject(new MeterTimeoutError(ms)), ms))
      current.catch(() => {})
    }
    return current
  }
}

const firstLine = (e: unknown) => (e instanceof Error ? e.message.split('\n')[0]! : String(e)).slice(0, 160)

const FLAP_MS = 10_000
/** When a refund that failed is sent again (the last about half a minute on). */
const REFUND_RETRIES_MS = [250, 1000, 2000, 4000, 8000, 15_000]
const MAX_PROBE_MS = 30_000
/** Keys whose last shared decision a closed outage answers with. */
const MAX_KNOWN_KEYS = 10_000

export function createResilientMeter(options: ResilientMeterOptions): ResilientMeter {
  const { primary, fallback } = options
  const deadline = deadlines(options.timeoutMs ?? 500)
  const guarded = <T>(p: Promise<T>) => Promise.race([p, deadline()])
  const probeMs = options.probeMs ?? 500
  let down: { cause: string } | undefined
  let probe: ReturnType<typeof setInterval> | undefined
  let closed = false
  let recoveredAt = -Infinity
  // Only the primary's refusals double the interval: a network that flaps (an audit cut Redis for 1 s every 5 s) had
  // been probed ever less often too, metering alone up to 30 s after Redis was back. Told by what failed, not by what
  // was served meanwhile: a read-only replica answers a cost-0 admit or a refusal all the same (another audit).
  const refused = options.refused ?? (() => false)
  let probeEvery = probeMs
  // The shared meter's last decision per key, for a closed outage's answers (bounded: the oldest asked go first).
  const lastKnown = new Map<string, MeterDecision>()
  const remember = (keyId: string, d: MeterDecision) => {
    lastKnown.delete(keyId)
    lastKnown.set(keyId, d)
    if (lastKnown.size > MAX_KNOWN_KEYS) lastKnown.delete(lastKnown.keys().next().value!)
  }
  /** Nothing admitted: the key's counts as the shared meter last said, where still in their windows. */
  const refusal = async (p: AdmitParameters): Promise<MeterDecision> => {
    const windows = await fallback.admit({ ...p, cost: 0 })
    const known = lastKnown.get(p.keyId)
    const hourly = known && known.hourly.resetAt === windows.hourly.resetAt ? { ...windows.hourly, used: known.hourly.used } : windows.hourly
    const monthly = known && known.monthly.resetAt === windows.monthly.resetAt ? { ...windows.monthly, used: known.monthly.used } : windows.monthly
    return { admitted: false, unavailable: `${primary.kind} unreachable`, hourly, monthly }
  }

  /**
   * A charge whose answer came too late to be used, taken back when it comes; tried again for a while where the refund
   * fails: the answer may come on a replaced connection the moment Redis wakes, while the new one is still connecting.
   */
  const refundWhenAnswered = (call: Promise<MeterDecision>, p: AdmitParameters) => {
    const refund = primary.refund?.bind(primary)
    if (!refund || p.cost <= 0) return
    // One id for every attempt: one that ran but whose answer was lost is not taken back twice.
    const id = crypto.randomUUID()
    const attempt = (tries: number): Promise<void> =>
      refund(p, id).catch((e: unknown) => {
        const wait = REFUND_RETRIES_MS[tries]
        if (wait !== undefined && !closed) setTimeout(() => void attempt(tries + 1), wait).unref()
        else options.onRefundLost?.(p, e)
      })
    call.then((d) => (d.admitted ? attempt(0) : undefined)).catch(() => {})
  }

  const recover = () => {
    clearInterval(probe)
    probe = undefined
    down = undefined
    recoveredAt = performance.now()
    options.onChange?.('primary')
  }

  const fail = (cause: unknown) => {
    if (down || closed) return
    down = { cause: firstLine(cause) }
    const refusedAgain = refused(cause) && performance.now() - recoveredAt < FLAP_MS
    probeEvery = refusedAgain ? Math.min(probeEvery * 2, Math.max(MAX_PROBE_MS, probeMs)) : probeMs
    options.onChange?.('fallback', cause)
    let probing = false
    probe = setInterval(async () => {
      if (probing) return
      probing = true
      try {
        await guarded(primary.ping())
        if (down && !closed) recover()
      } catch {
        // Still down; the next tick tries again.
      } finally {
        probing = false
      }
    }, probeEvery)
    probe.unref()
  }

  return {
    kind: primary.kind,
    get state() {
      return down ? 'fallback' : 'primary'
    },
    async admit(p) {
      if (!down) {
        const call = primary.admit(p)
        try {
          const decision = await guarded(call)
          if (options.outage === 'closed') remember(p.keyId, decision)
          return decision
        } catch (e) {
          if (e instanceof MeterTimeoutError) refundWhenAnswered(call, p)
          fail(e)
        }
      }
      return options.outage === 'closed' ? refusal(p) : fallback.admit(p)
    },
    async ping(): Promise<MeterStatus> {
      if (!down) {
        try {
          await guarded(primary.ping())
          return { state: 'ok' }
        } catch (e) {
          fail(e)
        }
      }
      if (options.outage === 'closed') throw new Error(`${primary.kind} unreachable (${down?.cause}); metered requests are refused until it is back`)
      return { state: 'degraded', reason: `${primary.kind} unreachable (${down?.cause}); metering per process until it is back` }
    },
    async close() {
      closed = true
      clearInterval(probe)
      await Promise.all([primary.close(), fallback.close()])
    },
  }
}
