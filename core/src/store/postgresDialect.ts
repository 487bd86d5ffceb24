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
}

async function connect(options: PostgresOptions): Promise<Driver> {
  const [{ PostgresJSDialect }, { default: postgres }] = await Promise.all([import('kysely-postgres-js'), import('postgres')])
  const client = postgres(options.url, {
    max: options.maxConnections ?? 10,
    onnotice: () => {},
    ...(options.schema ? { connection: { search_path: options.schema } } : {}),
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
