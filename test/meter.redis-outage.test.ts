/**
 * Redis stops during operation: with METER_REDIS_OUTAGE=open the server keeps answering (metering per process,
 * readiness "degraded"); closed (the default), it refuses metered requests and fails readiness, admitting nothing it
 * cannot count. Either way it returns to exact shared metering by itself once Redis is back. A private redis-server on
 * a free port, so stopping it disturbs nobody.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import type { Subprocess } from 'bun'
import { createMemoryMeter } from '@earn/core/metering/memory'
import { createRedisMeter } from '@earn/core/metering/redis'
import { createResilientMeter, type ResilientMeter } from '@earn/core/metering/resilient'
import { createStore, parseConfig, systemClock } from '@earn/core'
import { windowsAt } from '@earn/core/metering/meter'
import { openMeter } from '../server/src/compose.ts'
import { createHarness } from './harness.ts'
import { cuttableProxy } from './proxy.ts'

const CI = process.env.CI === 'true'
const binary = Bun.which('redis-server')
if (!binary && CI) throw new Error('redis-server is not installed (CI=true: a missing service is a failure, not a skip)')

const check = '/v2/membership/?address=0x000000000000000000000000000000000000dEaD'

async function freePort(): Promise<number> {
  const s = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = s.port!
  s.stop(true)
  return port
}

/** A redis-server of our own that keeps nothing on disk; resolves once it answers PING. */
async function startRedis(port: number): Promise<Subprocess> {
  const proc = Bun.spawn([binary!, '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdout: 'ignore', stderr: 'ignore' })
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    const ping = Bun.spawnSync(['redis-cli', '-p', String(port), 'ping'])
    if (ping.stdout.toString().trim() === 'PONG') return proc
    await Bun.sleep(50)
  }
  proc.kill('SIGKILL')
  throw new Error(`redis-server on port ${port} did not start`)
}

async function until(condition: () => boolean | Promise<boolean>, ms: number): Promise<number> {
  const started = Date.now()
  while (!(await condition())) {
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`)
    await Bun.sleep(50)
  }
  return Date.now() - started
}

const meterOver = (url: string) => createResilientMeter({ primary: createRedisMeter({ url }), fallback: createMemoryMeter(), outage: 'open', probeMs: 200 })

if (binary) {
  describe('Redis outage', () => {
    const running: Subprocess[] = []
    afterAll(() => {
      for (const p of running) p.kill('SIGKILL')
    })

    test('killed, then restarted on the same port: answers throughout, shared again by itself', async () => {
      const port = await freePort()
      const url = `redis://127.0.0.1:${port}`
      running.push(await startRedis(port))
      // Two meters on one Redis stand for two server processes; requests go through the app on `a`.
      const a = meterOver(url)
      const b = meterOver(url)
      await until(async () => (await a.ping()).state === 'ok' && (await b.ping()).state === 'ok', 5000)
      const h = await createHarness({ meter: a, org: { hourlyBudget: 1000 } })
      const budget = { hourly: 1000, monthly: null }
      const keyId = h.org.secretKeyId
      const viaB = async () => (await b.admit({ keyId, cost: 1, budget, now: Date.now() })).hourly.used

      expect((await h.get(check)).headers.get('x-ratelimit-used')).toBe('1')
      expect(await viaB()).toBe(2)
      expect((await h.get(check)).headers.get('x-ratelimit-used')).toBe('3')

      running.pop()!.kill('SIGKILL')
      // Every request is answered, with its headers, and none waits long for the dead Redis.
      for (let i = 0; i < 20; i++) {
        const started = performance.now()
        const r = await h.get(check)
        expect(r.status).toBe(200)
        expect(r.headers.get('x-ratelimit-limit')).toBe('1000')
        expect(Number(r.headers.get('x-ratelimit-used'))).toBeGreaterThan(0)
        expect(performance.now() - started).toBeLessThan(1000)
      }
      expect(a.state).toBe('fallback')
      const ready = await h.get('/readyz', { key: null })
      expect(ready.status).toBe(200)
      expect(ready.body.status).toBe('degraded')
      expect(ready.body.checks.meter).toStartWith('degraded')

      running.push(await startRedis(port))
      const recoveredInMs = await until(() => a.state === 'primary', 10_000)
      expect(recoveredInMs).toBeLessThan(10_000)
      // The new Redis kept nothing (no persistence here): counting starts again, shared by both.
      await until(async () => (await b.ping()).state === 'ok', 10_000)
      expect((await h.get(check)).headers.get('x-ratelimit-used')).toBe('1')
      expect(await viaB()).toBe(2)
      expect((await h.get(check)).headers.get('x-ratelimit-used')).toBe('3')
      expect((await h.get('/readyz', { key: null })).body).toEqual({ status: 'ok', checks: { store: 'ok', meter: 'ok', ecosystems: 'ok' } })
      await Promise.all([a.close(), b.close(), h.close()])
    }, 60_000)

    test('closed (the default, METER_REDIS_OUTAGE): killed, every metered request is a 503 saying so with the count Redis last gave, readiness fails; restarted, shared again', async () => {
      const port = await freePort()
      const url = `redis://127.0.0.1:${port}`
      running.push(await startRedis(port))
      const a = createResilientMeter({ primary: createRedisMeter({ url }), fallback: createMemoryMeter(), outage: 'closed', probeMs: 200 })
      // Closed, a ping throws until Redis answers (it connects in the background).
      await until(() => a.ping().then((s) => s.state === 'ok', () => false), 5000)
      const h = await createHarness({ meter: a, org: { hourlyBudget: 1000 } })
      expect((await h.get(check)).headers.get('x-ratelimit-used')).toBe('1')
      expect((await h.get(check)).headers.get('x-ratelimit-used')).toBe('2')

      running.pop()!.kill('SIGKILL')
      for (let i = 0; i < 5; i++) {
        const started = performance.now()
        const r = await h.get(check)
        expect(r.status).toBe(503)
        expect(r.body).toMatchObject({ code: 503, status: 'UNAVAILABLE', context: { meter: 'unavailable' } })
        expect(r.body.error).toMatch(/cannot meter requests now \(redis unreachable\) and admits none it cannot count; retry shortly/)
        // Told its usage as Redis last counted it, and when to try again: not a budget's window.
        expect([r.headers.get('x-ratelimit-limit'), r.headers.get('x-ratelimit-used'), r.headers.get('retry-after'), r.headers.get('x-ratelimit-reset')]).toEqual(['1000', '2', '1', null])
        expect(performance.now() - started).toBeLessThan(1000)
      }
      const ready = await h.get('/readyz', { key: null })
      expect(ready.status).toBe(503)
      expect(ready.body.checks.meter).toMatch(/^unavailable: redis unreachable .*; metered requests are refused until it is back$/)
      // What needs no meter still answers.
      expect((await h.get('/healthz', { key: null })).status).toBe(200)

      running.push(await startRedis(port))
      await until(() => a.state === 'primary', 10_000)
      // The new Redis kept nothing: counting starts again; nothing was admitted while it was down.
      expect((await h.get(check)).headers.get('x-ratelimit-used')).toBe('1')
      expect((await h.get('/readyz', { key: null })).status).toBe(200)
      await Promise.all([a.close(), h.close()])
    }, 60_000)

    test('hung (SIGSTOP): requests wait at most the timeout, then resume shared when it wakes (SIGCONT)', async () => {
      const port = await freePort()
      const url = `redis://127.0.0.1:${port}`
      const redis = await startRedis(port)
      running.push(redis)
      const a: ResilientMeter = meterOver(url)
      await until(async () => (await a.ping()).state === 'ok', 5000)
      const h = await createHarness({ meter: a, org: { hourlyBudget: 1000 } })
      expect((await h.get(check)).headers.get('x-ratelimit-used')).toBe('1')

      redis.kill('SIGSTOP')
      try {
        const started = performance.now()
        const r = await h.get(check)
        expect(r.status).toBe(200)
        expect(performance.now() - started).toBeLessThan(1500)
        expect(a.state).toBe('fallback')
      } finally {
        redis.kill('SIGCONT')
      }
      await until(() => a.state === 'primary', 10_000)
      // The same Redis, woken, ran the script that had timed out; its charge was taken back when its answer came, as
      // the request had been metered in-process (it had counted twice: 3).
      expect((await h.get(check)).headers.get('x-ratelimit-used')).toBe('2')
      await Promise.all([a.close(), h.close()])
    }, 60_000)

    test.each([
      ['a moment', 0],
      // Past STALL_MS: the connection is replaced meanwhile, and the old one must still take the scripts' answers.
      ['4 s', 4000],
    ])('closed, hung (SIGSTOP) for %s: the 503s it caused are not charged once Redis wakes and runs their scripts', async (_, pausedMs) => {
      const port = await freePort()
      const redis = await startRedis(port)
      running.push(redis)
      const a = createResilientMeter({ primary: createRedisMeter({ url: `redis://127.0.0.1:${port}` }), fallback: createMemoryMeter(), outage: 'closed', probeMs: 200 })
      // Closed, a ping fails until the client has connected.
      await until(() => a.ping().then((s) => s.state === 'ok', () => false), 5000)
      const h = await createHarness({ meter: a, org: { hourlyBudget: 1000 } })
      expect((await h.get(check)).headers.get('x-ratelimit-used')).toBe('1')
      redis.kill('SIGSTOP')
      try {
        // Five at once: each script is sent, none answered in time.
        const refused = await Promise.all(Array.from({ length: 5 }, () => h.get(check)))
        expect(refused.map((r) => [r.status, r.headers.get('retry-after')])).toEqual(Array(5).fill([503, '1']))
        await Bun.sleep(pausedMs)
      } finally {
        redis.kill('SIGCONT')
      }
      await until(() => a.state === 'primary', 10_000)
      // The refunds go once the late answers come, again where the new connection is still being made: the hour's
      // count, read in Redis, comes back to the 1 served.
      const hourCount = () => Bun.spawnSync(['redis-cli', '-p', String(port), 'get', `{earn:${h.org.secretKeyId}}:h:${Math.floor(Date.now() / 3_600_000)}`]).stdout.toString().trim()
      await until(() => hourCount() === '1', 20_000).catch(() => undefined)
      // Nothing was served, so nothing counts: 1 before, and this one (it had been 7, and each retry of a 503 charged).
      expect((await h.get(check)).headers.get('x-ratelimit-used')).toBe('2')
      await Promise.all([a.close(), h.close()])
    }, 60_000)

    test('a long outage leaves one connection once Redis is back: clients replaced meanwhile are not kept reconnecting', async () => {
      const port = await freePort()
      let redis = await startRedis(port)
      running.push(redis)
      const connections = () =>
        Bun.spawnSync(['redis-cli', '-p', String(port), 'client', 'list']).stdout.toString().split('\n').filter((l) => l.includes('name=earn-meter')).length
      const a = meterOver(`redis://127.0.0.1:${port}`)
      await until(async () => (await a.ping()).state === 'ok', 5000)
      expect(connections()).toBe(1)
      redis.kill('SIGKILL')
      await redis.exited
      await a.ping()
      // Past several STALL_MS: a client is replaced every couple of seconds while Redis is gone.
      await Bun.sleep(9000)
      redis = await startRedis(port)
      running.push(redis)
      await until(() => a.state === 'primary', 10_000)
      await Bun.sleep(2500)
      // It had been one per replacement (each kept a minute, reconnecting every second).
      expect(connections()).toBe(1)
      await a.close()
    }, 60_000)

    describe("this month's usage kept in the store, carried into Redis (openMeter)", () => {
      const logger = { info() {}, error() {} } as unknown as Parameters<typeof openMeter>[1]['logger']
      const config = (port: number, prefix: string) => parseConfig({ REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_KEY_PREFIX: prefix })
      const storeWithUsage = async (keyId: string, now: number) => {
        const store = createStore({ engine: 'sqlite', path: ':memory:' })
        await store.migrate(now)
        await store.addKeyUsage([{ keyId, month: windowsAt(now).monthId, used: 40, hour: windowsAt(now).hourId, hourUsed: 4 }])
        return store
      }
      const budget = { hourly: 1000, monthly: 100_000 }

      test('a Redis that answers only seconds after the start gets it once it does', async () => {
        const port = await freePort()
        const now = Date.now()
        const store = await storeWithUsage('key_late', now)
        const opening = openMeter(config(port, 'late'), { store, clock: systemClock, logger })
        await Bun.sleep(3500)
        running.push(await startRedis(port))
        const meter = await opening
        // Refused (503s, nothing charged) until the meter's probe finds Redis; the first admitted goes on from the store's.
        let decision: Awaited<ReturnType<typeof meter.admit>> | undefined
        await until(async () => !(decision = await meter.admit({ keyId: 'key_late', cost: 1, budget, now: Date.now() })).unavailable, 10_000)
        expect([decision!.monthly.used, decision!.hourly.used]).toEqual([41, 5])
        await Promise.all([meter.close(), store.close()])
      }, 30_000)

      test('a Redis that goes silent as it is carried into does not hold the start', async () => {
        const port = await freePort()
        const redis = await startRedis(port)
        running.push(redis)
        const real = await storeWithUsage('key_silent', Date.now())
        const store: typeof real = Object.create(real)
        // The real store's rows, read once Redis has been stopped (SIGSTOP: connected, silent).
        store.loadKeyUsage = (month) => (redis.kill('SIGSTOP'), real.loadKeyUsage(month))
        try {
          const started = performance.now()
          const meter = await openMeter(config(port, 'silent'), { store, clock: systemClock, logger })
          expect(performance.now() - started).toBeLessThan(8000)
          await meter.close()
        } finally {
          redis.kill('SIGCONT')
          await real.close()
        }
      }, 30_000)
    })

    test('a route that dies silently: answered meanwhile, and a new connection is made once it is back', async () => {
      const port = await freePort()
      running.push(await startRedis(port))
      const proxy = cuttableProxy(port)
      const a = meterOver(`redis://127.0.0.1:${proxy.port}`)
      try {
        await until(async () => (await a.ping()).state === 'ok', 5000)
        const h = await createHarness({ meter: a, org: { hourlyBudget: 1000 } })
        expect((await h.get(check)).headers.get('x-ratelimit-used')).toBe('1')

        proxy.cut()
        for (let i = 0; i < 5; i++) {
          const started = performance.now()
          expect((await h.get(check)).status).toBe(200)
          expect(performance.now() - started).toBeLessThan(1500)
        }
        expect(a.state).toBe('fallback')
        await Bun.sleep(500)
        proxy.restore()
        // The old connection is still dead: only a new one (after STALL_MS without a PING answer) gets through.
        await until(() => a.state === 'primary', 15_000)
        // The script sent on the dead connection never reached Redis: its count is the 1 from before.
        expect((await h.get(check)).headers.get('x-ratelimit-used')).toBe('2')
        await h.close()
      } finally {
        await a.close()
        proxy.stop()
      }
    }, 60_000)
  })
} else describe.skip('Redis outage (redis-server is not installed)', () => {})
