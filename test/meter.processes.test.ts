/**
 * Three real server processes on one PostgreSQL and one Redis, hit at once with three times a key's
 * hourly budget: the admitted units never pass the budget and fall short of it by less than one
 * request's cost. Then every process restarts: the month's usage is still there (it lives in Redis).
 */
import { describe, expect, test } from 'bun:test'
import { createClient } from 'redis'
import { randomBytes } from 'node:crypto'
import { runCli, type ServerProcess, startServer } from './process.ts'
import { DATABASE_URL, freshSchema, postgresAvailable, REDIS_URL, redisAvailable } from './services.ts'

const BUDGET = 60
// Two operations of different costs; the 400 of an empty create body is charged like any admitted request.
const CHECK = { cost: 1, method: 'GET', path: '/v2/membership/?address=0x000000000000000000000000000000000000dEaD' }
const CREATE = { cost: 5, method: 'POST', path: '/v2/membership/' }

if ((await postgresAvailable()) && (await redisAvailable())) {
  describe('metering across three server processes on one Redis', () => {
    test('admitted units stay within the budget, short of it by less than one cost, and survive restarts', async () => {
      const { schema, drop } = await freshSchema()
      // A prefix of the test's own (REDIS_KEY_PREFIX), so its keys are told apart from any other deployment's.
      const prefix = `t-${randomBytes(4).toString('hex')}`
      const env = { DATABASE_URL: `${DATABASE_URL}?search_path=${schema}`, REDIS_URL, REDIS_KEY_PREFIX: prefix }
      let servers: ServerProcess[] = []
      let keyIds: string[] = []
      try {
        servers = await Promise.all([startServer(env), startServer(env), startServer(env)])
        const org = await runCli(['org', 'create', '--name', 'Metered', '--hourly-budget', String(BUDGET), '--monthly-budget', '100000', '--json'], env)
        expect(org.code, org.stderr).toBe(0)
        const { secretKey, secretKeyId, publishableKeyId } = org.json()
        keyIds = [secretKeyId, publishableKeyId]

        // 30 x 5 + 30 x 1 = 3 x BUDGET, interleaved and spread round-robin over the processes.
        const plan = Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? CREATE : CHECK))
        const responses = await Promise.all(
          plan.map(async (op, i) => {
            const r = await fetch(servers[i % servers.length]!.url + op.path, {
              method: op.method,
              headers: { 'x-api-key': secretKey, ...(op.method === 'POST' ? { 'content-type': 'application/json' } : {}) },
              body: op.method === 'POST' ? '{}' : undefined,
            })
            await r.arrayBuffer()
            return { op, status: r.status, used: Number(r.headers.get('x-ratelimit-used')) }
          }),
        )
        expect(plan.reduce((s, op) => s + op.cost, 0)).toBe(3 * BUDGET)
        expect(new Set(responses.map((r) => r.status))).toEqual(new Set([200, 400, 429]))
        const admitted = responses.filter((r) => r.status !== 429).reduce((s, r) => s + r.op.cost, 0)
        expect(admitted).toBeLessThanOrEqual(BUDGET)
        expect(admitted).toBeGreaterThan(BUDGET - CREATE.cost)
        for (const r of responses) expect(r.used).toBeLessThanOrEqual(BUDGET)

        // Fill what is left with cost-1 checks: then every process refuses, reading the one shared count.
        let filled = admitted
        for (let i = 0; filled < BUDGET; i++) {
          const r = await fetch(servers[i % servers.length]!.url + CHECK.path, { headers: { 'x-api-key': secretKey } })
          expect(r.status).toBe(200)
          filled += CHECK.cost
        }
        const refusals = async () =>
          Promise.all(
            servers.map(async (s) => {
              const r = await fetch(s.url + CHECK.path, { headers: { 'x-api-key': secretKey } })
              return { status: r.status, hourly: r.headers.get('x-ratelimit-used'), monthly: r.headers.get('x-monthly-usage') }
            }),
          )
        const full = { status: 429, hourly: String(BUDGET), monthly: String(BUDGET) }
        expect(await refusals()).toEqual([full, full, full])

        // Every process restarts: the hour's and the month's usage are in Redis, not in a process.
        for (const s of servers) expect(await s.stop()).toBe(0)
        servers = await Promise.all([startServer(env), startServer(env), startServer(env)])
        expect(await refusals()).toEqual([full, full, full])
        // The counters live under the configured prefix, none under the default.
        const raw = createClient({ url: REDIS_URL })
        await raw.connect()
        try {
          expect((await raw.keys(`{${prefix}:${secretKeyId}}:*`)).map((k) => k.split(':').at(-2)).sort()).toEqual(['h', 'm'])
          expect(await raw.keys(`{earn:${secretKeyId}}:*`)).toEqual([])
        } finally {
          await raw.close()
        }
      } finally {
        await Promise.all(servers.map((s) => s.stop()))
        await drop()
        const raw = createClient({ url: REDIS_URL })
        await raw.connect()
        for (const id of keyIds) {
          const keys = await raw.keys(`{${prefix}:${id}}:*`)
          if (keys.length) await raw.del(keys)
        }
        await raw.close()
      }
    }, 120_000)
  })
} else describe.skip('metering across processes (PostgreSQL or Redis not reachable)', () => {})
