/**
 * A store that cannot serve now (a statement past PostgreSQL's statement timeout behind a lock, a connection
 * refused, SQLite's write lock held past its busy timeout, a full disk, a database that takes no writes) is the database's state, not the request's: the API
 * answers 503 with the envelope and retry advice, the operator's log says why, and the next request, once the
 * database is free, is served. Real PostgreSQL, real SQLite, a real refused connection.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { createOrganization, createStore, storeUnavailable, type Store } from '@earn/core'
import { Kysely, sql, type Transaction } from 'kysely'
import { LazyPostgresDialect } from '../../core/src/store/postgresDialect.ts'
import { createHarness, expectEnvelope, type Harness } from '../harness.ts'
import { DATABASE_URL, freshSchema, postgresAvailable } from '../services.ts'
import { cuttableProxy } from '../proxy.ts'
import { pausingHandler } from '../pause.ts'
import { thrown } from '../thrown.ts'
import { runCli, startServer } from '../process.ts'

const wallet = '0x' + 'ab'.repeat(20)


describe.skipIf(!(await postgresAvailable()))('PostgreSQL statement timeout', () => {
  let h: Harness
  let store: Store
  let drop: () => Promise<void>
  let schema: string
  const logged: Record<string, unknown>[] = []
  beforeAll(async () => {
    ;({ schema, drop } = await freshSchema())
    store = createStore({ engine: 'postgres', url: DATABASE_URL, schema, statementTimeoutMs: 300 })
    h = await createHarness({ store, logger: { info: () => {}, error: (f) => logged.push(f) } })
  })
  afterAll(async () => {
    await store.close()
    await drop()
  })

  test('a request whose statement waits on a lock past the timeout is a 503, and the next one is served', async () => {
    const holder = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
    const locked = Promise.withResolvers<void>()
    const release = Promise.withResolvers<void>()
    const held = holder.begin(async (sql) => {
      await sql.unsafe(`lock table ${schema}.members in access exclusive mode`)
      locked.resolve()
      await release.promise
    })
    await locked.promise
    const started = performance.now()
    const r = await h.get(`/v2/membership/?address=${wallet}`)
    const waited = performance.now() - started
    release.resolve()
    await held
    await holder.end()
    expect(r.status, r.text).toBe(503)
    expectEnvelope(r.body, 503, 'UNAVAILABLE')
    expect(r.body.context).toEqual({ database: 'busy' })
    expect(r.body.error).toContain('retry')
    // The timeout, not the lock's end, answered it.
    expect(waited).toBeLessThan(5_000)
    expect(logged.some((f) => f.msg === 'store unavailable' && String(f.error).includes('statement timeout'))).toBe(true)
    expect((await h.get(`/v2/membership/?address=${wallet}`)).status).toBe(200)
  })
})

describe.skipIf(!(await postgresAvailable()))('PostgreSQL gone silent (a crashed host: connections open, nothing comes back)', () => {
  let h: Harness
  let store: Store
  let drop: () => Promise<void>
  let proxy: ReturnType<typeof cuttableProxy>
  beforeAll(async () => {
    let schema: string
    ;({ schema, drop } = await freshSchema())
    proxy = cuttableProxy(5432)
    const url = new URL(DATABASE_URL)
    url.hostname = '127.0.0.1'
    url.port = String(proxy.port)
    // Statements are timed on this side at the statement timeout plus 2 s.
    store = createStore({ engine: 'postgres', url: url.toString(), schema, statementTimeoutMs: 300 })
    h = await createHarness({ store, logger: { info: () => {}, error: () => {} } })
  })
  afterAll(async () => {
    await store.close()
    proxy.stop()
    await drop()
  })

  test('reads, writes and readiness answer 503 in seconds, not when TCP gives up; once it is back, so is the server', async () => {
    expect((await h.get(`/v2/membership/?address=${wallet}`)).status).toBe(200)
    proxy.cut()
    const started = performance.now()
    const [read, write, ready] = await Promise.all([
      // Another wallet: the first's "not a member" is remembered for a second.
      h.get(`/v2/membership/?address=${'0x' + 'cd'.repeat(20)}`),
      h.post('/v2/membership/agreement', { address: wallet, walletEcosystem: 'evm', url: 'https://app.example.com' }),
      h.app.handle(new Request('http://localhost/readyz')),
    ])
    const waited = performance.now() - started
    for (const r of [read, write]) {
      expectEnvelope(r.body, 503, 'UNAVAILABLE')
      expect(r.body.context).toEqual({ database: 'unreachable' })
    }
    expect(ready.status).toBe(503)
    expect(((await ready.json()) as { checks: Record<string, string> }).checks.store).toBe('unavailable: no answer within 2000 ms')
    expect(waited).toBeLessThan(5_000)
    // A transaction (an organization with its key and distributor) fails the same way and leaves nothing behind.
    const tx = await createOrganization({ store, clock: h.deps.clock }, { name: 'Silent org' }).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(storeUnavailable(tx)).toBe('unreachable')
    // The route is back; the silent connections are not (as after a crash), so the pool made new ones.
    proxy.restore()
    expect((await h.get(`/v2/membership/?address=${wallet}`)).status).toBe(200)
    const agreement = await h.post('/v2/membership/agreement', { address: wallet, walletEcosystem: 'evm', url: 'https://app.example.com' })
    expect(agreement.status, agreement.text).toBe(200)
    expect((await h.app.handle(new Request('http://localhost/readyz'))).status).toBe(200)
    expect((await store.listOrganizations()).map((o) => o.name)).not.toContain('Silent org')
    const created = await createOrganization({ store, clock: h.deps.clock }, { name: 'Back org' })
    expect((await store.listOrganizations()).map((o) => o.id)).toContain(created.orgId)
  })
})

describe.skipIf(!(await postgresAvailable()))('PostgreSQL gone silent, behind a listening server', () => {
  test("a key check waiting out the store's timeout is answered 503, not closed at Bun's idle limit, with a body or without", async () => {
    const { schema, drop } = await freshSchema()
    const proxy = cuttableProxy(5432)
    const url = new URL(DATABASE_URL)
    url.hostname = '127.0.0.1'
    url.port = String(proxy.port)
    url.searchParams.set('search_path', schema)
    const dir = mkdtempSync(join(tmpdir(), 'earn-silent-'))
    // A statement is given up on at its timeout plus 2 s: 14 s, past Bun's idle limit (10 s, checked every 4 s).
    const server = await startServer({ DATABASE_URL: url.toString(), DATABASE_STATEMENT_TIMEOUT_MS: '12000', DATA_DIR: dir })
    try {
      const { publishableKey, secretKey } = (await runCli(['org', 'create', '--name', 'Silent', '--json'], { DATABASE_URL: url.toString() })).json() as Record<string, string>
      proxy.cut()
      const started = performance.now()
      // Keys not checked yet, so each asks the store: the GET in the guard, the POST before its body and again after.
      const [read, write] = await Promise.all([
        fetch(`${server.url}/v2/opportunities/`, { headers: { 'X-API-Key': publishableKey! } }),
        fetch(`${server.url}/v2/membership/agreement`, {
          method: 'POST',
          headers: { 'X-API-Key': secretKey!, 'content-type': 'application/json' },
          body: JSON.stringify({ address: wallet, walletEcosystem: 'evm', url: 'https://app.example.com' }),
        }),
      ])
      expect(performance.now() - started).toBeGreaterThan(13_000)
      for (const r of [read, write]) expectEnvelope((await r.json()) as Record<string, unknown>, 503, 'UNAVAILABLE')
    } finally {
      await server.stop()
      proxy.stop()
      await drop()
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)
})

describe.skipIf(!(await postgresAvailable()))('PostgreSQL pool busy (every connection in use past the limit)', () => {
  // The dialect alone, with one connection: a transaction holds it while a statement waits for it.
  let schema: string
  let drop: () => Promise<void>
  let db: Kysely<any>
  const sleeps = (trx: Transaction<any>, n: number) => (async () => {
    // Each statement inside the 100 ms statement timeout; the transaction holds its connection for n × 80 ms.
    for (let i = 0; i < n; i++) await sql`select pg_sleep(0.08)`.execute(trx)
  })()
  beforeAll(async () => {
    ;({ schema, drop } = await freshSchema())
    db = new Kysely({ dialect: new LazyPostgresDialect({ url: DATABASE_URL, schema, maxConnections: 1, statementTimeoutMs: 100, applicationName: `busy-${schema}` }) })
    await sql`create table ${sql.table(`${schema}.w`)} (x int)`.execute(db)
  })
  afterAll(async () => {
    await db.destroy()
    await drop()
  })

  test("a statement whose rows were coming in when its timeout struck leaves the connection's next answer whole", async () => {
    // Rows 1-399 are sent, then the 400th waits past the 100 ms statement timeout.
    const cut = await sql`select g from generate_series(1, 1000) g where g < 400 or pg_sleep(0.3) is not null`.execute(db).then(() => undefined, (e: unknown) => e)
    expect(storeUnavailable(cut)).toBe('busy')
    // The one connection's next statement: its rows, not 399 empty slots and then its rows.
    expect((await sql<{ x: number }>`select 1 as x union all select 2`.execute(db)).rows).toEqual([{ x: 1 }, { x: 2 }])
  })

  test('a statement still waiting for a connection at the limit is withdrawn (busy, never run); a waiting transaction gives its connection back; the pool is kept', async () => {
    const holder = db.transaction().execute((trx) => sleeps(trx, 30))
    await Bun.sleep(50)
    await expectWithdrawn(holder)
  })

  test('so is one behind statements of their own (postgres.js would have sent it behind them on the busy connection)', async () => {
    // A 1 s statement timeout (3 s here): four 0.9 s statements ahead get their turns in time, the fourth running
    // from 2.7 s to 3.6 s, past the limit of the two queued after them.
    const slow = new Kysely({ dialect: new LazyPostgresDialect({ url: DATABASE_URL, schema, maxConnections: 1, statementTimeoutMs: 1_000 }) })
    try {
      await sql`delete from ${sql.table(`${schema}.w`)}`.execute(slow)
      const holder = Promise.allSettled(Array.from({ length: 4 }, () => sql`select pg_sleep(0.9)`.execute(slow)))
      await Bun.sleep(20)
      const [insert, tx] = await Promise.all([
        sql`insert into ${sql.table(`${schema}.w`)} values (1)`.execute(slow).then(() => undefined, (e: unknown) => e),
        slow.transaction().execute((trx) => sql`insert into ${sql.table(`${schema}.w`)} values (2)`.execute(trx)).then(() => undefined, (e: unknown) => e),
      ])
      expect((await holder).map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled'])
      expect([storeUnavailable(insert), storeUnavailable(tx)]).toEqual(['busy', 'busy'])
      expect((await sql<{ x: number }>`select x from ${sql.table(`${schema}.w`)}`.execute(slow)).rows).toEqual([])
    } finally {
      await slow.destroy()
    }
  })

  test('a connection gone silent while the others answer: its statement is 503 unreachable and the pool is made anew, not left a connection short', async () => {
    const proxy = cuttableProxy(5432)
    const url = new URL(DATABASE_URL)
    url.hostname = '127.0.0.1'
    url.port = String(proxy.port)
    // Two connections; a statement has 0.3 s plus 2 s for its answer.
    const two = new Kysely<any>({ dialect: new LazyPostgresDialect({ url: url.toString(), schema, maxConnections: 2, statementTimeoutMs: 300 }) })
    const pair = async () => {
      const started = performance.now()
      const settled = await Promise.allSettled([sql`select pg_sleep(0.2)`.execute(two), sql`select pg_sleep(0.2)`.execute(two)])
      return { settled, ms: performance.now() - started }
    }
    try {
      expect((await pair()).settled.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled'])
      proxy.cutOne()
      // One of the two goes to the silent connection, the other is answered.
      const { settled } = await pair()
      expect(settled.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected'])
      expect(storeUnavailable((settled.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason)).toBe('unreachable')
      // Both connections serve again: two 0.2 s statements together take 0.2 s, not 0.4.
      const again = await pair()
      expect(again.settled.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled'])
      expect(again.ms).toBeLessThan(350)
    } finally {
      await two.destroy()
      proxy.stop()
    }
  })

  test("a pause of the process's own past the limit (a long synchronous handler) is not the database's silence: what PostgreSQL answered meanwhile stands", async () => {
    // One connection; a statement has 0.3 s plus 2 s of this process's running time, to be answered or to get a turn.
    const one = new Kysely<any>({ dialect: new LazyPostgresDialect({ url: DATABASE_URL, schema, maxConnections: 1, statementTimeoutMs: 300 }) })
    // A handler busy for 2.6 s, while PostgreSQL's answer (at 0.1 s) waits to be read (test/pause.ts).
    const handler = pausingHandler(2_600)
    const rows = (x: number) => sql<{ x: number }>`select ${sql.lit(x)} as x from pg_sleep(0.1)`.execute(one).then((r) => r.rows, (e: unknown) => storeUnavailable(e) ?? e)
    try {
      await sql`select 1`.execute(one)
      // The first is sent and answered; the second waits for the one connection.
      const [sent, waiting] = [rows(7), rows(8)]
      await Bun.sleep(30)
      expect(await handler.pause()).toBe('done')
      // Counted in wall-clock time, both failed `unreachable` and the pool was replaced.
      expect([await sent, await waiting]).toEqual([[{ x: 7 }], [{ x: 8 }]])
    } finally {
      handler.stop()
      await one.destroy()
    }
  })

  async function expectWithdrawn(holder: Promise<unknown>) {
    const [insert, tx] = await Promise.all([
      sql`insert into ${sql.table(`${schema}.w`)} values (1)`.execute(db).then(() => undefined, (e: unknown) => e),
      db.transaction().execute((trx) => sql`insert into ${sql.table(`${schema}.w`)} values (2)`.execute(trx)).then(() => undefined, (e: unknown) => e),
    ])
    await holder
    expect(storeUnavailable(insert)).toBe('busy')
    expect(storeUnavailable(tx)).toBe('busy')
    // Neither ran once the connection came free, and it is not left idle in a transaction.
    await Bun.sleep(200)
    expect((await sql<{ x: number }>`select x from ${sql.table(`${schema}.w`)}`.execute(db)).rows).toEqual([])
    const states = await sql<{ state: string }>`select state from pg_stat_activity where application_name = ${`busy-${schema}`}`.execute(db)
    expect(states.rows.map((r) => r.state)).toEqual(['active'])
    // The pool was answering all along: still the same one, and it serves at once.
    const started = performance.now()
    await sql`insert into ${sql.table(`${schema}.w`)} values (3)`.execute(db)
    expect(performance.now() - started).toBeLessThan(1_000)
    expect((await sql<{ x: number }>`select x from ${sql.table(`${schema}.w`)}`.execute(db)).rows).toEqual([{ x: 3 }])
  }
})

describe('which store failures are the database being unavailable', () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'earn-unavailable-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  test("SQLite's write lock held past the busy timeout is busy; a constraint is not the database's state", () => {
    const path = join(dir, 'busy.sqlite')
    const a = new Database(path)
    a.exec('pragma journal_mode = wal; create table t (x integer primary key)')
    const b = new Database(path)
    b.exec('pragma busy_timeout = 20')
    a.exec('begin immediate')
    const busy = thrown(() => b.exec('insert into t values (1)'))
    a.exec('insert into t values (1); commit')
    const constraint = thrown(() => b.exec('insert into t values (1)'))
    a.close()
    b.close()
    expect(storeUnavailable(busy)).toBe('busy')
    expect(storeUnavailable(constraint)).toBeUndefined()
    expect(storeUnavailable(new Error('any'))).toBeUndefined()
    expect(storeUnavailable(undefined)).toBeUndefined()
  })

  test("SQLite's disk full or a file it may not write is unwritable", () => {
    const path = join(dir, 'full.sqlite')
    const a = new Database(path)
    a.exec('create table t (x blob)')
    // max_page_count makes the database full at its current size, as a full disk would.
    const pages = (a.query('pragma page_count').get() as { page_count: number }).page_count
    a.exec(`pragma max_page_count = ${pages}`)
    const full = thrown(() => a.run('insert into t values (?)', [new Uint8Array(64 * 1024)]))
    a.close()
    const readonly = new Database(path, { readonly: true })
    const refused = thrown(() => readonly.exec('insert into t values (1)'))
    readonly.close()
    expect([storeUnavailable(full), (full as { code?: string }).code]).toEqual(['unwritable', 'SQLITE_FULL'])
    expect([storeUnavailable(refused), (refused as { code?: string }).code]).toEqual(['unwritable', 'SQLITE_READONLY'])
  })

  test('an unwritable store is a 503 saying so, and its request may be sent again', async () => {
    const path = join(dir, 'full-store.sqlite')
    const a = new Database(path)
    a.exec('create table t (x blob)')
    a.exec(`pragma max_page_count = ${(a.query('pragma page_count').get() as { page_count: number }).page_count}`)
    const full = thrown(() => a.run('insert into t values (?)', [new Uint8Array(64 * 1024)]))
    a.close()
    // A disk cannot be filled for one test here: the store's write throws the error a full SQLite disk threw above.
    const real = createStore({ engine: 'sqlite', path: ':memory:' })
    const h = await createHarness({ store: { ...real, insertNonce: () => Promise.reject(full) }, logger: { info: () => {}, error: () => {} } })
    try {
      const r = await h.post('/v2/membership/agreement', { address: wallet, walletEcosystem: 'evm', url: 'https://app.example.com' })
      expectEnvelope(r.body, 503, 'UNAVAILABLE')
      expect(r.body.context).toEqual({ database: 'unwritable' })
      expect(r.body.error).toStartWith('the database cannot take writes now (its disk is full, or it is read-only); retry')
    } finally {
      await real.close()
    }
  })

  test('a key check that cannot reach the store is a 503 with a body or without (the body is not read)', async () => {
    const real = createStore({ engine: 'sqlite', path: ':memory:' })
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
    const h = await createHarness({ store: { ...real, findKeyByHash: () => Promise.reject(refused) }, logger: { info: () => {}, error: () => {} } })
    try {
      const post = await h.post('/v2/membership/agreement', { address: wallet, walletEcosystem: 'evm', url: 'https://app.example.com' })
      const get = await h.get(`/v2/membership/?address=${wallet}`)
      for (const r of [post, get]) {
        expectEnvelope(r.body, 503, 'UNAVAILABLE')
        expect(r.body.context).toEqual({ database: 'unreachable' })
      }
    } finally {
      await real.close()
    }
  })

  test('a key the store could not check when the body came, but can by the time it is in, is a 503 to send again, not charged', async () => {
    const real = createStore({ engine: 'sqlite', path: ':memory:' })
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
    let failures = 1
    const store = { ...real, findKeyByHash: (hash: string) => (failures-- > 0 ? Promise.reject(refused) : real.findKeyByHash(hash)) }
    const h = await createHarness({ store, env: { KEY_CACHE_SECONDS: '0' }, logger: { info: () => {}, error: () => {} } })
    try {
      const r = await h.post('/v2/membership/agreement', { address: wallet, walletEcosystem: 'evm', url: 'https://app.example.com' })
      expectEnvelope(r.body, 503, 'UNAVAILABLE')
      expect(r.body.context).toEqual({ 'x-api-key': 'checked late' })
      // Told its usage, as every answer to a valid key is, and not charged.
      expect([r.headers.get('x-ratelimit-used'), r.headers.get('x-monthly-usage'), r.headers.get('retry-after')]).toEqual(['0', '0', null])
      const again = await h.post('/v2/membership/agreement', { address: wallet, walletEcosystem: 'evm', url: 'https://app.example.com' })
      expect([again.status, again.headers.get('x-ratelimit-used')]).toEqual([200, '1'])
    } finally {
      await real.close()
    }
  })

  test('a PostgreSQL server that refuses the connection is unreachable', async () => {
    // Port 1 on this machine: nothing listens there, so the connection is refused at once.
    const sql = postgres('postgres://postgres@127.0.0.1:1/test', { max: 1, connect_timeout: 2, onnotice: () => {} })
    const error = await sql`select 1`.then(() => undefined, (e: unknown) => e)
    await sql.end({ timeout: 0 })
    expect(error).toBeDefined()
    expect(storeUnavailable(error)).toBe('unreachable')
  })
})
