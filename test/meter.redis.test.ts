/** The shared meter suite against a real Redis, with three clients standing for three server processes. */
import { describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { createClient } from 'redis'
import { runMeterSuite } from '@earn/core/metering/meter.suite'
import { createMemoryMeter } from '@earn/core/metering/memory'
import { createRedisMeter, isRedisRefusal } from '@earn/core/metering/redis'
import { createResilientMeter } from '@earn/core/metering/resilient'
import { pausingHandler } from './pause.ts'
import { REDIS_URL, redisAvailable } from './services.ts'

async function deleteKeys(prefix: string) {
  const raw = createClient({ url: REDIS_URL })
  await raw.connect()
  const keys = await raw.keys(`{${prefix}:*`)
  if (keys.length) await raw.del(keys)
  await raw.close()
}

if (await redisAvailable()) {
  runMeterSuite('redis, three clients', async () => {
    // A prefix of its own, so the suite's keys are found and deleted afterwards.
    const prefix = `test-${randomUUID()}`
    const meters = Array.from({ length: 3 }, () => createRedisMeter({ url: REDIS_URL, prefix }))
    await Promise.all(meters.map((m) => m.connected))
    return {
      meters,
      async close() {
        await Promise.all(meters.map((m) => m.close()))
        await deleteKeys(prefix)
      },
    }
  })

  describe('redis meter: keys', () => {
    test('both counters of a key share one hash tag and expire a margin after their window', async () => {
      const raw = createClient({ url: REDIS_URL })
      await raw.connect()
      const prefix = `t${randomUUID().slice(0, 8)}`
      const meter = createRedisMeter({ client: raw, prefix, expiryMarginMs: 60_000 })
      const now = Date.parse('2031-01-31T23:30:00Z')
      await meter.admit({ keyId: 'key_A', cost: 4, budget: { hourly: 10, monthly: null }, now })
      const keys = (await raw.keys(`{${prefix}:*`)).sort()
      const hourId = Math.floor(now / 3_600_000)
      expect(keys).toEqual([`{${prefix}:key_A}:h:${hourId}`, `{${prefix}:key_A}:m:2031-01`])
      expect(await raw.get(keys[0]!)).toBe('4')
      expect(await raw.get(keys[1]!)).toBe('4')
      // 30 minutes to the hour's end (and the month's), plus the margin, counted from the server's clock.
      for (const k of keys) {
        const ttl = await raw.pTTL(k)
        expect(ttl).toBeLessThanOrEqual(30 * 60_000 + 60_000)
        expect(ttl).toBeGreaterThan(30 * 60_000 + 60_000 - 5_000)
      }
      // A refusal writes nothing.
      await meter.admit({ keyId: 'key_A', cost: 7, budget: { hourly: 10, monthly: null }, now })
      expect(await raw.get(keys[0]!)).toBe('4')
      await raw.del(keys)
      await raw.close()
    })

    test('a refund takes a charge back from both counters once, never below zero, and makes no counter that is absent', async () => {
      const raw = createClient({ url: REDIS_URL })
      await raw.connect()
      const prefix = `t${randomUUID().slice(0, 8)}`
      const meter = createRedisMeter({ client: raw, prefix })
      const now = Date.parse('2031-01-31T23:30:00Z')
      const budget = { hourly: 10, monthly: 50 }
      await meter.admit({ keyId: 'key_A', cost: 4, budget, now })
      await meter.admit({ keyId: 'key_A', cost: 3, budget, now })
      await meter.refund!({ keyId: 'key_A', cost: 3, budget, now }, 'r1')
      const [hour, month] = [`{${prefix}:key_A}:h:${Math.floor(now / 3_600_000)}`, `{${prefix}:key_A}:m:2031-01`]
      expect([await raw.get(hour), await raw.get(month)]).toEqual(['4', '4'])
      // The same charge's refund sent again (its answer lost) takes nothing more.
      await meter.refund!({ keyId: 'key_A', cost: 3, budget, now }, 'r1')
      expect([await raw.get(hour), await raw.get(month)]).toEqual(['4', '4'])
      // The expiry stays.
      expect(await raw.pTTL(hour)).toBeGreaterThan(0)
      await meter.refund!({ keyId: 'key_A', cost: 9, budget, now }, 'r2')
      expect([await raw.get(hour), await raw.get(month)]).toEqual(['0', '0'])
      await meter.refund!({ keyId: 'key_B', cost: 2, budget, now }, 'r3')
      // Only the refund's own mark, which expires.
      expect(await raw.keys(`{${prefix}:key_B}*`)).toEqual([`{${prefix}:key_B}:r:r3`])
      expect(await raw.pTTL(`{${prefix}:key_B}:r:r3`)).toBeGreaterThan(0)
      await raw.del([hour, month, `{${prefix}:key_A}:r:r1`, `{${prefix}:key_A}:r:r2`, `{${prefix}:key_B}:r:r3`])
      await raw.close()
    })

    test("a key's admits made in one turn share one script run; a later turn's go in runs of their own", async () => {
      const raw = createClient({ url: REDIS_URL })
      await raw.connect()
      const prefix = `test-${randomUUID()}`
      const runs: { key: string; admits: number }[] = []
      // The real client, counting the script runs, whose key each was for and how many admits each carried.
      const client = {
        sendCommand(args: string[]) {
          if (args[0] === 'EVALSHA' || args[0] === 'EVAL') runs.push({ key: args[3]!.split('}')[0]!.split(':').at(-1)!, admits: args.length - 9 })
          return raw.sendCommand(args)
        },
      }
      const meter = createRedisMeter({ client, prefix })
      const budget = { hourly: 100, monthly: null }
      const now = Date.parse('2031-01-01T00:00:00Z')
      const admit = (keyId: string) => meter.admit({ keyId, cost: 1, budget, now })
      const first = Array.from({ length: 5 }, () => admit('key_A'))
      await new Promise((r) => setImmediate(r)) // the turn has ended: the first run has left, awaiting its answer
      const second = [...Array.from({ length: 3 }, () => admit('key_A')), admit('key_B')]
      const answers = await Promise.all([...first, ...second])
      expect(runs).toEqual([
        { key: 'key_A', admits: 5 },
        { key: 'key_A', admits: 3 },
        { key: 'key_B', admits: 1 },
      ])
      expect(answers.map((d) => d.hourly.used)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 1])
      await raw.close()
      await deleteKeys(prefix)
    })

    test("a pause of the process's own longer than the timeout is not Redis's outage", async () => {
      const prefix = `test-${randomUUID()}`
      const redis = createRedisMeter({ url: REDIS_URL, prefix })
      await redis.connected
      const changes: string[] = []
      const meter = createResilientMeter({ primary: redis, fallback: createMemoryMeter(), outage: 'open', timeoutMs: 200, onChange: (s) => changes.push(s) })
      const p = { keyId: 'key_A', cost: 3, budget: { hourly: 10, monthly: null }, now: Date.parse('2031-01-01T00:00:00Z') }
      const admitted = meter.admit(p)
      // The pause, before the admit has even left: this thread is busy past the timeout, as while a chain plugin loads.
      const until = performance.now() + 400
      while (performance.now() < until) {}
      expect((await admitted).hourly.used).toBe(3)
      expect(meter.state).toBe('primary')
      expect(changes).toEqual([])
      // The count is Redis's: another client of it sees it.
      const other = createRedisMeter({ url: REDIS_URL, prefix })
      await other.connected
      expect((await other.admit(p)).hourly.used).toBe(6)
      await Promise.all([meter.close(), other.close()])
      await deleteKeys(prefix)
    })

    test("a PING in flight across a pause of the process's own (a long handler) is answered, the connection kept", async () => {
      const redis = createRedisMeter({ url: REDIS_URL, prefix: `test-${randomUUID()}` })
      await redis.connected
      // A handler busy past the PING's 2 s, while Redis's answer waits to be read (test/pause.ts).
      const handler = pausingHandler(2_500)
      try {
        // The request reaches the handler in the same turn as the PING leaves: the PING is answered during the pause.
        const paused = handler.pause()
        const pinged = redis.ping()
        expect(await paused).toBe('done')
        // Counted in wall-clock time, the PING failed "did not answer within 2000 ms" and the connection was replaced.
        expect(await pinged).toEqual({ state: 'ok' })
      } finally {
        handler.stop()
        await redis.close()
      }
    })

    test('a Redis that forgot the script (restart, SCRIPT FLUSH) is sent it again', async () => {
      const raw = createClient({ url: REDIS_URL })
      await raw.connect()
      const prefix = `test-${randomUUID()}`
      const meter = createRedisMeter({ url: REDIS_URL, prefix })
      await meter.connected
      const p = { keyId: `key_${randomUUID()}`, cost: 1, budget: { hourly: 10, monthly: null }, now: Date.parse('2031-01-01T00:00:00Z') }
      await meter.admit(p)
      await raw.scriptFlush()
      expect((await meter.admit(p)).hourly.used).toBe(2)
      expect(await meter.ping()).toEqual({ state: 'ok' })
      await meter.close()
      await raw.close()
      await deleteKeys(prefix)
    })

    test("a Redis that answers PING but refuses the script is a refusal, probed ever less often; a lost connection is not", async () => {
      const raw = createClient({ url: REDIS_URL })
      await raw.connect()
      const user = `test-noeval-${randomUUID()}`
      // As an ACL that forgot EVALSHA: everything the meter sends but its script.
      await raw.sendCommand(['ACL', 'SETUSER', user, 'on', '>pw', '~*', '+@all', '-evalsha', '-eval'])
      const url = new URL(REDIS_URL)
      url.username = user
      url.password = 'pw'
      const refusing = createRedisMeter({ url: url.toString(), prefix: `test-${randomUUID()}` })
      const lost = createRedisMeter({ url: 'redis://127.0.0.1:1', prefix: 'test-lost' })
      try {
        await refusing.connected
        const p = { keyId: `key_${randomUUID()}`, cost: 1, budget: { hourly: 10, monthly: null }, now: Date.parse('2031-01-01T00:00:00Z') }
        const refusal = await refusing.admit(p).then(() => undefined, (e: unknown) => e)
        expect([isRedisRefusal(refusal), String(refusal)]).toEqual([true, expect.stringContaining('NOPERM')])
        const gone = await lost.admit(p).then(() => undefined, (e: unknown) => e)
        expect(gone).toBeInstanceOf(Error)
        expect(isRedisRefusal(gone)).toBe(false)

        const changes: string[] = []
        const meter = createResilientMeter({ primary: refusing, fallback: createMemoryMeter(), outage: 'open', probeMs: 20, refused: isRedisRefusal, onChange: (s) => changes.push(s) })
        const until = Date.now() + 1_000
        for (let i = 0; Date.now() < until; i++) {
          expect((await meter.admit({ ...p, keyId: `key_${i}` })).admitted).toBe(true)
          await Bun.sleep(2)
        }
        // Probing at a steady 20 ms would switch ~50 times a second; doubling leaves ~6 returns.
        expect(changes.length).toBeLessThanOrEqual(14)
      } finally {
        await refusing.close()
        await lost.close()
        await raw.sendCommand(['ACL', 'DELUSER', user])
        await raw.close()
      }
    })
  })
} else describe.skip('meter: redis (Redis not reachable)', () => {})
