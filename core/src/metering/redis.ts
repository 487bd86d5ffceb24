/**
 * The shared meter: usage counted in Redis, exact across any number of server processes. Each
 * admit is decided by a script run inside Redis (atomic: no other command runs between its read and
 * its write) that checks and charges the hour and the month together, by `decide`'s rule. The admits
 * of one key that a process receives in one turn of its event loop share a run, which decides them
 * one after another exactly as runs of their own, back to back, would.
 *
 * Keys: `{<prefix>:<keyId>}:h:<hourId>` and `{<prefix>:<keyId>}:m:<YYYY-MM>`. The braces are a
 * Redis Cluster hash tag: both counters of one key hash to one slot, as a multi-key script needs.
 * Each expires a margin after its window ends, so Redis holds no more than the live windows; the
 * monthly counter lives to the end of its month, which is what lets monthly usage survive a server
 * restart (surviving a Redis restart is the operator's persistence setting: see the README).
 */
import { createHash } from 'node:crypto'
import { createClient, ErrorReply } from 'redis'
import { type AdmitParameters, type Budget, decide, type Meter, type MeterDecision, type Windows, windowCache } from './meter.ts'
import { withinRunningTime } from '../runningTimeout.ts'
import type { KeyUsage } from '../store/schema.ts'

/**
 * KEYS: hour counter, month counter. ARGV: hourly budget, monthly cap (-1: none), hour TTL, month TTL
 * (ms), then the cost of each request, in order. Each request is decided on the counts the ones before
 * it left, as if it had been a script run of its own; both counters are charged once for the lot.
 * Replies with the counts found, then 1 (admitted) or 0 per request.
 */
const SCRIPT = `
local hour = tonumber(redis.call('GET', KEYS[1]) or '0')
local month = tonumber(redis.call('GET', KEYS[2]) or '0')
local budget = tonumber(ARGV[1])
local cap = tonumber(ARGV[2])
local reply = {hour, month}
local h, m = hour, month
for i = 5, #ARGV do
  local cost = tonumber(ARGV[i])
  if (cap >= 0 and m + cost > cap) or h + cost > budget then
    reply[#reply + 1] = 0
  else
    h = h + cost
    m = m + cost
    reply[#reply + 1] = 1
  end
end
if h > hour then
  redis.call('INCRBY', KEYS[1], h - hour)
  redis.call('INCRBY', KEYS[2], m - month)
  -- A counter is only ever made here, so one that was absent gets its expiry now and keeps it.
  if hour == 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
  if month == 0 then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
end
return reply
`
const SHA1 = createHash('sha1').update(SCRIPT).digest('hex')

/** How long a refund's mark is kept: past the last retry of the same charge's refund (resilient.ts). */
const REFUND_MARK_MS = 10 * 60_000
/**
 * KEYS: hour counter, month counter, the charge's mark. ARGV: the cost to take back from each, down to zero at most (an
 * absent counter stays absent), and the mark's lifetime: a refund whose answer was lost, sent again, takes nothing more.
 */
const REFUND_SCRIPT = `
if not redis.call('SET', KEYS[3], '1', 'NX', 'PX', ARGV[2]) then return 0 end
local cost = tonumber(ARGV[1])
for i = 1, 2 do
  local held = tonumber(redis.call('GET', KEYS[i]) or '0')
  if held > 0 then redis.call('DECRBY', KEYS[i], math.min(held, cost)) end
end
return 1
`

/** What the meter needs of a node-redis client (a caller may pass its own, and keeps owning it). */
export interface RedisCommands {
  sendCommand(args: string[]): Promise<unknown>
}

export type RedisMeterOptions = (
  | { url: string; client?: undefined }
  | { client: RedisCommands; url?: undefined }
) & {
  /** Namespace inside the hash tag; default `earn`. */
  prefix?: string
  /**
   * Lifetime past a window's end. TTLs are relative (computed from the server's clock, not Redis's),
   * and the margin keeps a counter alive for a process whose clock runs a little behind. Default 5 min.
   */
  expiryMarginMs?: number
  /** Connection errors of a client the meter made (it reconnects by itself). */
  onError?(error: Error): void
}

export interface RedisMeter extends Meter {
  /** Resolves once the first connection is up (at once for a caller's client). */
  readonly connected: Promise<void>
  /**
   * Writes the usage the embedded meter kept in the store (`key_usage`) for the month and hour of `now` where Redis
   * holds no count yet; Redis's own counts stand. Resolves with how many counters it wrote.
   */
  seed(rows: readonly KeyUsage[], now: number): Promise<number>
}

/** Reconnect quickly, then every second at most: how soon shared metering resumes after an outage. */
const reconnectDelay = (retries: number) => Math.min(50 * 2 ** retries, 1000)

/**
 * A client that has not answered a PING for this long is replaced by a new one. node-redis
 * reconnects by itself after a reset or a refusal, but a connection that dies silently (a crashed
 * host, a dropped route) would wait for TCP to give up, which takes minutes; so would a handshake
 * stuck on such a connection.
 */
const STALL_MS = 2000
const CLOSE_WAIT_MS = 1000
/** How long a replaced client may still take the answers to what it sent, and how many are kept so. */
const RETIRED_GRACE_MS = 60_000
const MAX_RETIRED = 4

export class MeterScriptMismatchError extends Error {
  constructor() {
    super('the Redis meter script and decide() disagree; they must apply one rule')
  }
}

export class RedisStalledError extends Error {
  constructor() {
    super(`redis did not answer PING within ${STALL_MS} ms; reconnecting`)
  }
}

function open(url: string, onError: ((e: Error) => void) | undefined) {
  const client = createClient({
    url,
    // The name makes the handshake wait for a reply that must not fail. Without a command like it,
    // node-redis can take a connection reset during the handshake for success and stay "ready" on
    // a dead socket. It also names the connections in CLIENT LIST.
    name: 'earn-meter',
    // Fail at once while disconnected instead of queueing: the resilient meter falls back then.
    disableOfflineQueue: true,
    socket: { connectTimeout: 1000, reconnectStrategy: reconnectDelay },
  })
  // node-redis emits every failed reconnect as an 'error' event; an unheard one would end the process.
  client.on('error', (e: Error) => onError?.(e))
  const connected = client.connect().then(() => {})
  connected.catch(() => {})
  return { client, connected }
}

/** Admits of one key in one hour with one budget, waiting for the turn's script run. */
interface Batch {
  tag: string
  w: Windows
  budget: Budget
  /** The first admit's clock, for the counters' expiry (the others' differ by less than a turn). */
  now: number
  waiting: { p: AdmitParameters; resolve(d: MeterDecision): void; reject(e: unknown): void }[]
}

export function createRedisMeter(options: RedisMeterOptions): RedisMeter {
  const prefix = options.prefix ?? 'earn'
  const margin = options.expiryMarginMs ?? 300_000
  const windows = windowCache()
  let own: ReturnType<typeof createClient> | undefined
  let client: RedisCommands
  let connected: Promise<void>
  if (options.client) {
    client = options.client
    connected = Promise.resolve()
  } else {
    ;({ client: own, connected } = open(options.url, options.onError))
    client = own
  }

  const { url } = options
  let lastAnswer = performance.now()
  // Replaced clients, closed a grace later: a Redis that only paused (a fork, a VM frozen) still runs the commands they
  // sent, and their answers are what lets a timed-out admit's charge be taken back (resilient.ts); destroyed at once,
  // every admit of a pause past a few seconds stayed charged (a re-audit).
  const retired = new Set<ReturnType<typeof createClient>>()
  const destroy = (old: ReturnType<typeof createClient>) => {
    retired.delete(old)
    if (old.isOpen) old.destroy()
  }
  const retire = (old: ReturnType<typeof createClient>) => {
    // Only a connection that is up can still answer; one still connecting, or whose connection breaks after it is
    // retired, is destroyed at once: kept, each reconnected every second (a re-audit: nine connections after a 20 s
    // outage, all reconnecting to the Redis that came back).
    if (!old.isReady) return destroy(old)
    retired.add(old)
    old.on('error', () => destroy(old))
    old.on('reconnecting', () => destroy(old))
    setTimeout(() => destroy(old), RETIRED_GRACE_MS).unref()
    for (const extra of [...retired].slice(0, -MAX_RETIRED)) destroy(extra)
  }
  const replace = (stalled: RedisCommands) => {
    if (!own || url === undefined || stalled !== own) return // a caller's client, or already replaced
    retire(own)
    own = open(url, options.onError).client
    client = own
    lastAnswer = performance.now() // the new client gets its own STALL_MS to connect
  }

  async function run(args: string[]): Promise<unknown> {
    try {
      return await client.sendCommand(args)
    } catch (e) {
      // Redis restarted (or was flushed) and forgot the script: send it whole, which caches it again.
      if (!(e instanceof Error && e.message.startsWith('NOSCRIPT'))) throw e
      args[0] = 'EVAL'
      args[1] = SCRIPT
      return client.sendCommand(args)
    }
  }

  // Admits go to Redis together, one script run per key and window: Redis's cost and the round trips are
  // per run, and a busy key sends many at once. A run leaves at the end of the event loop's turn, and never
  // waits for an earlier one: an admit costs no more time than a run of its own.
  const batches = new Map<string, Batch>()
  let scheduled = false
  const flush = () => {
    scheduled = false
    for (const batch of batches.values()) void send(batch)
    batches.clear()
  }

  async function send(batch: Batch) {
    const { w, budget, now, waiting } = batch
    const args = [
      'EVALSHA',
      SHA1,
      '2',
      `${batch.tag}:h:${w.hourId}`,
      `${batch.tag}:m:${w.monthId}`,
      String(budget.hourly),
      budget.monthly === null ? '-1' : String(budget.monthly),
      String(w.hourEnd - now + margin),
      String(w.monthEnd - now + margin),
    ]
    for (const x of waiting) args.push(String(x.p.cost))
    let reply: number[]
    try {
      reply = (await run(args)) as number[]
    } catch (e) {
      for (const x of waiting) x.reject(e)
      return
    }
    // The script's verdicts, replayed through `decide` for the answers' counts and checked against it.
    let [hour, month] = reply as [number, number]
    for (let i = 0; i < waiting.length; i++) {
      const x = waiting[i]!
      const d = decide(x.p, w, hour, month)
      if (d.admitted !== (reply[i + 2] === 1)) {
        for (const rest of waiting.slice(i)) rest.reject(new MeterScriptMismatchError())
        return
      }
      if (d.admitted) {
        hour += x.p.cost
        month += x.p.cost
      }
      x.resolve(d)
    }
  }

  return {
    kind: 'redis',
    connected,
    admit(p): Promise<MeterDecision> {
      const w = windows(p.now)
      const id = `${p.keyId}\n${w.hourId}\n${p.budget.hourly}\n${p.budget.monthly}`
      let batch = batches.get(id)
      if (!batch) {
        batch = { tag: `{${prefix}:${p.keyId}}`, w, budget: p.budget, now: p.now, waiting: [] }
        batches.set(id, batch)
      }
      if (!scheduled) {
        scheduled = true
        setImmediate(flush)
      }
      const { promise, resolve, reject } = Promise.withResolvers<MeterDecision>()
      batch.waiting.push({ p, resolve, reject })
      return promise
    },
    async seed(rows, now) {
      const w = windows(now)
      const sets: string[][] = []
      for (const row of rows) {
        if (row.month !== w.monthId) continue
        const tag = `{${prefix}:${row.keyId}}`
        // NX: a count Redis has is the shared one, newer than what a process wrote before Redis was used.
        if (row.used > 0) sets.push(['SET', `${tag}:m:${w.monthId}`, String(row.used), 'NX', 'PX', String(w.monthEnd - now + margin)])
        if (row.hour === w.hourId && row.hourUsed > 0) sets.push(['SET', `${tag}:h:${w.hourId}`, String(row.hourUsed), 'NX', 'PX', String(w.hourEnd - now + margin)])
      }
      let written = 0
      for (let i = 0; i < sets.length; i += 100) {
        const answers = await Promise.all(sets.slice(i, i + 100).map((args) => client.sendCommand(args)))
        written += answers.filter((a) => a === 'OK').length
      }
      return written
    },
    async refund(p, id) {
      if (p.cost <= 0) return
      const w = windows(p.now)
      const tag = `{${prefix}:${p.keyId}}`
      // Rare (a late answer), so sent whole rather than cached by its hash. The mark outlives the retries (~30 s).
      await client.sendCommand(['EVAL', REFUND_SCRIPT, '3', `${tag}:h:${w.hourId}`, `${tag}:m:${w.monthId}`, `${tag}:r:${id}`, String(p.cost), String(REFUND_MARK_MS)])
    },
    async ping() {
      const pinged = client
      try {
        // In this process's running time (runningTimeout.ts): a pause of its own, the answer unread meanwhile, had the
        // connection replaced and the meter fall back for nothing.
        await withinRunningTime(pinged.sendCommand(['PING']), STALL_MS, () => new RedisStalledError())
        lastAnswer = performance.now()
        return { state: 'ok' }
      } catch (e) {
        if (performance.now() - lastAnswer > STALL_MS) replace(pinged)
        throw e
      }
    },
    async close() {
      for (const old of [...retired]) destroy(old)
      const c = own
      if (!c?.isOpen) return
      // Connected: let commands in flight finish, for a moment; a dead connection would never let them.
      if (c.isReady) {
        let timer: ReturnType<typeof setTimeout> | undefined
        await Promise.race([c.close().catch(() => {}), new Promise((r) => (timer = setTimeout(r, CLOSE_WAIT_MS)))])
        clearTimeout(timer)
      }
      if (c.isOpen) c.destroy()
    },
  }
}

/** An error Redis answered (NOPERM, READONLY, OOM: it refuses), as opposed to a connection lost or a timeout. */
export const isRedisRefusal = (error: unknown): boolean => error instanceof ErrorReply
