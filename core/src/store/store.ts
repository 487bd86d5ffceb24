/**
 * The store: one implementation over Kysely, run on SQLite (bun:sqlite, the embedded default) or
 * PostgreSQL (postgres.js). Callers never see the engine.
 */
import { accessSync, constants, realpathSync } from 'node:fs'
import { dirname } from 'node:path'
import { CamelCasePlugin, Kysely, sql } from 'kysely'
import { compileInsertOnce, compileOnce } from './compiled.ts'
import { LazyPostgresDialect, type PostgresOptions } from './postgresDialect.ts'
import { openReader, openSqlite } from './sqlite.ts'
import { type Engine, migrate, type SchemaState, schemaState } from './migrations.ts'
import { type OpportunityStore, opportunityQueries } from './opportunities.ts'
import { type ActivityStore, activityQueries } from './activity.ts'
import { type StreamStore, streamQueries } from './streams.ts'
import { type IdempotencyStore, type IdempotentAnswer, idempotencyQueries, writeAnswer } from './idempotency.ts'
import { STORE_UNAVAILABLE } from './unavailable.ts'
import type {
  ActionRecord,
  ApiKeyRecord,
  Database,
  Distributor,
  KeyUsage,
  Member,
  NewAction,
  NonceRecord,
  Organization,
} from './schema.ts'

export type StoreOptions =
  | { engine: 'sqlite'; path: string }
  /** `schema` confines the store to one PostgreSQL schema (tests use one each). */
  | ({ engine: 'postgres' } & PostgresOptions)

export type CreateMemberResult = { ok: true; member: Member } | { ok: false; reason: 'exists' | 'nonce_unusable' }

/** What a new organization starts with, written with it. */
export interface NewOrganizationRows {
  keys?: ApiKeyRecord[]
  distributors?: Distributor[]
  onlyIfFirst?: boolean
}

export interface KeyWithOrganization {
  key: ApiKeyRecord
  organization: Organization
}

export interface Store extends OpportunityStore, StreamStore, ActivityStore, IdempotencyStore {
  readonly engine: Engine
  migrate(now: number): Promise<number[]>
  /** Where the schema is, read without a lock (see migrations.ts). */
  schemaState(): Promise<SchemaState>
  ping(): Promise<void>
  /**
   * Throws (as the store's `unwritable`) where the store takes no writes: an embedded store whose file or directory the
   * process cannot write (a read-only mount), a PostgreSQL session that is read-only (a standby, a read-only role).
   * Reading a store opened without migrations to apply writes nothing, so a start found none of this (an audit).
   */
  checkWritable(): Promise<void>
  close(): Promise<void>

  /**
   * The organization with its first keys and distributors, in one transaction: all or none. With `onlyIfFirst`
   * nothing is written (false) when an organization exists already, decided inside that transaction.
   */
  createOrganization(org: Organization, rows?: NewOrganizationRows): Promise<boolean>
  getOrganization(id: string): Promise<Organization | undefined>
  listOrganizations(): Promise<Organization[]>
  /** The organization's own budgets (its keys' unless set on a key); false when it does not exist. */
  setOrganizationBudgets(id: string, budgets: { hourlyBudget?: number; monthlyBudget?: number | null }): Promise<boolean>

  insertKey(key: ApiKeyRecord): Promise<void>
  getKey(id: string): Promise<ApiKeyRecord | undefined>
  findKeyByHash(hash: string): Promise<KeyWithOrganization | undefined>
  listKeys(orgId: string): Promise<ApiKeyRecord[]>
  /** Marks a key revoked; false when it does not exist or was already revoked. */
  revokeKey(id: string, at: number): Promise<boolean>
  /** False (nothing written) where the key is unknown or revoked. */
  setKeyBudgets(id: string, budgets: { hourlyBudget?: number | null; monthlyBudget?: number | null }): Promise<boolean>
  /**
   * Revokes a key and stores its replacement, with the revoked key's budgets as they are then, in one transaction:
   * false (nothing written) when it was revoked already.
   */
  replaceKey(id: string, replacement: ApiKeyRecord, at: number): Promise<boolean>

  createDistributor(d: Distributor): Promise<void>
  getDistributor(id: string): Promise<Distributor | undefined>
  listDistributors(orgId: string): Promise<Distributor[]>

  insertNonce(n: NonceRecord): Promise<void>
  /** Deletes at most `limit` nonces that expired before `before`; returns how many went. */
  deleteExpiredNonces(before: number, limit: number): Promise<number>
  getNonce(nonce: string): Promise<NonceRecord | undefined>
  getMember(ecosystem: string, address: string): Promise<Member | undefined>
  /**
   * Consumes the nonce and creates the member in one transaction: of concurrent calls with one
   * nonce exactly one returns ok. The nonce must be unconsumed, unexpired at `now` and issued to
   * the member's address and ecosystem.
   */
  createMemberWithNonce(nonce: string, member: Member, now: number): Promise<CreateMemberResult>

  insertAction(a: NewAction): Promise<void>
  /** Several actions in one statement: all or none (the action recorder's group commit). */
  insertActions(rows: readonly NewAction[], answers?: readonly IdempotentAnswer[]): Promise<void>
  /** One action, for tests and tools: a verify reads its tags' actions together (`getActions`). */
  getAction(id: string): Promise<ActionRecord | undefined>
  /** The actions of these ids that exist, in no set order: a verify's tags are read together, not one round trip each. */
  getActions(ids: readonly string[]): Promise<ActionRecord[]>
  /**
   * Whether deposits were built for the opportunity into this vault (or before actions named their vault). A scan:
   * asked only when an import moves an opportunity, and an index would cost every build's insert.
   */
  hasDepositsInto(opportunityId: string, vault: string): Promise<boolean>
  /**
   * Each (opportunity, chain, vault) of a wallet's newest 10,000 actions (built or verified), any organization's, once:
   * the vault it was acted on at, as an opportunity may since have moved to another. Whose histories its portfolio reads.
   */
  opportunitiesActedOn(ecosystem: string, wallet: string): Promise<ActedOn[]>
  /**
   * Records a verified transaction of a built action (`verifies`), once: true when this transaction is the one
   * recorded for that action, now or before (the same transaction verified again); false when another transaction
   * was recorded for it first, concurrently too.
   */
  recordVerification(a: NewAction & { kind: 'verify'; verifies: string; chainId: string; txHash: string }): Promise<boolean>

  getSetting(name: string): Promise<string | undefined>
  /** Stores `value` unless the setting exists; resolves to the value stored (first writer wins across processes). */
  putSettingIfAbsent(name: string, value: string): Promise<string>

  /** Usage recorded for every key in one month. */
  loadKeyUsage(month: string): Promise<KeyUsage[]>
  /**
   * Adds increments: `used` to the month's total; `hourUsed` to the stored hour's count when `hour`
   * is that hour, replacing it when `hour` is later, ignored when earlier. Adding (not overwriting)
   * keeps the totals right when several processes write to one database.
   */
  addKeyUsage(rows: readonly KeyUsage[], write?: UsageWrite): Promise<void>
  /**
   * Whether the write of that writer and number committed; if it had not, it never will: its number is taken here,
   * waiting for a transaction still holding it to end (a COMMIT under way when its answer was given up on).
   */
  claimUsageWrite(write: UsageWrite): Promise<boolean>
}

/** Names one usage write, recorded with it (see `UsageWritesTable`). */
export interface UsageWrite {
  writer: string
  seq: number
  at: number
}

/**
 * How long a writer's last recorded usage write is kept once it writes no more (its process gone), by another writer's
 * clock: long past any outage after which a process that lost a write's answer asks about it (a re-audit: at a day,
 * another writer had forgotten one, and it was sent again).
 */
const USAGE_WRITES_KEPT_MS = 30 * 86_400_000

// Rows per INSERT: five parameters each stays far below SQLite's and PostgreSQL's limits.
const USAGE_BATCH = 1000
/** Actions per INSERT: fifteen parameters each. */
export const ACTION_BATCH = 1000
// Every column of a recorded action, in the order a multi-row insert binds them.
const ACTION_COLUMNS = [
  'id',
  'orgId',
  'distributorId',
  'kind',
  'ecosystem',
  'chainId',
  'wallet',
  'opportunityId',
  'token',
  'amount',
  'referralCode',
  'txHash',
  'verifies',
  'vault',
  'createdAt',
] as const satisfies readonly (keyof NewAction)[]
// A column added to the table but not to the list above fails to compile here.
const _everyActionColumn: Exclude<keyof NewAction, (typeof ACTION_COLUMNS)[number]> extends never ? true : never = true

/** A wallet's newest actions whose opportunities its portfolio reads histories of (older ones: only if still held). */
const ACTED_ON_ROWS = 10_000

/** An opportunity a wallet acted on, and where: the vault (and its chain) it was built for; null on rows older than that column. */
export type ActedOn = Pick<ActionRecord, 'chainId' | 'vault'> & { opportunityId: string }

// Any fixed number other than the migrations' lock; the same for every process of this service.
const FIRST_ORGANIZATION_LOCK = 724_201_612

/** A store failure said as `unwritable` wherever the store's states are (503s, readiness). */
function unwritable(message: string): Error {
  return Object.assign(new Error(message), { [STORE_UNAVAILABLE]: 'unwritable' as const })
}

function open(options: StoreOptions): { db: Kysely<Database>; engine: Engine; reader?: ReturnType<typeof openReader> } {
  if (options.engine === 'sqlite') return { ...openSqlite(options.path), engine: 'sqlite' }
  return { db: new Kysely<Database>({ dialect: new LazyPostgresDialect(options), plugins: [new CamelCasePlugin()] }), engine: 'postgres' }
}

export function createStore(options: StoreOptions): Store {
  const { db, engine, reader } = open(options)
  const read = reader?.read
  const keyByHash = compileOnce(db, read, 1, (hash: string) => db.selectFrom('apiKeys').selectAll().where('hash', '=', hash))
  const organizationById = compileOnce(db, read, 1, (id: string) => db.selectFrom('organizations').selectAll().where('id', '=', id))
  const insertActionRows = compileInsertOnce<NewAction>(db, 'actions', ACTION_COLUMNS)
  const memberByAddress = compileOnce(db, read, 2, (ecosystem: string, address: string) =>
    db.selectFrom('members').selectAll().where('ecosystem', '=', ecosystem).where('address', '=', address),
  )

  return {
    engine,
    migrate: (now) => migrate(db, engine, now),
    schemaState: () => schemaState(db),
    async ping() {
      // SQLite: on the reading connection, which no write waits ahead of; behind another process's write lock the
      // writer's queue had held a readiness probe past its limit while reads were served (an audit).
      // The schema's page (page 1) read, as any query reads it: a file that is no database fails here.
      if (read) read('select 1 from sqlite_master limit 1', [])
      else await sql`select 1`.execute(db)
    },
    async checkWritable() {
      if (options.engine === 'sqlite') {
        if (options.path === ':memory:') return
        // The file, and the directory its WAL and shared-memory files are made in: the link's target's, where the file is
        // a symbolic link (SQLite follows it; a re-audit had a writable store refused for its link's directory).
        const file = realpathSync(options.path)
        for (const path of [file, dirname(file)]) {
          try {
            accessSync(path, constants.W_OK)
          } catch (e) {
            throw unwritable(`the embedded store's ${path === file ? 'file' : 'directory'} ${path} takes no writes (${(e as NodeJS.ErrnoException).code ?? String(e)})`)
          }
        }
        return
      }
      // A session made read-only (a standby, default_transaction_read_only), or a role that may only read the tables (a
      // re-audit: a SELECT-only role passed): every operation that takes a body writes an action, a member or a nonce.
      const row = await sql<{ readOnly: string; canWrite: boolean }>`select current_setting('transaction_read_only') as read_only, has_table_privilege('actions', 'INSERT') and has_table_privilege('nonces', 'INSERT') as can_write`.execute(db)
      if (row.rows[0]?.readOnly === 'on') throw unwritable('the database at DATABASE_URL takes no writes (a standby, or a session made read-only)')
      if (row.rows[0]?.canWrite === false) throw unwritable("the database role of DATABASE_URL may not write the store's tables")
    },
    async close() {
      reader?.close()
      await db.destroy()
    },

    createOrganization(org, rows = {}) {
      return db.transaction().execute(async (trx) => {
        // SQLite's transactions take the write lock at BEGIN, so two never both see the store empty; PostgreSQL's
        // READ COMMITTED would let them, so the check waits on a lock of its own, held to the commit.
        if (rows.onlyIfFirst && engine === 'postgres') await sql`select pg_advisory_xact_lock(${FIRST_ORGANIZATION_LOCK})`.execute(trx)
        if (rows.onlyIfFirst && (await trx.selectFrom('organizations').select('id').limit(1).executeTakeFirst())) return false
        await trx.insertInto('organizations').values(org).execute()
        for (const key of rows.keys ?? []) await trx.insertInto('apiKeys').values(key).execute()
        for (const distributor of rows.distributors ?? []) await trx.insertInto('distributors').values(distributor).execute()
        return true
      })
    },
    getOrganization: (id) => db.selectFrom('organizations').selectAll().where('id', '=', id).executeTakeFirst(),
    listOrganizations: () => db.selectFrom('organizations').selectAll().orderBy('createdAt').execute(),
    async setOrganizationBudgets(id, budgets) {
      const r = await db.updateTable('organizations').set(budgets).where('id', '=', id).executeTakeFirst()
      return r.numUpdatedRows > 0n
    },

    async insertKey(key) {
      await db.insertInto('apiKeys').values(key).execute()
    },
    getKey: (id) => db.selectFrom('apiKeys').selectAll().where('id', '=', id).executeTakeFirst(),
    async findKeyByHash(hash) {
      const key = await keyByHash(hash)
      if (!key) return undefined
      const organization = await organizationById(key.orgId)
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
      // Not on a revoked key: a rotation revoking it meanwhile must not take the change (a re-audit: reported done, it
      // had landed on the revoked key, the replacement without it).
      const r = await db.updateTable('apiKeys').set(budgets).where('id', '=', id).where('revokedAt', 'is', null).executeTakeFirst()
      return r.numUpdatedRows > 0n
    },
    replaceKey(id, replacement, at) {
      return db.transaction().execute(async (trx) => {
        // The revoke is a compare-and-set: of two rotations at once, one revokes and writes its key, the other neither.
        const r = await trx.updateTable('apiKeys').set({ revokedAt: at }).where('id', '=', id).where('revokedAt', 'is', null).executeTakeFirst()
        if (r.numUpdatedRows === 0n) return false
        // The budgets as the revoke found them: a budget change that landed between the caller's read and the revoke
        // goes with the key (a re-audit: reported done, it stayed on the revoked key).
        const budgets = await trx.selectFrom('apiKeys').select(['hourlyBudget', 'monthlyBudget']).where('id', '=', id).executeTakeFirstOrThrow()
        await trx.insertInto('apiKeys').values({ ...replacement, ...budgets }).execute()
        return true
      })
    },

    async createDistributor(d) {
      await db.insertInto('distributors').values(d).execute()
    },
    // Ids are UUIDs, written lowercase, and a UUID reads the same in either case (RFC 9562): so does the lookup.
    getDistributor: (id) => db.selectFrom('distributors').selectAll().where('id', '=', id.toLowerCase()).executeTakeFirst(),
    listDistributors: (orgId) =>
      db.selectFrom('distributors').selectAll().where('orgId', '=', orgId).orderBy('createdAt').execute(),

    async insertNonce(n) {
      await db.insertInto('nonces').values(n).execute()
    },
    async deleteExpiredNonces(before, limit) {
      const oldest = db.selectFrom('nonces').select('nonce').where('expiresAt', '<', before).limit(limit)
      // Concurrent agreements on PostgreSQL take different rows rather than wait on each other's; SQLite has one writer.
      const expired = engine === 'postgres' ? oldest.forUpdate().skipLocked() : oldest
      const { numDeletedRows } = await db.deleteFrom('nonces').where('nonce', 'in', expired).executeTakeFirst()
      return Number(numDeletedRows)
    },
    getNonce: (nonce) => db.selectFrom('nonces').selectAll().where('nonce', '=', nonce).executeTakeFirst(),
    getMember: (ecosystem, address) => memberByAddress(ecosystem, address),
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
    async insertActions(rows, answers = []) {
      // One statement is one transaction on both engines; rows per statement stay far below their parameter limits.
      if (rows.length > ACTION_BATCH) throw new Error(`at most ${ACTION_BATCH} actions per call`)
      if (!answers.length) return insertActionRows(rows)
      // With the answers of idempotent builds, in one transaction: an answer is kept exactly when its row is.
      await db.transaction().execute(async (trx) => {
        for (const answer of answers) await writeAnswer(trx, answer)
        await trx.insertInto('actions').values([...rows]).execute()
      })
    },
    getAction: (id) => db.selectFrom('actions').selectAll().where('id', '=', id).executeTakeFirst(),
    async getActions(ids) {
      const found: ActionRecord[] = []
      // In statements of at most 500 ids: SQLite takes a bounded number of parameters.
      for (let i = 0; i < ids.length; i += 500) found.push(...(await db.selectFrom('actions').selectAll().where('id', 'in', ids.slice(i, i + 500)).execute()))
      return found
    },
    async hasDepositsInto(opportunityId, vault) {
      const found = await db
        .selectFrom('actions')
        .select('id')
        .where('opportunityId', '=', opportunityId)
        .where('kind', '=', 'deposit')
        .where((eb) => eb.or([eb('vault', '=', vault), eb('vault', 'is', null)]))
        .limit(1)
        .executeTakeFirst()
      return found !== undefined
    },
    async opportunitiesActedOn(ecosystem, wallet) {
      // Through actions_wallet (wallet, created_at), newest first and bounded: a wallet with 100,000 actions (anyone may
      // ask for any wallet's portfolio) held the one SQLite connection ~40 ms a portfolio reading them all.
      const recent = db
        .selectFrom('actions')
        .select(['opportunityId', 'chainId', 'vault'])
        .where('wallet', '=', wallet)
        .where('ecosystem', '=', ecosystem)
        .where('opportunityId', 'is not', null)
        .orderBy('createdAt', 'desc')
        .limit(ACTED_ON_ROWS)
      const rows = await db.selectFrom(recent.as('recent')).select(['opportunityId', 'chainId', 'vault']).distinct().execute()
      return rows.map((r) => ({ opportunityId: r.opportunityId!, chainId: r.chainId, vault: r.vault }))
    },
    async recordVerification(a) {
      // A row recorded before verifications named their action (verifies null) stands for its whole transaction.
      const legacy = await db
        .selectFrom('actions')
        .select('id')
        .where('chainId', '=', a.chainId)
        .where('txHash', '=', a.txHash)
        .where('kind', '=', 'verify')
        .where('verifies', 'is', null)
        .executeTakeFirst()
      // The unique index on `verifies` holds the row back where the action is verified already, by this transaction or another.
      if (!legacy) await db.insertInto('actions').values(a).onConflict((oc) => oc.doNothing()).execute()
      const verifiedBy = await db.selectFrom('actions').select('txHash').where('verifies', '=', a.verifies).executeTakeFirst()
      return verifiedBy === undefined ? legacy !== undefined : verifiedBy.txHash === a.txHash
    },

    async getSetting(name) {
      return (await db.selectFrom('settings').select('value').where('name', '=', name).executeTakeFirst())?.value
    },
    async putSettingIfAbsent(name, value) {
      await db.insertInto('settings').values({ name, value }).onConflict((oc) => oc.column('name').doNothing()).execute()
      return (await db.selectFrom('settings').select('value').where('name', '=', name).executeTakeFirstOrThrow()).value
    },

    ...opportunityQueries(db),
    ...activityQueries(db, engine),
    ...streamQueries(db),
    ...idempotencyQueries(db, engine),

    loadKeyUsage: (month) => db.selectFrom('keyUsage').selectAll().where('month', '=', month).execute(),
    async claimUsageWrite(write) {
      // An insert, not a read: a read does not see a write whose COMMIT is still under way, which committed after it (a
      // re-audit: counted twice); the insert waits for it, and takes the number where it never came.
      const taken = await db.insertInto('usageWrites').values({ ...write, claimed: 1 }).onConflict((oc) => oc.columns(['writer', 'seq']).doNothing()).returning('seq').execute()
      if (taken.length) return false
      // There already: the write's row, or this check's own from an earlier try whose answer was lost (a re-audit).
      const row = await db.selectFrom('usageWrites').select('claimed').where('writer', '=', write.writer).where('seq', '=', write.seq).executeTakeFirst()
      return row !== undefined && row.claimed === 0
    },
    async addKeyUsage(unordered, write) {
      // In one order, by key and month: two processes' writes locking the same rows in other orders deadlocked on
      // PostgreSQL (an audit: 20 of 20 rounds at 2,000 keys), each then sent again a flush later.
      const rows = [...unordered].sort((a, b) => (a.keyId < b.keyId ? -1 : a.keyId > b.keyId ? 1 : a.month < b.month ? -1 : a.month > b.month ? 1 : 0))
      // One transaction: the caller sends the increments again after a failure, so a batch committed before it
      // would be counted twice; the write is recorded in it, so a caller that lost its answer can ask.
      await db.transaction().execute(async (trx) => {
        if (write) {
          await trx.insertInto('usageWrites').values({ ...write, claimed: 0 }).execute()
          await trx.deleteFrom('usageWrites').where('writer', '=', write.writer).where('seq', '<', write.seq).execute()
          await trx.deleteFrom('usageWrites').where('at', '<', write.at - USAGE_WRITES_KEPT_MS).execute()
        }
        for (let i = 0; i < rows.length; i += USAGE_BATCH) {
          // Raw SQL names the old row (key_usage) and the proposed one (excluded): both engines read
          // every right-hand side against the old row, so `hour` and `hour_used` see the same values.
          await trx
            .insertInto('keyUsage')
            .values(rows.slice(i, i + USAGE_BATCH))
            .onConflict((oc) =>
              oc.columns(['keyId', 'month']).doUpdateSet({
                used: sql`key_usage.used + excluded.used`,
                hourUsed: sql`case when excluded.hour = key_usage.hour then key_usage.hour_used + excluded.hour_used
                  when excluded.hour > key_usage.hour then excluded.hour_used else key_usage.hour_used end`,
                hour: sql`case when excluded.hour > key_usage.hour then excluded.hour else key_usage.hour end`,
              }),
            )
            .execute()
        }
      })
    },
  }
}

class MemberExists extends Error {}
