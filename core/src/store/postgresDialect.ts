/**
 * PostgreSQL for Kysely through postgres.js, loaded on first connection: an embedded (SQLite)
 * deployment never pays for importing the PostgreSQL client at start.
 */
import {
  type DatabaseIntrospector,
  type Dialect,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
} from 'kysely'

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
}

export const DEFAULT_STATEMENT_TIMEOUT_MS = 10_000

async function connect(options: PostgresOptions): Promise<Driver> {
  const [{ PostgresJSDialect }, { default: postgres }] = await Promise.all([import('kysely-postgres-js'), import('postgres')])
  const client = postgres(options.url, {
    max: options.maxConnections ?? 10,
    onnotice: () => {},
    connection: {
      statement_timeout: options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS,
      // A transaction left open (a process paused mid-way) would hold its locks, and every writer behind them, for good.
      idle_in_transaction_session_timeout: 60_000,
      ...(options.schema ? { search_path: options.schema } : {}),
    },
    // int8 columns hold epoch milliseconds and budgets, all far below 2^53.
    types: { bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) } },
  })
  const driver = new PostgresJSDialect({ postgres: client }).createDriver()
  await driver.init()
  return driver
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
