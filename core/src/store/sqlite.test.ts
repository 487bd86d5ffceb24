import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Database } from 'bun:sqlite'
import { type Kysely, sql } from 'kysely'
import { MIGRATIONS } from './migrations.ts'
import { openSqlite } from './sqlite.ts'
import type { Database as Tables } from './schema.ts'
import { createStore, type Store } from './store.ts'
import { storeUnavailable } from './unavailable.ts'
import { runStoreSuite } from './store.suite.ts'

runStoreSuite('sqlite file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'earn-store-'))
  return { store: createStore({ engine: 'sqlite', path: join(dir, 'earn.sqlite') }), cleanup: async () => rmSync(dir, { recursive: true, force: true }) }
})

/** Another process (a server, say) writing one setting to the file; its busy timeout is short so a test never waits long. */
async function writeFromAnotherProcess(path: string, name: string): Promise<string> {
  const script = `
    const { Database } = require('bun:sqlite')
    const db = new Database(process.argv[1])
    db.exec('pragma busy_timeout = 300')
    try { db.run("insert into settings (name, value) values (?, 'x')", [process.argv[2]]); console.log('wrote') }
    catch (e) { console.log(e.code) }`
  const child = Bun.spawn([process.execPath, '-e', script, path, name], { stdout: 'pipe' })
  return (await new Response(child.stdout).text()).trim()
}

/**
 * A migrated store file, a second connection to it (another process's long transaction: an operator's sqlite3
 * session, say) that a test takes the write lock with, and the store's own SQLite opened with a 300 ms wait.
 */
async function withHeldLock(run: (t: { store: Store; holder: Database; db: Kysely<Tables> }) => Promise<void>) {
  const dir = mkdtempSync(join(tmpdir(), 'earn-sqlite-'))
  const path = join(dir, 'earn.sqlite')
  const store = createStore({ engine: 'sqlite', path })
  await store.migrate(0)
  const holder = new Database(path)
  const { db, reader } = openSqlite(path, 300)
  try {
    await run({ store, holder, db })
  } finally {
    holder.close()
    reader?.close()
    await db.destroy()
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

test('a transaction that reads first is not failed by another process committing before its first write', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'earn-sqlite-'))
  const path = join(dir, 'earn.sqlite')
  const store = createStore({ engine: 'sqlite', path })
  await store.migrate(0)
  const { db, reader } = openSqlite(path)
  try {
    const other = await db.transaction().execute(async (trx) => {
      await trx.selectFrom('settings').selectAll().execute()
      const answer = await writeFromAnotherProcess(path, 'other')
      // A deferred BEGIN would have let the other commit here, and this write would fail with SQLITE_BUSY.
      await trx.insertInto('settings').values({ name: 'mine', value: '1' }).execute()
      return answer
    })
    // The other process queued behind the transaction's write lock (and gave up, its timeout being short) ...
    expect(other).toBe('SQLITE_BUSY')
    // ... and writes once it is committed.
    expect(await writeFromAnotherProcess(path, 'other')).toBe('wrote')
    expect((await db.selectFrom('settings').select('name').orderBy('name').execute()).map((r) => r.name)).toEqual(['mine', 'other'])
  } finally {
    reader?.close()
    await db.destroy()
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
})

test("migration 9 copies SQLite's nonces into a table whose chain_id may be null, keeping the recent rows and the expiry index", async () => {
  const { db } = openSqlite(':memory:')
  const now = 100 * 86_400_000
  try {
    for (const m of MIGRATIONS.filter((m) => m.version < 9)) await m.up(db, 'sqlite', now)
    const before = { nonce: 'n1', orgId: 'o', ecosystem: 'evm', address: '0xab', message: 'm', chainId: '1', domain: 'd', uri: 'u', issuedAt: now - 600_000, expiresAt: now - 300_000, consumedAt: now - 400_000 }
    await db.insertInto('nonces').values(before).execute()
    // Expired two days ago: the cleanup would delete it, so it is not copied.
    await db.insertInto('nonces').values({ ...before, nonce: 'n0', expiresAt: now - 2 * 86_400_000 }).execute()
    await expect(db.insertInto('nonces').values({ ...before, nonce: 'n2', chainId: null }).execute()).rejects.toThrow(/NOT NULL/)
    await MIGRATIONS.find((m) => m.version === 9)!.up(db, 'sqlite', now)
    await db.insertInto('nonces').values({ ...before, nonce: 'n2', chainId: null }).execute()
    expect(await db.selectFrom('nonces').selectAll().orderBy('nonce').execute()).toEqual([before, { ...before, nonce: 'n2', chainId: null }])
    const indexes = await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'nonces'`.execute(db)
    expect(indexes.rows.map((r) => r.name)).toContain('nonces_expiry')
  } finally {
    await db.destroy()
  }
})

/** A migrated store on a file of its own, and a raw connection to that file for what the store would not do. */
async function onMigratedFile(use: (store: ReturnType<typeof createStore>, raw: () => Database) => Promise<void>) {
  const dir = mkdtempSync(join(tmpdir(), 'earn-sqlite-'))
  const path = join(dir, 'earn.sqlite')
  const store = createStore({ engine: 'sqlite', path })
  const opened: Database[] = []
  try {
    await store.migrate(0)
    await use(store, () => {
      const db = new Database(path)
      opened.push(db)
      return db
    })
  } finally {
    for (const db of opened) db.close()
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

test('key usage is written whole or not at all, however many batches it takes', () =>
  onMigratedFile(async (store, raw) => {
    // A row past the first batch of 1000 fails, as a lost connection or a timeout would.
    raw().exec("create trigger fail_last before insert on key_usage when new.key_id = 'key_1000' begin select raise(abort, 'failed'); end")
    const rows = Array.from({ length: 1001 }, (_, i) => ({ keyId: `key_${i}`, month: '2031-01', used: 1, hour: 1, hourUsed: 1 }))
    await expect(store.addKeyUsage(rows)).rejects.toThrow('failed')
    // The caller sends them again after a failure: the first batch must not have stayed.
    expect(await store.loadKeyUsage('2031-01')).toEqual([])
  }))

test('a store migrated by a newer release is refused, naming both versions, and left as it is', () =>
  onMigratedFile(async (store, raw) => {
    const latest = MIGRATIONS[MIGRATIONS.length - 1]!.version
    const db = raw()
    db.run('insert into schema_migrations (version, name, applied_at) values (?, ?, 0)', [latest + 1, 'from a newer release'])
    await expect(store.migrate(0)).rejects.toThrow(`the store's schema is at version ${latest + 1}, newer than this release knows (${latest})`)
    expect(db.query('select max(version) as v from schema_migrations').get()).toEqual({ v: latest + 1 })
  }))

test("a write waiting for another connection's write lock leaves the event loop running, lands once the lock is free, and fails busy past its wait", async () => {
  await withHeldLock(async ({ store, holder, db }) => {
    holder.exec('begin immediate')
    let ticks = 0
    const ticker = setInterval(() => ticks++, 10)
    const started = performance.now()
    const write = store.putSettingIfAbsent('waited', 'yes')
    await Bun.sleep(500)
    // SQLite's own busy handler would have slept through these 500 ms with the loop stopped: no tick at all.
    expect(ticks).toBeGreaterThan(20)
    holder.exec('commit')
    expect(await write).toBe('yes')
    clearInterval(ticker)
    expect(performance.now() - started).toBeGreaterThanOrEqual(500)

    // Held past the wait (300 ms here, 5 s by default), the write fails busy, and nothing of it is stored.
    holder.exec('begin immediate')
    const refused = await db.insertInto('settings').values({ name: 'late', value: '1' }).execute().then(
      () => undefined,
      (e: { code?: string }) => e.code,
    )
    holder.exec('commit')
    expect(refused).toBe('SQLITE_BUSY')
    expect(await store.getSetting('late')).toBeUndefined()
  })
})

test("writes queued behind another connection's held lock share one wait: each fails busy by it, not one wait after another", async () => {
  await withHeldLock(async ({ holder, db }) => {
    holder.exec('begin immediate')
    const started = performance.now()
    // Five writes at once: they queue on the one connection, the first waiting its 300 ms.
    const settled = await Promise.all(
      [1, 2, 3, 4, 5].map((i) =>
        db.insertInto('settings').values({ name: `queued${i}`, value: '1' }).execute().then(
          () => ({ code: 'written', at: performance.now() - started }),
          (e: { code?: string }) => ({ code: e.code, at: performance.now() - started }),
        ),
      ),
    )
    expect(settled.map((s) => s.code)).toEqual(Array(5).fill('SQLITE_BUSY'))
    // One wait for them all (each waiting its own after the one ahead would end the last at ~1.5 s).
    for (const s of settled) expect(s.at).toBeLessThan(700)

    // A write after a pause starts a wait of its own: the lock is still held, and it waits the whole 300 ms.
    await Bun.sleep(200)
    const again = performance.now()
    const late = await db.insertInto('settings').values({ name: 'late', value: '1' }).execute().then(
      () => 'written',
      (e: { code?: string }) => e.code,
    )
    expect(late).toBe('SQLITE_BUSY')
    expect(performance.now() - again).toBeGreaterThanOrEqual(290)

    // Once it is free, writes land; and waits out another's brief locks again in full.
    holder.exec('commit')
    await db.insertInto('settings').values({ name: 'after', value: '1' }).execute()
    holder.exec('begin immediate')
    const brief = db.insertInto('settings').values({ name: 'brief', value: '1' }).execute()
    await Bun.sleep(150)
    holder.exec('commit')
    await brief
    expect((await db.selectFrom('settings').select('name').where('name', 'in', ['after', 'brief']).orderBy('name').execute()).map((r) => r.name)).toEqual(['after', 'brief'])
  })
})

test("reads between the queued writes (which run beside another's lock) do not start each write a wait of its own", async () => {
  await withHeldLock(async ({ holder, db }) => {
    holder.exec('begin immediate')
    // Requests 50 ms apart, each reading on the writing connection and then writing, as a sign-in does.
    const request = async (i: number) => {
      await Bun.sleep(50 * i)
      await db.selectFrom('settings').select('name').where('name', '=', `r${i}`).execute()
      const started = performance.now()
      const code = await db.insertInto('settings').values({ name: `r${i}`, value: '1' }).execute().then(
        () => 'written',
        (e: { code?: string }) => e.code,
      )
      return { code, waited: performance.now() - started }
    }
    const settled = await Promise.all(Array.from({ length: 12 }, (_, i) => request(i)))
    holder.exec('commit')
    expect(settled.map((s) => s.code)).toEqual(Array(12).fill('SQLITE_BUSY'))
    // The first waits its 300 ms; the rest, finding the lock taken within the spell, give up at once.
    expect(settled[0]!.waited).toBeGreaterThanOrEqual(290)
    for (const s of settled.slice(7)) expect(s.waited).toBeLessThan(100)
  })
})

test('a transaction SQLite ended itself (its disk full) fails with that, not with the rollback after it, and the connection goes on', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'earn-sqlite-'))
  const path = join(dir, 'earn.sqlite')
  const store = createStore({ engine: 'sqlite', path })
  await store.migrate(0)
  await store.close()
  const { db, reader } = openSqlite(path)
  try {
    // max_page_count makes the database full at its size, as a full disk would; SQLite then rolls the transaction back.
    const { pageCount } = (await sql<{ pageCount: number }>`pragma page_count`.execute(db)).rows[0]!
    await sql.raw(`pragma max_page_count = ${pageCount}`).execute(db)
    const failed = await db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('settings').values({ name: 'first', value: '1' }).execute()
        await trx.insertInto('settings').values({ name: 'large', value: 'x'.repeat(1_000_000) }).execute()
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect([(failed as { code?: string }).code, storeUnavailable(failed)]).toEqual(['SQLITE_FULL', 'unwritable'])
    expect(await db.selectFrom('settings').select('name').where('name', 'in', ['first', 'large']).execute()).toEqual([])
    await sql.raw('pragma max_page_count = 1073741823').execute(db)
    await db.transaction().execute((trx) => trx.insertInto('settings').values({ name: 'first', value: '1' }).execute())
    expect(await db.selectFrom('settings').select('name').where('name', '=', 'first').execute()).toEqual([{ name: 'first' }])
  } finally {
    reader?.close()
    await db.destroy()
    rmSync(dir, { recursive: true, force: true })
  }
})

test("a store with every migration applied opens without the write lock: another process's long write does not hold up a start or a CLI command", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'earn-sqlite-'))
  const path = join(dir, 'earn.sqlite')
  const first = createStore({ engine: 'sqlite', path })
  expect((await first.migrate(0)).length).toBe(MIGRATIONS.length)
  await first.close()
  const holder = new Database(path)
  const store = createStore({ engine: 'sqlite', path })
  try {
    holder.exec('begin immediate')
    const started = performance.now()
    expect(await store.migrate(0)).toEqual([])
    expect(performance.now() - started).toBeLessThan(1000)
    expect(await store.getSetting('nothing')).toBeUndefined()
  } finally {
    holder.exec('commit')
    holder.close()
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
