/**
 * PostgreSQL for Kysely through postgres.js, loaded on first connection: an embedded (SQLite)
 * deployment never pays for importing the PostgreSQL client at start.
 */
import {
  type CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely'
import { runningTimeout } from '../runningTimeout.ts'
import { STORE_UNAVAILABLE } from './unavailable.ts'

export interface PostgresOptions {
  url: string
  maxConnections?: number
  schema?: string
  /**
   * PostgreSQL's `statement_timeout` for every connection (default 10 s; 0 for none): a statement stuck behind a
   * lock or a slow disk fails, and its request gets a 503, instead of holding the request and a pooled connection
   * for as long as the lock lasts. Migrations lift it for their own transaction.
   */
  statementTimeoutMs?: number
  /** How the connections name themselves to PostgreSQL (`pg_stat_activity.application_name`); `earn-api` by default. */
  applicationName?: string
}

export const DEFAULT_STATEMENT_TIMEOUT_MS = 10_000

type Sql = import('postgres').Sql
type TransactionSql = import('postgres').TransactionSql

/** How long past the statement timeout the server's answer may take before the database counts as silent. */
const ANSWER_GRACE_MS = 2_000

/**
 * The connection pool, replaced when it goes silent. `statement_timeout` is PostgreSQL's own, so it ends nothing
 * when no packet comes back (a host that crashed or dropped off the network: its connections stay open on this side,
 * and a statement sent on one waits as long as TCP keeps trying, ~15 minutes). Every statement here is therefore also
 * timed on this side: one without an answer within the statement timeout plus a grace (PostgreSQL's own timeout
 * answers first where PostgreSQL answers at all) fails `unreachable`, and the pool's connections are dropped and new
 * ones made, so the server is back as soon as the database is.
 *
 * Statements and transactions take turns, as many at once as the pool has connections, and wait for one here rather
 * than in postgres.js: its queue cannot be left (a statement given up on there, or sent behind another on a busy
 * connection, still ran later), where a wait here that outlasts the same limit leaves and nothing of it ever runs:
 * `busy` while the pool answers others, else `unreachable` (and the pool replaced). A statement's time on its
 * connection is timed apart from its wait, so one that was sent is cut short only by a database that does not answer.
 */
class Pool {
  #current: Generation
  #lastAnswer = performance.now()

  constructor(
    private readonly open: () => Sql,
    private readonly size: number,
    /** 0: statements are not timed here (PostgreSQL's statement timeout is off too). */
    readonly answerWithinMs: number,
  ) {
    this.#current = { sql: open(), free: size, waiting: [] }
  }

  /** A turn on one of the connections, within `limitMs` (0: however long it takes). */
  turn(limitMs: number): Promise<Turn> {
    const generation = this.#current
    if (generation.free > 0) {
      generation.free--
      return Promise.resolve(this.#turnOf(generation))
    }
    return new Promise<Turn>((resolve, reject) => {
      let cancel = () => {}
      const waiter: Waiter = {
        grant: () => {
          cancel()
          resolve(this.#turnOf(generation))
        },
        fail: (e) => {
          cancel()
          reject(e)
        },
      }
      generation.waiting.push(waiter)
      if (limitMs > 0)
        cancel = runningTimeout(() => {
          generation.waiting.splice(generation.waiting.indexOf(waiter), 1)
          reject(this.#silent(generation.sql) ? unreachable(limitMs) : timedOut(`no PostgreSQL connection came free within ${limitMs} ms`, 'busy'))
        }, limitMs)
    })
  }

  #turnOf(generation: Generation): Turn {
    let released = false
    return {
      sql: generation.sql,
      release: () => {
        if (released) return
        released = true
        const next = generation.waiting.shift()
        if (next) next.grant()
        else generation.free++
      },
    }
  }

  /** `work` (on `sql`, this pool's now or an earlier one), or past `limitMs` the failure above. */
  async answer<T>(sql: Sql, work: Promise<T>, limitMs: number): Promise<T> {
    const answered = () => {
      if (sql === this.#current.sql) this.#lastAnswer = performance.now()
    }
    if (limitMs <= 0) return work.finally(answered)
    let cancel = () => {}
    const late = new Promise<never>((_, reject) => {
      // This process's running time (runningTimeout.ts): a pause of its own, the answer unread meanwhile, is not
      // the database's silence, and taking it for that reported statements PostgreSQL had committed as failed.
      cancel = runningTimeout(() => {
        // Sent on a connection of its own, it had PostgreSQL's statement timeout to be answered, even behind a lock:
        // no answer means that connection is gone (a killed backend can leave postgres.js waiting on it for good),
        // and so are the turns of whatever waits on it. Every connection is dropped and new ones made.
        this.#replace(sql)
        reject(unreachable(this.answerWithinMs))
      }, limitMs)
    })
    try {
      return await Promise.race([work.finally(answered), late])
    } finally {
      cancel()
    }
  }

  /** Whether the pool `sql` answered nothing for a whole limit; such a pool, if still the current one, is replaced. */
  #silent(sql: Sql): boolean {
    const old = this.#current
    if (sql !== old.sql) return true
    // A wait on a pool that answers others is the wait's failure.
    if (performance.now() - this.#lastAnswer < this.answerWithinMs) return false
    this.#replace(sql)
    return true
  }

  /** New connections in place of `sql`'s, if it is still the current pool. */
  #replace(sql: Sql) {
    const old = this.#current
    if (sql !== old.sql) return
    this.#current = { sql: this.open(), free: this.size, waiting: [] }
    this.#lastAnswer = performance.now()
    // Pending statements on the old connections fail (CONNECTION_DESTROYED) and their transactions end with them;
    // nothing waiting for one of them had started.
    for (const waiter of old.waiting.splice(0)) waiter.fail(unreachable(this.answerWithinMs))
    void old.sql.end({ timeout: 0 }).catch(() => {})
  }

  end(): Promise<void> {
    return this.#current.sql.end({ timeout: 5 })
  }
}

/** One pool of connections, and its turns: `free` of them, and those waiting for one. */
interface Generation {
  sql: Sql
  free: number
  waiting: Waiter[]
}
interface Waiter {
  grant(): void
  fail(e: unknown): void
}
/** A turn on a connection of `sql`, given back once what used it has ended. */
interface Turn {
  sql: Sql
  release(): void
}

const TIMED_OUT = Symbol('timedOut')
const timedOut = (message: string, state: 'busy' | 'unreachable') =>
  Object.assign(new Error(message), { code: 'ETIMEDOUT', [TIMED_OUT]: true, [STORE_UNAVAILABLE]: state })
const timed = (e: unknown) => typeof e === 'object' && e !== null && TIMED_OUT in e
const unreachable = (limitMs: number) => timedOut(`PostgreSQL gave no answer within ${limitMs} ms`, 'unreachable')

/** Migrations lift the statement timeout for their transaction (`SET LOCAL statement_timeout = 0`): this side's timing with it. */
const LIFTS_TIMEOUT = /^set local statement_timeout = 0$/i

/** postgres.js's codes for a connection that is gone; the server rolled back whatever it held. */
const LOST = new Set(['CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT'])
const lost = (e: unknown) => LOST.has(String((e as { code?: unknown } | null)?.code))
const ROLLBACK = Symbol('rollback')

/**
 * One Kysely connection over postgres.js, with no connection reserved from the pool: a statement outside a
 * transaction goes to the pool (`sql.unsafe`), a transaction runs in `sql.begin`. kysely-postgres-js reserves a
 * connection for everything, and postgres.js 3.4.9 writes to a reserved connection's socket after PostgreSQL has
 * closed it (a failover, a restart, `pg_terminate_backend`): the ROLLBACK Kysely then sends, or the next statement on
 * the connection released to the pool, throws from a timer and ends the process. Here, once a transaction's
 * connection is lost, nothing more is sent on it: its statements fail at once, and its rollback is PostgreSQL's own.
 */
class PostgresJsConnection implements DatabaseConnection {
  #tx: TransactionSql | undefined
  /** The pool's connections the transaction was begun on. */
  #txSql: Sql | undefined
  #end: { resolve(): void; reject(reason: unknown): void } | undefined
  #finished: Promise<unknown> | undefined
  #lost: unknown
  #untimed = false

  constructor(private readonly pool: Pool) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.#lost !== undefined) throw this.#lost
    try {
      const result = this.#tx ? await this.#inTransaction(this.#tx, query) : await this.#alone(query)
      if (this.#tx && LIFTS_TIMEOUT.test(query.sql)) this.#untimed = true
      const { command, count } = result
      const changed = command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE'
      let rows = Array.from(result) as R[]
      // postgres.js 3.4.9 resets its row index only when a statement completes: after one that failed while its rows
      // came in (a statement timeout mid-result), the next on that connection gets its rows after as many empty slots.
      if (rows[0] === undefined && rows.length > 0) rows = rows.filter((row) => row !== undefined)
      return { rows, ...(changed ? { numAffectedRows: BigInt(count) } : {}) }
    } catch (e) {
      if (this.#tx && lost(e)) this.#lost = e
      // A transaction whose statement had no answer in time sends nothing more of its own, and rolls back as soon as
      // its connection answers, if it ever does (else it goes with its pool), rather than holding it idle in transaction.
      if (this.#tx && timed(e)) this.#abandon(e)
      throw e
    }
  }

  /** A statement of the transaction, on its connection; timed from now. */
  #inTransaction(tx: TransactionSql, query: CompiledQuery) {
    return this.pool.answer(this.#txSql!, tx.unsafe(query.sql, query.parameters as never[]).execute(), this.#untimed ? 0 : this.pool.answerWithinMs)
  }

  /** A statement on its own: a turn on a connection, held until the statement has ended, however its caller fares. */
  async #alone(query: CompiledQuery) {
    const limit = this.pool.answerWithinMs
    const turn = await this.pool.turn(limit)
    let statement
    try {
      statement = turn.sql.unsafe(query.sql, query.parameters as never[]).execute()
    } catch (e) {
      turn.release()
      throw e
    }
    statement.then(turn.release, turn.release)
    return this.pool.answer(turn.sql, statement, limit)
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries are not used by this store')
  }

  async begin(settings: TransactionSettings): Promise<void> {
    const limit = this.pool.answerWithinMs
    // Nothing of the transaction starts before its turn: a wait that outlasts the limit leaves no trace.
    const turn = await this.pool.turn(limit)
    const ready = Promise.withResolvers<void>()
    const end = (this.#end = Promise.withResolvers<void>())
    // Rejected unawaited when the transaction is abandoned before its callback runs, which it may never do.
    end.promise.catch(() => {})
    this.#lost = undefined
    this.#untimed = false
    const options = settings.isolationLevel ? `isolation level ${settings.isolationLevel}` : ''
    const sql = (this.#txSql = turn.sql)
    this.#finished = sql.begin(options, async (tx) => {
      this.#tx = tx
      ready.resolve()
      // Settled by commit (resolve) or rollback (reject): postgres.js then sends COMMIT or ROLLBACK itself.
      await end.promise
    })
    // The turn is the transaction's until it has ended: committed, rolled back, or its connection gone.
    this.#finished.then(turn.release, turn.release)
    // Rejected before the callback (BEGIN failed), or whenever the connection closes, even between statements.
    this.#finished.catch((e: unknown) => {
      if (e !== ROLLBACK) this.#lost ??= e
      ready.reject(e)
    })
    // A BEGIN with no answer in time (sent to a silent connection) is abandoned: should it be answered later, the
    // transaction rolls back at once.
    return this.pool.answer(sql, ready.promise, limit).catch((e: unknown) => {
      if (timed(e)) this.#abandon(e)
      else this.#lost ??= e
      throw e
    })
  }

  #abandon(e: unknown) {
    this.#lost ??= e
    this.#end?.reject(ROLLBACK)
  }

  async commit(): Promise<void> {
    try {
      if (this.#lost !== undefined) throw this.#lost
      this.#end!.resolve()
      await this.pool.answer(this.#txSql!, this.#finished!, this.#untimed ? 0 : this.pool.answerWithinMs)
    } finally {
      this.#reset()
    }
  }

  async rollback(): Promise<void> {
    try {
      // A lost connection's transaction is already rolled back by PostgreSQL; `end` stays unsettled, so postgres.js
      // is never asked to send ROLLBACK on it. Nor is there anything left after a failed commit (Kysely rolls back
      // then too): PostgreSQL ended that transaction, and commit() has reset the connection.
      if (this.#lost !== undefined || this.#end === undefined) return
      this.#end!.reject(ROLLBACK)
      await this.pool.answer(
        this.#txSql!,
        this.#finished!.catch((e: unknown) => {
          if (e !== ROLLBACK) throw e
        }),
        this.#untimed ? 0 : this.pool.answerWithinMs,
      )
    } finally {
      this.#reset()
    }
  }

  #reset() {
    this.#tx = this.#txSql = this.#end = this.#finished = this.#lost = undefined
    this.#untimed = false
  }
}

async function connect(options: PostgresOptions): Promise<Driver> {
  const { default: postgres } = await import('postgres')
  const statementTimeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS
  const size = options.maxConnections ?? 10
  const open = () => postgres(options.url, {
    max: size,
    onnotice: () => {},
    // postgres.js reads the server's array types on each new connection, in a query no caller awaits: a connection
    // PostgreSQL closes during it (a failover, pg_terminate_backend) rejected it unhandled, which ends a Bun process,
    // and left the connection's first statement waiting. No column here is an array.
    fetch_types: false,
    // postgres.js waits before reconnecting, up to 20 s once connections have closed a few times in a row (a failover,
    // a burst of pg_terminate_backend): every statement queued behind them then hung as long. At most 1 s here; a
    // database that stays away fails each statement (a 503) rather than holding it.
    backoff: (retries: number) => Math.min(retries * 0.1, 1),
    connection: {
      statement_timeout: statementTimeoutMs,
      application_name: options.applicationName ?? 'earn-api',
      // A transaction left open (a process paused mid-way) would hold its locks, and every writer behind them, for good.
      idle_in_transaction_session_timeout: 60_000,
      ...(options.schema ? { search_path: options.schema } : {}),
    },
    // int8 columns hold epoch milliseconds and budgets, all far below 2^53.
    types: { bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) } },
  })
  const pool = new Pool(open, size, statementTimeoutMs === 0 ? 0 : statementTimeoutMs + ANSWER_GRACE_MS)
  return {
    init: async () => {},
    acquireConnection: async () => new PostgresJsConnection(pool),
    beginTransaction: (c, settings) => (c as PostgresJsConnection).begin(settings),
    commitTransaction: (c) => (c as PostgresJsConnection).commit(),
    rollbackTransaction: (c) => (c as PostgresJsConnection).rollback(),
    releaseConnection: async () => {},
    // A connection PostgreSQL closed under a statement keeps postgres.js's end() waiting for good: past the timeout,
    // every connection is dropped instead.
    destroy: () => pool.end(),
  }
}

export class LazyPostgresDialect implements Dialect {
  constructor(private readonly options: PostgresOptions) {}

  createAdapter() {
    return new PostgresAdapter()
  }

  createQueryCompiler() {
    return new PostgresQueryCompiler()
  }

  createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new PostgresIntrospector(db)
  }

  createDriver(): Driver {
    let inner: Driver | undefined
    const driver = () => inner!
    return {
      // Kysely calls init once, before the first connection.
      init: async () => {
        inner = await connect(this.options)
      },
      acquireConnection: () => driver().acquireConnection(),
      beginTransaction: (c, s) => driver().beginTransaction(c, s),
      commitTransaction: (c) => driver().commitTransaction(c),
      rollbackTransaction: (c) => driver().rollbackTransaction(c),
      releaseConnection: (c) => driver().releaseConnection(c),
      destroy: async () => {
        await inner?.destroy()
      },
    }
  }
}
