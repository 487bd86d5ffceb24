import { afterAll, describe, expect, test } from 'bun:test'
import { ApiError, createStore, idempotently, manualClock, storeUnavailable } from '@earn/core'
import { actionRow } from '@earn/core/store/idempotency.suite'
import { LazyPostgresDialect } from '@earn/core/store/postgresDialect'
import { runStoreSuite } from '@earn/core/store/store.suite'
import { randomUUID } from 'node:crypto'
import postgres from 'postgres'
import { DATABASE_URL, freshSchema, postgresAvailable } from './services.ts'

if (await postgresAvailable()) {
  runStoreSuite('postgres', async () => {
    const { schema, drop } = await freshSchema()
    return { store: createStore({ engine: 'postgres', url: DATABASE_URL, schema }), cleanup: drop }
  })

  describe('store: postgres, expired nonces', () => {
    const cleanups: (() => Promise<unknown>)[] = []
    afterAll(async () => {
      for (const c of cleanups.reverse()) await c()
    })

    test('a cleanup skips the rows another is deleting rather than waiting for them', async () => {
      const { schema, drop } = await freshSchema()
      const store = createStore({ engine: 'postgres', url: DATABASE_URL, schema })
      const other = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
      cleanups.push(drop, () => store.close(), () => other.end())
      await store.migrate(Date.now())
      const nonces = [1_000, 2_000, 3_000].map((expiresAt) => ({
        nonce: randomUUID(), orgId: 'org', ecosystem: 'evm', address: '0x0000000000000000000000000000000000000001', message: 'm',
        chainId: '1', domain: 'example.com', uri: 'https://example.com', issuedAt: 0, expiresAt, consumedAt: null,
      }))
      for (const n of nonces) await store.insertNonce(n)
      // Another agreement's cleanup holds the oldest row in its transaction.
      const released = Promise.withResolvers<void>()
      const locked = Promise.withResolvers<void>()
      const holding = other.begin(async (trx) => {
        await trx.unsafe(`select nonce from ${schema}.nonces where nonce = $1 for update`, [nonces[0]!.nonce])
        locked.resolve()
        await released.promise
      })
      // The lock is taken once the other connection has connected and selected, not after a fixed wait (CI is slow).
      await locked.promise
      const started = performance.now()
      const deleted = await Promise.race([store.deleteExpiredNonces(10_000, 10), Bun.sleep(2_000).then(() => 'waited' as const)])
      released.resolve()
      await holding
      expect(deleted).toBe(2)
      expect(performance.now() - started).toBeLessThan(2_000)
      expect(await store.getNonce(nonces[0]!.nonce)).toBeDefined()
      expect(await store.getNonce(nonces[1]!.nonce)).toBeUndefined()
    })
  })

  describe('store: postgres, usage writes of two processes at once', () => {
    test('lock the same rows in one order: no deadlock however each process met its keys', async () => {
      const { schema, drop } = await freshSchema()
      const [a, b] = [createStore({ engine: 'postgres', url: DATABASE_URL, schema }), createStore({ engine: 'postgres', url: DATABASE_URL, schema })]
      try {
        await a.migrate(Date.now())
        const rows = Array.from({ length: 400 }, (_, i) => ({ keyId: `key_${String(i).padStart(4, '0')}`, month: '2032-03', used: 1, hour: 9, hourUsed: 1 }))
        const started = performance.now()
        for (let round = 0; round < 5; round++) {
          const outcomes = await Promise.allSettled([a.addKeyUsage(rows), b.addKeyUsage([...rows].reverse())])
          expect(outcomes.map((o) => (o.status === 'rejected' ? String((o.reason as { code?: string }).code) : 'ok'))).toEqual(['ok', 'ok'])
        }
        // A deadlock is found after PostgreSQL's deadlock_timeout (1 s): none waited for one.
        expect(performance.now() - started).toBeLessThan(5_000)
        expect((await a.loadKeyUsage('2032-03')).every((r) => r.used === 10)).toBe(true)
      } finally {
        await a.close()
        await b.close()
        await drop()
      }
    })
  })

  describe('store: postgres, a usage write whose COMMIT is still under way', () => {
    test('is waited for when asked about: written if it commits, taken (never to commit) if it rolls back', async () => {
      const { schema, drop } = await freshSchema()
      const store = createStore({ engine: 'postgres', url: DATABASE_URL, schema })
      const other = postgres(DATABASE_URL, { max: 1, onnotice: () => {}, connection: { search_path: schema } })
      try {
        await store.migrate(Date.now())
        for (const outcome of ['commit', 'rollback'] as const) {
          const write = { writer: randomUUID(), seq: 1, at: Date.now() }
          const inserted = Promise.withResolvers<void>()
          const end = Promise.withResolvers<void>()
          const held = other.begin(async (trx) => {
            await trx`insert into usage_writes (writer, seq, at) values (${write.writer}, ${write.seq}, ${write.at})`
            inserted.resolve()
            await end.promise
            if (outcome === 'rollback') throw new Error('rolled back')
          }).catch(() => undefined)
          await inserted.promise
          let answered = false
          const asked = store.claimUsageWrite(write).then((written) => ((answered = true), written))
          await Bun.sleep(200)
          // A read would have answered "not written" by now; the claim waits for the transaction.
          expect(answered).toBe(false)
          end.resolve()
          await held
          expect(await asked).toBe(outcome === 'commit')
        }
      } finally {
        await store.close()
        await other.end()
        await drop()
      }
    })
  })

  describe('store: postgres, a database that takes no writes', () => {
    test('a read-only transaction (a standby after a failover) is unwritable, a 503 like the other unavailable states', async () => {
      const sql = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
      const error = await sql
        .begin('read only', (trx) => trx`create temporary table t_readonly (x int)`)
        .then(() => undefined, (e: unknown) => e)
      await sql.end()
      expect([storeUnavailable(error), (error as { code?: string }).code]).toEqual(['unwritable', '25006'])
    })
  })

  describe('store: postgres, a schema that does not exist', () => {
    test('the migration names the search_path and says to create it', async () => {
      const store = createStore({ engine: 'postgres', url: DATABASE_URL, schema: 'no_such_schema_here' })
      try {
        const error = await store.migrate(Date.now()).then(() => undefined, (e: unknown) => e)
        expect((error as Error).message).toBe(
          "PostgreSQL has no schema to create the tables in: the search_path (no_such_schema_here: DATABASE_URL's ?search_path=, else the role's or the database's default) names none that exists; create it first (CREATE SCHEMA ...)",
        )
      } finally {
        await store.close()
      }
    })
  })

  describe('store: postgres, two imports at once', () => {
    test('creating the same new opportunity: one creates it, the other updates it, neither fails', async () => {
      const { schema, drop } = await freshSchema()
      const [a, b] = [0, 1].map(() => createStore({ engine: 'postgres', url: DATABASE_URL, schema }))
      try {
        await a!.migrate(Date.now())
        await Promise.all([a!.ping(), b!.ping()])
        for (let round = 0; round < 5; round++) {
          const row = {
            id: randomUUID(), ecosystem: 'evm', chainId: '1', vaultAddress: '0x' + 'aa'.repeat(20), listing: '{"name":"x"}', chainFacts: null,
            tvl: 0, refreshedAt: null, refreshError: null, delistedAt: null, createdAt: 1, updatedAt: 1,
          }
          const results = await Promise.all([a!.upsertOpportunities([{ row, depositTokens: ['0xa'] }]), b!.upsertOpportunities([{ row, depositTokens: ['0xa'] }])])
          expect(results.map((r) => r[0]!.result).sort()).toEqual(['created', 'updated'])
          expect((await a!.getOpportunity(row.id))?.listing).toBe('{"name":"x"}')
        }
      } finally {
        await Promise.all([a!.close(), b!.close()])
        await drop()
      }
    })
  })

  describe('store: postgres, two imports of the same entries in opposite orders', () => {
    test('neither deadlocks: rows are locked in id order, outcomes come back in the file\'s order', async () => {
      const { schema, drop } = await freshSchema()
      const [a, b] = [0, 1].map(() => createStore({ engine: 'postgres', url: DATABASE_URL, schema }))
      try {
        await a!.migrate(Date.now())
        await Promise.all([a!.ping(), b!.ping()])
        const rows = Array.from({ length: 200 }, (_, i) => ({
          id: randomUUID(), ecosystem: 'evm', chainId: '1', vaultAddress: '0x' + 'aa'.repeat(20), listing: `{"name":"${i}"}`, chainFacts: null,
          tvl: 0, refreshedAt: null, refreshError: null, delistedAt: null, createdAt: 1, updatedAt: 1,
        }))
        await a!.upsertOpportunities(rows.map((row) => ({ row, depositTokens: ['0xa'] })))
        for (let round = 0; round < 3; round++) {
          const forwards = rows.map((row) => ({ row: { ...row, updatedAt: 2 + round }, depositTokens: ['0xb'] }))
          const backwards = [...forwards].reverse()
          const results = await Promise.all([a!.upsertOpportunities(forwards), b!.upsertOpportunities(backwards)])
          for (const r of results) expect(r.map((o) => o.result)).toEqual(rows.map(() => 'updated'))
        }
        // The outcome of a new entry placed among existing ones is reported at its place in the file.
        const fresh = { ...rows[0]!, id: randomUUID() }
        const outcomes = await a!.upsertOpportunities([rows[5]!, fresh, rows[1]!].map((row) => ({ row, depositTokens: [] })))
        expect(outcomes.map((o) => o.result)).toEqual(['updated', 'created', 'updated'])
      } finally {
        await Promise.all([a!.close(), b!.close()])
        await drop()
      }
    })
  })

  describe('store: postgres, a connection PostgreSQL closes', () => {
    test('before COMMIT: the commit fails as unreachable, and the rollback Kysely sends then is a no-op', async () => {
      const { schema, drop } = await freshSchema()
      const driver = new LazyPostgresDialect({ url: DATABASE_URL, schema }).createDriver()
      const admin = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
      try {
        await driver.init()
        const connection = await driver.acquireConnection()
        await driver.beginTransaction(connection, {})
        const query = (text: string) => connection.executeQuery<{ pid: number }>({ sql: text, parameters: [], query: undefined as never, queryId: undefined as never })
        const { pid } = (await query('select pg_backend_pid() as pid')).rows[0]!
        await admin`select pg_terminate_backend(${pid})`
        await Bun.sleep(100)
        const failed = await driver.commitTransaction(connection).then(() => undefined, (e: unknown) => e)
        expect(storeUnavailable(failed)).toBe('unreachable')
        // Kysely's own sequence after a failed commit: it rolls back, and that must not hide the commit's error.
        await driver.rollbackTransaction(connection)
        await driver.releaseConnection(connection)
        const next = await driver.acquireConnection()
        expect((await next.executeQuery<{ one: number }>({ sql: 'select 1 as one', parameters: [], query: undefined as never, queryId: undefined as never })).rows).toEqual([{ one: 1 }])
      } finally {
        await driver.destroy()
        await admin.end()
        await drop()
      }
    }, 20_000)

    test('connections closed over and over (pg_terminate_backend in a loop): no unhandled error, and each statement answers or fails within seconds', async () => {
      const { schema, drop } = await freshSchema()
      // Its own name, so that only its connections are terminated.
      const applicationName = `earn-test-${randomUUID()}`
      const store = createStore({ engine: 'postgres', url: DATABASE_URL, schema, applicationName })
      const admin = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
      const unhandled: unknown[] = []
      const record = (e: unknown) => unhandled.push(e)
      process.on('unhandledRejection', record)
      process.on('uncaughtException', record)
      try {
        await store.migrate(Date.now())
        let slowest = 0
        let failed = 0
        for (let round = 0; round < 2; round++) {
          const statements = Array.from({ length: 1500 }, async (_, i) => {
            await Bun.sleep(i % 300)
            const started = performance.now()
            await store.getSetting(`s${i}`).catch(() => failed++)
            slowest = Math.max(slowest, performance.now() - started)
          })
          for (let k = 0; k < 150; k++) {
            await admin`select pg_terminate_backend(pid) from pg_stat_activity where application_name = ${applicationName}`
            await Bun.sleep(1)
          }
          await Promise.all(statements)
        }
        // The terminations did hit statements (those fail)...
        expect(failed).toBeGreaterThan(0)
        // ...yet none waited out postgres.js's reconnect backoff (up to 20 s by default), and nothing was left
        // unhandled: postgres.js's own query for array types at each connection's start rejected unhandled, which
        // ends a Bun process.
        expect(slowest).toBeLessThan(5_000)
        expect(unhandled).toEqual([])
        expect(await store.getSetting('after')).toBeUndefined()
      } finally {
        process.off('unhandledRejection', record)
        process.off('uncaughtException', record)
        await store.close()
        await admin.end()
        await drop()
      }
    }, 60_000)

    test('inside a transaction: the call fails as unreachable, the transaction is rolled back, the process and the pool go on', async () => {
      const { schema, drop } = await freshSchema()
      const store = createStore({ engine: 'postgres', url: DATABASE_URL, schema })
      const admin = postgres(DATABASE_URL, { max: 2, onnotice: () => {} })
      const uncaught: unknown[] = []
      const record = (e: unknown) => uncaught.push(e)
      process.on('uncaughtException', record)
      try {
        await store.migrate(Date.now())
        const now = Date.now()
        const address = '0x00000000000000000000000000000000000000a1'
        const nonce = { nonce: randomUUID(), orgId: 'org', ecosystem: 'evm', address, message: 'm', chainId: '1', domain: 'example.com', uri: 'https://example.com', issuedAt: now, expiresAt: now + 60_000, consumedAt: null }
        await store.insertNonce(nonce)
        const member = { ecosystem: 'evm', address, orgId: 'org', distributorId: null, chainId: '1', createdAt: now }
        // Another session's uncommitted row for the same wallet holds the store's INSERT inside its transaction.
        const held = Promise.withResolvers<number>()
        const release = Promise.withResolvers<void>()
        const holder = admin
          .begin(async (trx) => {
            await trx.unsafe(`insert into ${schema}.members (ecosystem, address, org_id, created_at) values ('evm', $1, 'other', 0)`, [address])
            held.resolve((await trx`select pg_backend_pid() as pid`)[0]!.pid)
            await release.promise
            throw new Error('roll back')
          })
          .catch(() => {})
        const holderPid = await held.promise
        const creating = store.createMemberWithNonce(nonce.nonce, member, now)
        let victim: number | undefined
        for (let i = 0; i < 100 && victim === undefined; i++) {
          victim = (await admin`select pid from pg_stat_activity where ${holderPid}::int = any(pg_blocking_pids(pid))`)[0]?.pid
          if (victim === undefined) await Bun.sleep(20)
        }
        expect(victim).toBeNumber()
        await admin`select pg_terminate_backend(${victim!})`
        const failed = await creating.then(() => undefined, (e: unknown) => e)
        expect(storeUnavailable(failed)).toBe('unreachable')
        release.resolve()
        await holder
        // postgres.js threw from a timer here, writing to the closed connection's socket: the process ended.
        await Bun.sleep(200)
        expect(uncaught).toEqual([])
        expect((await store.getNonce(nonce.nonce))?.consumedAt).toBeNull()
        expect(await store.createMemberWithNonce(nonce.nonce, member, now + 1)).toEqual({ ok: true, member })
      } finally {
        process.off('uncaughtException', record)
        const closed = await Promise.race([store.close().then(() => 'closed'), Bun.sleep(8_000).then(() => 'hung')])
        await admin.end()
        await drop()
        expect(closed).toBe('closed')
      }
    }, 30_000)
  })

  describe('store: postgres, a database that takes no writes', () => {
    test('is said unwritable (a read-only role, as a standby is); one that takes writes passes', async () => {
      const { schema, drop } = await freshSchema()
      const admin = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
      const role = `earn_ro_${randomUUID().slice(0, 8)}`
      const writer = createStore({ engine: 'postgres', url: DATABASE_URL, schema })
      const url = new URL(DATABASE_URL)
      url.username = role
      const reader = createStore({ engine: 'postgres', url: url.toString(), schema })
      try {
        await writer.migrate(Date.now())
        await writer.checkWritable()
        await admin.unsafe(`create role ${role} login`)
        await admin.unsafe(`alter role ${role} set default_transaction_read_only = on`)
        await admin.unsafe(`grant usage on schema ${schema} to ${role}`)
        await reader.ping()
        const refused = await reader.checkWritable().then(() => undefined, (e: unknown) => e)
        expect(storeUnavailable(refused)).toBe('unwritable')
        expect((refused as Error).message).toBe('the database at DATABASE_URL takes no writes (a standby, or a session made read-only)')
        // A role that may read the tables but not write them.
        await admin.unsafe(`alter role ${role} reset default_transaction_read_only`)
        await admin.unsafe(`grant select on all tables in schema ${schema} to ${role}`)
        const selectOnly = createStore({ engine: 'postgres', url: url.toString(), schema })
        try {
          const denied = await selectOnly.checkWritable().then(() => undefined, (e: unknown) => e)
          expect([storeUnavailable(denied), (denied as Error).message]).toEqual(['unwritable', "the database role of DATABASE_URL may not write the store's tables"])
        } finally {
          await selectOnly.close()
        }
      } finally {
        await reader.close()
        await writer.close()
        await drop()
        await admin.unsafe(`drop role if exists ${role}`)
        await admin.end()
      }
    })
  })

  describe('store: postgres, an idempotent creation whose connections PostgreSQL drops', () => {
    test('the write fails (503) and the key is given up once the pool has reconnected: the retry builds, no 409 for a minute', async () => {
      const { schema, drop } = await freshSchema()
      const applicationName = `earn_idem_${randomUUID().slice(0, 8)}`
      const store = createStore({ engine: 'postgres', url: DATABASE_URL, schema, applicationName })
      const admin = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
      try {
        await store.migrate(Date.now())
        const clock = manualClock(Date.now())
        const request = { orgId: 'o', key: randomUUID(), operation: 'streams.create', input: { n: 1 } }
        // Several pooled connections, all of which the drop ends.
        await Promise.all(Array.from({ length: 4 }, () => store.getAction(randomUUID())))
        const row = actionRow()
        const failed = await idempotently({ store, clock }, request, async (answering) => {
          await admin.unsafe('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1', [applicationName])
          await store.insertActions([row], [answering!({ actionId: row.id })])
          return row.id
        }).catch((e: unknown) => e)
        expect(storeUnavailable(failed)).toBe('unreachable')
        // Within the background tries (the first at 250 ms), well inside the 60 s lease; a retry may also meet another
        // connection the drop ended (a 503 of its own, as a client would see it).
        let retry: unknown
        for (let i = 0; i < 40; i++) {
          retry = await idempotently({ store, clock }, request, async () => 'built').catch((e: unknown) => e)
          if (!(retry instanceof ApiError && retry.status === 409) && !storeUnavailable(retry)) break
          await Bun.sleep(100)
        }
        expect(retry).toEqual({ replayed: false, result: 'built' })
        expect(await store.getAction(row.id)).toBeUndefined()
      } finally {
        await store.close()
        await admin.end()
        await drop()
      }
    })
  })
} else describe.skip('store: postgres (PostgreSQL not reachable)', () => {})
