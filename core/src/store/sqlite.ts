/**
 * bun:sqlite, tuned for the store's request path: statements kept prepared, point reads on a
 * read-only connection of their own, and transactions that take the write lock as they begin.
 */
import { Database as SqliteDatabase, type SQLQueryBindings, type Statement } from 'bun:sqlite'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { CamelCasePlugin, CompiledQuery, type DatabaseConnection, type Driver, Kysely } from 'kysely'
import { BunSqliteDialect } from 'kysely-bun-sqlite'
import type { Database } from './schema.ts'

const MAX_STATEMENTS = 200

/**
 * bun:sqlite keeping its prepared statements by SQL text. kysely-bun-sqlite prepares a statement for
 * every query, and preparing costs more than running a point query. Sharing one statement is safe:
 * each use runs to completion synchronously. Bounded, for SQL whose text varies (batched inserts).
 */
export class StatementCachingDatabase extends SqliteDatabase {
  readonly #statements = new Map<string, Statement<any, any>>()

  override prepare<R, P extends SQLQueryBindings | SQLQueryBindings[]>(sql: string, params?: P): Statement<R, P extends any[] ? P : [P]> {
    if (params !== undefined) return super.prepare(sql, params)
    let statement = this.#statements.get(sql)
    if (!statement) {
      if (this.#statements.size >= MAX_STATEMENTS) this.#statements.clear()
      statement = super.prepare(sql)
      this.#statements.set(sql, statement)
    }
    return statement
  }
}

/** Runs compiled SQL and returns its first row with camelCase keys (as the store's CamelCasePlugin would). */
export type RowReader = (sql: string, parameters: readonly unknown[]) => Record<string, unknown> | undefined

const camel = (column: string) => column.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase())

/**
 * Point reads on a second, read-only connection to the same file. Kysely runs every query of the
 * one bun:sqlite connection behind a queue (a transaction holds it across awaits), and under load
 * the queue costs several times the read itself. WAL lets this connection read while the other
 * writes; it sees only committed data, never a transaction in progress. Not for `:memory:`, which
 * a second connection would not share.
 */
export function openReader(path: string): { read: RowReader; close(): void } {
  const database = new SqliteDatabase(path, { readonly: true })
  database.exec('pragma busy_timeout = 5000')
  const statements = new Map<string, { statement: Statement<unknown[], SQLQueryBindings[]>; keys: string[] }>()
  let closed = false
  return {
    read(sql, parameters) {
      if (closed) throw new Error('the store is closed')
      let s = statements.get(sql)
      if (!s) {
        const statement = database.prepare<unknown[], SQLQueryBindings[]>(sql)
        s = { statement, keys: statement.columnNames.map(camel) }
        statements.set(sql, s)
      }
      const values = s.statement.values(...(parameters as SQLQueryBindings[]))[0]
      if (!values) return undefined
      const row: Record<string, unknown> = {}
      for (let i = 0; i < s.keys.length; i++) row[s.keys[i]!] = values[i]
      return row
    },
    // Its statements outlive the close (bun:sqlite does not finalize them): closed, it must refuse as the writer does.
    close: () => {
      closed = true
      database.close()
    },
  }
}

/** How long a write waits for another connection's write lock before it fails busy (a 503, or the CLI's message). */
export const BUSY_WAIT_MS = 5000

/**
 * kysely-bun-sqlite begins a transaction with a deferred BEGIN: its first read takes a snapshot, and when
 * another process commits before its first write, SQLite refuses the upgrade to writer at once (SQLITE_BUSY;
 * waiting cannot refresh the snapshot). Every store transaction writes, so each takes the write lock as it begins
 * (BEGIN IMMEDIATE), where waiting does queue it behind others.
 *
 * The wait is on timers, not in SQLite's busy handler: bun:sqlite runs synchronously, so the handler's sleeps
 * would stop the event loop (reads, /healthz, every request) for as long as another process held the lock. A
 * statement refused busy changed nothing, so it runs again; the driver's queue keeps this connection's other
 * queries behind it meanwhile.
 */
class ImmediateTransactionsDialect extends BunSqliteDialect {
  readonly #database: SqliteDatabase
  readonly #busyWaitMs: number
  constructor(database: SqliteDatabase, busyWaitMs: number) {
    super({ database })
    this.#database = database
    this.#busyWaitMs = busyWaitMs
  }

  override createDriver(): Driver {
    const driver = super.createDriver()
    const database = this.#database
    const waitMs = this.#busyWaitMs
    driver.beginTransaction = async (connection) => {
      await connection.executeQuery(CompiledQuery.raw('begin immediate'))
    }
    // SQLite ends a transaction itself on some failures (a full disk, an I/O error): a ROLLBACK then fails ("no
    // transaction is active"), and Kysely would throw that in place of the failure (a sign-in on a full disk was a 500).
    driver.rollbackTransaction = async (connection) => {
      if (database.inTransaction) await connection.executeQuery(CompiledQuery.raw('rollback'))
    }
    const acquire = driver.acquireConnection.bind(driver)
    const waiting = new WeakSet<DatabaseConnection>()
    // One connection, one lock to wait for: statements queued behind one that waited share its wait (below).
    const busy: BusySpell = { since: 0, lastSeen: -Infinity }
    driver.acquireConnection = async () => {
      const connection = await acquire()
      if (!waiting.has(connection)) {
        const run = connection.executeQuery.bind(connection)
        connection.executeQuery = (query) => untilNotBusy(() => run(query), waitMs, busy, takesWriteLock(query))
        waiting.add(connection)
      }
      return connection
    }
    return driver
  }
}

/** Whether a statement needs the write lock: Kysely's writes, and raw SQL that begins a transaction or writes. */
function takesWriteLock(query: CompiledQuery): boolean {
  const { kind } = query.query
  if (kind === 'SelectQueryNode') return false
  if (kind === 'RawNode') return /^\s*(begin|insert|update|delete|replace)\b/i.test(query.sql)
  return true
}

/** When the connection began to find the write lock taken, and when it last did (-Infinity: since a write ran). */
interface BusySpell {
  since: number
  lastSeen: number
}

/** A refusal this soon after the last one continues its spell: a retry's pause is at most 25 ms. */
const SAME_SPELL_MS = 100

/**
 * Runs a statement again while it is refused busy, until the connection has found the lock taken for `waitMs`. The
 * wait is the connection's, not the statement's: statements queue on the one connection, so each waiting its own
 * `waitMs` after the one ahead gave up answered the twelfth write behind a held lock after a minute, not 5 s.
 */
async function untilNotBusy<R>(run: () => Promise<R>, waitMs: number, busy: BusySpell, writes: boolean): Promise<R> {
  for (let pause = 1; ; pause = Math.min(pause * 2, 25)) {
    try {
      const result = await run()
      // A write that ran had the lock: the spell is over (another process's brief writes, each waited out, must not
      // add up to one long wait). A read runs beside another's write lock (WAL) and says nothing of it.
      if (writes) busy.lastSeen = -Infinity
      return result
    } catch (e) {
      const code = (e as { code?: unknown } | null)?.code
      if (typeof code !== 'string' || !code.startsWith('SQLITE_BUSY') || code === 'SQLITE_BUSY_SNAPSHOT') throw e
      const now = performance.now()
      if (now - busy.lastSeen > SAME_SPELL_MS) busy.since = now
      busy.lastSeen = now
      const left = busy.since + waitMs - now
      if (left <= 0) throw e
      await Bun.sleep(Math.min(pause, left))
    }
  }
}

/** The store's SQLite database: Kysely on the writing connection, plus the read-only one for point reads. */
export function openSqlite(path: string, busyWaitMs = BUSY_WAIT_MS): { db: Kysely<Database>; reader?: ReturnType<typeof openReader> } {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const database = new StatementCachingDatabase(path, { create: true })
  // Opening may find the file locked a moment (another process recovering its WAL, or holding it exclusively): nothing
  // is served yet, so waiting in SQLite's own handler is fine here. From then on writers queue on timers (above).
  // WAL lets the CLI write while a server reads.
  database.exec('pragma busy_timeout = 5000')
  database.exec('pragma journal_mode = wal; pragma foreign_keys = on; pragma synchronous = normal')
  database.exec('pragma busy_timeout = 0')
  const db = new Kysely<Database>({ dialect: new ImmediateTransactionsDialect(database, busyWaitMs), plugins: [new CamelCasePlugin()] })
  return { db, reader: path === ':memory:' ? undefined : openReader(path) }
}
