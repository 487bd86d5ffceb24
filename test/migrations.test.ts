import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import postgres from 'postgres'
import { createStore, systemClock } from '@earn/core'
import { migrateStore } from '@earn/server/compose'
import { MIGRATIONS } from '@earn/core/store/migrations'
import { runCli } from './process.ts'
import { DATABASE_URL, freshSchema, postgresAvailable } from './services.ts'

if (await postgresAvailable()) {
  describe('migrations on one PostgreSQL', () => {
    test('three processes starting at once migrate exactly once', async () => {
      const { schema, drop } = await freshSchema()
      try {
        const procs = Array.from({ length: 3 }, () =>
          Bun.spawn([process.execPath, join(import.meta.dir, 'fixtures/migrate.ts'), DATABASE_URL, schema], { stdout: 'pipe', stderr: 'pipe' }),
        )
        const outputs = await Promise.all(procs.map(async (p) => ({ code: await p.exited, out: await new Response(p.stdout).text(), err: await new Response(p.stderr).text() })))
        for (const o of outputs) expect(o.code, o.err).toBe(0)
        const applied = outputs.map((o) => JSON.parse(o.out.trim()) as number[])
        const all = MIGRATIONS.map((m) => m.version)
        // Exactly one process applied every migration; the others found them done.
        expect(applied.filter((a) => a.length > 0)).toEqual([all])
        expect(applied.filter((a) => a.length === 0)).toHaveLength(2)
        const sql = postgres(DATABASE_URL, { max: 1, connection: { search_path: schema } })
        const rows = await sql`select version from schema_migrations order by version`
        await sql.end()
        expect(rows.map((r) => r.version)).toEqual(all)
      } finally {
        await drop()
      }
    })

    test("a start waits out another process's migration: only the store's first answer is bounded", async () => {
      const { schema, drop } = await freshSchema()
      const store = createStore({ engine: 'postgres', url: DATABASE_URL, schema, maxConnections: 2 })
      const other = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
      try {
        // Another replica holds the migration lock for longer than the wait for a first answer.
        await other`select pg_advisory_lock(724201611)`
        const released = Bun.sleep(1_500).then(() => other`select pg_advisory_unlock(724201611)`)
        const started = performance.now()
        await migrateStore(store, systemClock, { waitMs: 500 })
        expect(performance.now() - started).toBeGreaterThan(1_000)
        await released
        expect((await store.migrate(Date.now())).length).toBe(0)
      } finally {
        await other.end()
        await store.close()
        await drop()
      }
    })

    test('a migrated store that takes no writes (read-only transactions) still opens and reads', async () => {
      const { schema, drop } = await freshSchema()
      const writer = createStore({ engine: 'postgres', url: DATABASE_URL, schema, maxConnections: 1 })
      const reader = createStore({ engine: 'postgres', url: `${DATABASE_URL}?default_transaction_read_only=on`, schema, maxConnections: 1 })
      try {
        await writer.migrate(Date.now())
        expect(await reader.migrate(Date.now())).toEqual([])
        expect(await reader.listOrganizations()).toEqual([])
      } finally {
        await Promise.all([writer.close(), reader.close()])
        await drop()
      }
    })

    test('a schema migrated by a newer release is refused, naming both versions', async () => {
      const { schema, drop } = await freshSchema()
      const store = createStore({ engine: 'postgres', url: DATABASE_URL, schema, maxConnections: 2 })
      try {
        await store.migrate(Date.now())
        const latest = MIGRATIONS[MIGRATIONS.length - 1]!.version
        const sql = postgres(DATABASE_URL, { max: 1, connection: { search_path: schema } })
        await sql`insert into schema_migrations (version, name, applied_at) values (${latest + 1}, 'from a newer release', 0)`
        await sql.end()
        await expect(store.migrate(Date.now())).rejects.toThrow(`newer than this release knows (${latest})`)
      } finally {
        await store.close()
        await drop()
      }
    })

    test("a CLI command whose read of the schema fails (a lock past its timeout) fails: it neither takes the store for a new one nor upgrades it", async () => {
      const { schema, drop } = await freshSchema()
      const store = createStore({ engine: 'postgres', url: DATABASE_URL, schema, maxConnections: 1 })
      const locker = postgres(DATABASE_URL, { max: 1, onnotice: () => {}, connection: { search_path: schema } })
      try {
        await store.migrate(Date.now())
        const latest = MIGRATIONS.at(-1)!.version
        await locker`delete from schema_migrations where version = ${latest}`
        const held = Promise.withResolvers<void>()
        const locked = Promise.withResolvers<void>()
        const holding = locker.begin(async (trx) => {
          await trx.unsafe('lock table schema_migrations in access exclusive mode')
          locked.resolve()
          await held.promise
        })
        await locked.promise
        const r = await runCli(['org', 'list'], { DATABASE_URL: `${DATABASE_URL}?search_path=${schema}`, DATABASE_STATEMENT_TIMEOUT_MS: '1000' })
        held.resolve()
        await holding
        expect(r.code, r.stdout).toBe(1)
        expect(r.stdout).toBe('')
        expect((await locker`select max(version) as v from schema_migrations`)[0]!.v).toBe(latest - 1)
      } finally {
        await store.close()
        await locker.end()
        await drop()
      }
    }, 30_000)
  })
} else describe.skip('migrations on one PostgreSQL (not reachable)', () => {})
