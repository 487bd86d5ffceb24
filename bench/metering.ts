/**
 * The cheapest authenticated, metered endpoint (GET /v2/membership/, 1 cost unit: key check, meter
 * admit, a membership lookup) against a hello-world Elysia route, in the same run:
 *   - floor: bench/floor.ts, an Elysia route giving the same answer and headers with none of the work;
 *   - embedded default: one server process (the sources), in-process meter; once for one wallet asked again
 *     and again (the remembered answer), once for a different wallet every request (a store read each);
 *   - Redis: three processes on one Redis (REDIS_URL, default redis://127.0.0.1:6379), the 64
 *     connections spread over them. All of them read one embedded store file, so the meter is the difference.
 * Prints requests per second, p50 and p99 latency and the ratio to hello-world.
 * Targets at 64 connections: 0.6 of hello-world on the embedded default, 0.4 on Redis.
 *
 *   bun bench/metering.ts            CONNECTIONS=64 WARMUP_MS=1000 DURATION_MS=5000 ROUNDS=1
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createOrganization, createStore, systemClock } from '@earn/core'
import { createMemoryMeter } from '@earn/core/metering/memory'
import { meterHeaders } from '@earn/core/metering/meter'
import { createRedisMeter } from '@earn/core/metering/redis'
import { closedLoop, percentile, perSecond } from './load.ts'
import { type Spawned, spawnServer, waitForChecks } from './processes.ts'

const ROOT = join(import.meta.dir, '..')
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 64)
const WARMUP_MS = Number(process.env.WARMUP_MS ?? 1000)
const DURATION_MS = Number(process.env.DURATION_MS ?? 5000)
const ROUNDS = Number(process.env.ROUNDS ?? 1)
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
const PATH = '/v2/membership/?address=0x000000000000000000000000000000000000dEaD'
// A different wallet on every request: no remembered answer, every check reads the store.
const distinctWallet = (i: number) => `/v2/membership/?address=0x${(i + 1).toString(16).padStart(40, '0')}`
const SERVER = [process.execPath, 'server/src/main.ts']
const HELLO = [process.execPath, 'bench/hello.ts']
const FLOOR = [process.execPath, 'bench/floor.ts']

const dataDir = mkdtempSync(join(tmpdir(), 'earn-bench-metering-'))
// An organization whose budget the bench never reaches: every answer is a metered 200.
const store = createStore({ engine: 'sqlite', path: join(dataDir, 'earn.sqlite') })
await store.migrate(systemClock.now())
const org = await createOrganization({ store, clock: systemClock }, { name: 'Bench', hourlyBudget: 1_000_000_000 })
await store.close()
const headers = { 'x-api-key': org.publishableKey }

interface Figures {
  rps: number
  p50Ms: number
  p99Ms: number
  errors: number
}

/**
 * A warm-up, then the measured run. Each connection keeps to one server (connection w to server w mod n), as
 * behind a load balancer that spreads connections: spreading requests instead made the client close and open
 * connections all run long (thousands of TIME_WAIT sockets per run), which measured the churn, not the servers.
 */
async function measure(servers: Spawned[], path: string | ((i: number) => string), h?: Record<string, string>): Promise<Figures> {
  const pathOf = typeof path === 'string' ? () => path : path
  const send = async (i: number, connection: number) => {
    const r = await fetch(servers[connection % servers.length]!.url + pathOf(i), { headers: h })
    await r.arrayBuffer()
    return r.status
  }
  try {
    await closedLoop({ connections: CONNECTIONS, durationMs: WARMUP_MS, send })
    const r = await closedLoop({ connections: CONNECTIONS, durationMs: DURATION_MS, send })
    const ok = r.statuses[200] ?? 0
    return { rps: perSecond(ok, r.elapsedMs), p50Ms: percentile(r.latencies, 50), p99Ms: percentile(r.latencies, 99), errors: r.requests - ok }
  } finally {
    await Promise.all(servers.map((s) => s.stop()))
  }
}

async function earn(env: Record<string, string>, processes: number): Promise<Spawned[]> {
  const servers = await Promise.all(Array.from({ length: processes }, () => spawnServer(SERVER, { DATA_DIR: dataDir, ...env }, ROOT)))
  try {
    // Check once that the route is metered (and, on Redis, that Redis is the meter) before measuring.
    const r = await fetch(servers[0]!.url + PATH, { headers })
    if (r.status !== 200 || r.headers.get('x-ratelimit-limit') === null) throw new Error(`unexpected answer ${r.status}: ${await r.text()}`)
    // Every process's meter must be its configured one, and its chain plugins loaded.
    await Promise.all(servers.map((s) => waitForChecks(s, ['meter', 'ecosystems'])))
    return servers
  } catch (e) {
    await Promise.all(servers.map((s) => s.stop()))
    throw e
  }
}

/** The meter alone, in this process: what it costs per request, apart from everything else a request does. */
async function meterAlone() {
  const budget = { hourly: 1e15, monthly: 1e15 }
  const memory = createMemoryMeter()
  let now = Date.now()
  const n = 200_000
  let started = performance.now()
  for (let i = 0; i < n; i++) meterHeaders(await memory.admit({ keyId: `k${i & 63}`, cost: 1, budget, now }), now)
  const memoryUs = ((performance.now() - started) * 1000) / n
  let redisPerSecond: number | undefined
  // The last millisecond of a month, and a 1 s margin: the counters this makes are gone a second after.
  now = Date.UTC(2000, 0, 31, 23, 59, 59, 999)
  const redis = createRedisMeter({ url: REDIS_URL, prefix: `bench-${crypto.randomUUID()}`, expiryMarginMs: 1000 })
  const up = await Promise.race([redis.connected.then(() => true), Bun.sleep(2000).then(() => false)])
  if (up) {
    let count = 0
    started = performance.now()
    const end = started + 2000
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async (_, i) => {
        while (performance.now() < end) {
          meterHeaders(await redis.admit({ keyId: `k${i}`, cost: 1, budget, now }), now)
          count++
        }
      }),
    )
    redisPerSecond = perSecond(count, performance.now() - started)
  }
  await redis.close()
  return { memoryUs, redisPerSecond }
}

type Row = { name: string; runs: Figures[]; goal?: number }
const rows: Row[] = [
  { name: 'hello-world elysia (1 process)', runs: [] },
  { name: '  floor: the same answer, no key/meter/store (bench/floor.ts)', runs: [] },
  { name: 'embedded: GET /v2/membership/ (1 process, in-process meter)', runs: [], goal: 0.6 },
  { name: '  embedded, a different wallet every request (store read)', runs: [] },
  { name: 'redis: GET /v2/membership/ (3 processes, one Redis)', runs: [], goal: 0.4 },
  { name: '  for comparison: redis, 1 process', runs: [] },
]
let redisSkipped: string | undefined
for (let round = 0; round < ROUNDS; round++) {
  rows[0]!.runs.push(await measure([await spawnServer(HELLO, {}, ROOT)], '/'))
  rows[1]!.runs.push(await measure([await spawnServer(FLOOR, {}, ROOT)], PATH))
  rows[2]!.runs.push(await measure(await earn({}, 1), PATH, headers))
  rows[3]!.runs.push(await measure(await earn({}, 1), distinctWallet, headers))
  try {
    rows[4]!.runs.push(await measure(await earn({ REDIS_URL }, 3), PATH, headers))
    rows[5]!.runs.push(await measure(await earn({ REDIS_URL }, 1), PATH, headers))
  } catch (e) {
    redisSkipped = e instanceof Error ? e.message : String(e)
  }
}
rmSync(dataDir, { recursive: true, force: true })
if (rows[4]!.runs.length) {
  // The bench key's counters would otherwise stay in Redis until its month ends.
  const redis = new Bun.RedisClient(REDIS_URL)
  const keys = (await redis.send('KEYS', [`{earn:${org.publishableKeyId}}:*`])) as string[]
  if (keys.length) await redis.send('DEL', keys)
  redis.close()
}
const alone = await meterAlone()

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const summary = (r: Row) => ({
  rps: median(r.runs.map((x) => x.rps)),
  p50: median(r.runs.map((x) => x.p50Ms)),
  p99: median(r.runs.map((x) => x.p99Ms)),
  errors: r.runs.reduce((s, x) => s + x.errors, 0),
})
const hello = summary(rows[0]!)
const cpu = cpus()
console.log(`metering bench: ${CONNECTIONS} connections, ${WARMUP_MS} ms warm-up, ${DURATION_MS} ms measured, ${ROUNDS} round(s) (medians)`)
console.log(`machine: ${cpu.length} x ${cpu[0]?.model.trim() ?? 'unknown cpu'}, bun ${Bun.version}; servers, Redis and the load generator share it`)
console.log('')
console.log(`${'target'.padEnd(62)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'ratio'.padStart(6)}  errors`)
for (const r of rows) {
  if (r.runs.length === 0) {
    console.log(`${r.name.padEnd(62)} skipped: ${redisSkipped}`)
    continue
  }
  const s = summary(r)
  const ratio = s.rps / hello.rps
  const verdict = r.goal === undefined ? '' : `  target ${r.goal}: ${ratio >= r.goal ? 'met' : 'MISSED'}`
  console.log(
    `${r.name.padEnd(62)} ${s.rps.toFixed(0).padStart(8)} ${s.p50.toFixed(2).padStart(8)} ${s.p99.toFixed(2).padStart(8)} ${ratio.toFixed(2).padStart(6)}  ${s.errors}${verdict}`,
  )
}
console.log('')
// Each round measures hello-world and every target within a minute of each other: the ratio within a round shows how
// much of a run's spread is the machine's (2 shared cores) rather than the code's.
if (ROUNDS > 1)
  for (const r of rows.filter((r) => r.goal !== undefined && r.runs.length))
    console.log(`${r.name.split(' (')[0]}: ratio per round ${r.runs.map((x, i) => (x.rps / rows[0]!.runs[i]!.rps).toFixed(2)).join(', ')}`)
const embedded = rows[2]!.runs.length ? summary(rows[2]!).rps : NaN
console.log(`embedded against the floor (what our key check, meter and lookup cost): ${(embedded / summary(rows[1]!).rps).toFixed(2)}`)
console.log(`meter alone: in-process admit + headers ${alone.memoryUs.toFixed(2)} µs/request (${((alone.memoryUs * embedded) / 1e4).toFixed(1)}% of one core at the embedded rate)`)
console.log(
  alone.redisPerSecond === undefined
    ? 'meter alone: Redis not reachable'
    : `meter alone: Redis admits from one process, ${CONNECTIONS} in flight: ${alone.redisPerSecond.toFixed(0)}/s`,
)
