/**
 * The store: one implementation over Kysely, run on SQLite (bun:sqlite, the embedded default) or
 * PostgreSQL (postgres.js). Callers never see the engine.
 */
import { Database as SqliteDatabase } from 'bun:sqlite'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { CamelCasePlugin, Kysely, sql } from 'kysely'
import { BunSqliteDialect } from 'kysely-bun-sqlite'
import { PostgresJSDialect } from 'kysely-postgres-js'
import postgres from 'postgres'
import { type Engine, migrate } from './migrations.ts'
import type {
  ActionRecord,
  ApiKeyRecord,
  Database,
  Distributor,
  Member,
  NewAction,
  NonceRecord,
  Organization,
} from './schema.ts'

export type StoreOptions =
  | { engine: 'sqlite'; path: string }
  /** `schema` confines the store to one PostgreSQL schema (tests use one each). */
  | { engine: 'postgres'; url: string; maxConnections?: number; schema?: string }

export type CreateMemberResult = { ok: true; member: Member } | { ok: false; reason: 'exists' | 'nonce_unusable' }

export interface KeyWithOrganization {
  key: ApiKeyRecord
  organization: Organization
}

export interface Store {
  readonly engine: Engine
  migrate(now: number): Promise<number[]>
  ping(): Promise<void>
  close(): Promise<void>

  createOrganization(org: Organization): Promise<void>
  getOrganization(id: string): Promise<Organization | undefined>
  listOrganizations(): Promise<Organization[]>

  insertKey(key: ApiKeyRecord): Promise<void>
  getKey(id: string): Promise<ApiKeyRecord | undefined>
  findKeyByHash(hash: string): Promise<KeyWithOrganization | undefined>
  listKeys(orgId: string): Promise<ApiKeyRecord[]>
  /** Marks a key revoked; false when it does not exist or was already revoked. */
  revokeKey(id: string, at: number): Promise<boolean>
  setKeyBudgets(id: string, budgets: { hourlyBudget?: number | null; monthlyBudget?: number | null }): Promise<boolean>

  createDistributor(d: Distributor): Promise<void>
  getDistributor(id: string): Promise<Distributor | undefined>
  listDistributors(orgId: string): Promise<Distributor[]>

  insertNonce(n: NonceRecord): Promise<void>
  getNonce(nonce: string): Promise<NonceRecord | undefined>
  getMember(ecosystem: string, address: string): Promise<Member | undefined>
  /**
   * Consumes the nonce and creates the member in one transaction: of concurrent calls with one
   * nonce exactly one returns ok. The nonce must be unconsumed, unexpired at `now` and issued to
   * the member's address and ecosystem.
   */
  createMemberWithNonce(nonce: string, member: Member, now: number): Promise<CreateMemberResult>

  insertAction(a: NewAction): Promise<void>
  getAction(id: string): Promise<ActionRecord | undefined>
}

function open(options: StoreOptions): { db: Kysely<Database>; engine: Engine } {
  const plugins = [new CamelCasePlugin()]
  if (options.engine === 'sqlite') {
    if (options.path !== ':memory:') mkdirSync(dirname(options.path), { recursive: true })
    const database = new SqliteDatabase(options.path, { create: true })
    // WAL lets the CLI write while a server reads; the busy timeout makes writers queue, not fail.
    database.exec('pragma journal_mode = wal; pragma busy_timeout = 5000; pragma foreign_keys = on; pragma synchronous = normal')
    return { db: new Kysely<Database>({ dialect: new BunSqliteDialect({ database }), plugins }), engine: 'sqlite' }
  }
  const client = postgres(options.url, {
    max: options.maxConnections ?? 10,
    onnotice: () => {},
    ...(options.schema ? { connection: { search_path: options.schema } } : {}),
    // int8 columns hold epoch milliseconds and budgets, all far below 2^53.
    types: { bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) } },
  })
  return { db: new Kysely<Database>({ dialect: new PostgresJSDialect({ postgres: client }), plugins }), engine: 'postgres' }
}

export function createStore(options: StoreOptions): Store {
  const { db, engine } = open(options)

  return {
    engine,
    migrate: (now) => migrate(db, engine, now),
    async ping() {
      await sql`select 1`.execute(db)
    },
    close: () => db.destroy(),

    async createOrganization(org) {
      await db.insertInto('organizations').values(org).execute()
    },
    getOrganization: (id) => db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst(),
    listOrganizations: () => db.selectFrom('organizations').selectAll().orderBy('createdAt').execute(),

    async insertKey(key) {
      await db.insertInto('apiKeys').values(key).execute()
    },
    getKey: (id) => db.selectFrom('apiKeys').selectAll().where('id', '=', id).executeTakeFirst(),
    async findKeyByHash(hash) {
      const key = await db.selectFrom('apiKeys').selectAll().where('hash', '=', hash).executeTakeFirst()
      if (!key) return undefined
      const organization = await db.selectFrom('organizations').selectAll().where('id', '=', key.orgId).executeTakeFirst()
      return organization && { key, organization }
    },
    listKeys: (orgId) => db.selectFrom('apiKeys').selectAll().where('orgId', '=', orgId).orderBy('createdAt').execute(),
    async revokeKey(id, at) {
      const r = await db
        .updateTable('apiKeys')
        .set({ revokedAt: at })
        .where('id', '=', id)
        .where('revokedAt', 'is', null)
        .executeTakeFirst()
      return r.numUpdatedRows > 0n
    },
    async setKeyBudgets(id, budgets) {
      const r = await db.updateTable('apiKeys').set(budgets).where('id', '=', id).executeTakeFirst()
      return r.numUpdatedRows > 0n
    },

    async createDistributor(d) {
      await db.insertInto('distributors').values(d).execute()
    },
    getDistributor: (id) => db.selectFrom('distributors').selectAll().where('id', '=', id).executeTakeFirst(),
    listDistributors: (orgId) =>
      db.selectFrom('distributors').selectAll().where('orgId', '=', orgId).orderBy('createdAt').execute(),

    async insertNonce(n) {
      await db.insertInto('nonces').values(n).execute()
    },
    getNonce: (nonce) => db.selectFrom('nonces').selectAll().where('nonce', '=', nonce).executeTakeFirst(),
    getMember: (ecosystem, address) =>
      db
        .selectFrom('members')
        .selectAll()
        .where('ecosystem', '=', ecosystem)
        .where('address', '=', address)
        .executeTakeFirst(),
    createMemberWithNonce(nonce, member, now) {
      return db.transaction().execute(async (trx): Promise<CreateMemberResult> => {
        // The conditional update is the lock: under concurrency only one transaction sees a row to change.
        const consumed = await trx
          .updateTable('nonces')
          .set({ consumedAt: now })
          .where('nonce', '=', nonce)
          .where('consumedAt', 'is', null)
          .where('expiresAt', '>', now)
          .where('ecosystem', '=', member.ecosystem)
          .where('address', '=', member.address)
          .executeTakeFirst()
        if (consumed.numUpdatedRows === 0n) return { ok: false, reason: 'nonce_unusable' }
        const inserted = await trx
          .insertInto('members')
          .values(member)
          .onConflict((oc) => oc.columns(['ecosystem', 'address']).doNothing())
          .executeTakeFirst()
        if ((inserted.numInsertedOrUpdatedRows ?? 0n) === 0n) {
          // Roll back so the nonce stays usable: nothing was created with it.
          throw new MemberExists()
        }
        return { ok: true, member }
      }).catch((e) => {
        if (e instanceof MemberExists) return { ok: false, reason: 'exists' } as const
        throw e
      })
    },

    async insertAction(a) {
      await db.insertInto('actions').values(a).execute()
    },
    getAction: (id) => db.selectFrom('actions').selectAll().where('id', '=', id).executeTakeFirst(),
  }
}

class MemberExists extends Error {}
