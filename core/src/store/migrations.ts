/**
 * Versioned migrations, written once with Kysely's schema builder for both engines. They run at
 * start inside one transaction that holds an exclusive lock (a PostgreSQL advisory lock, or SQLite's
 * write lock taken by BEGIN IMMEDIATE), so processes starting together migrate exactly once.
 */
import { type Kysely, sql } from 'kysely'
import type { Database } from './schema.ts'

export type Engine = 'sqlite' | 'postgres'

export interface Migration {
  version: number
  name: string
  /** `now`: the migrating process's clock, for migrations that judge rows by age. */
  up(db: Kysely<any>, engine: Engine, now: number): Promise<void>
}

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'organizations, keys, distributors, members, nonces, actions',
    async up(db) {
      await db.schema
        .createTable('organizations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('tier', 'text', (c) => c.notNull().check(sql`tier in ('standard', 'premium')`))
        .addColumn('hourly_budget', 'bigint', (c) => c.notNull())
        .addColumn('monthly_budget', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('api_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id'))
        .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('publishable', 'secret')`))
        .addColumn('hash', 'text', (c) => c.notNull().unique())
        .addColumn('start', 'text', (c) => c.notNull())
        .addColumn('hourly_budget', 'bigint')
        .addColumn('monthly_budget', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('revoked_at', 'bigint')
        .execute()
      await db.schema.createIndex('api_keys_org').on('api_keys').column('org_id').execute()
      await db.schema
        .createTable('distributors')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('members')
        .addColumn('ecosystem', 'text', (c) => c.notNull())
        .addColumn('address', 'text', (c) => c.notNull())
        .addColumn('org_id', 'text', (c) => c.notNull())
        .addColumn('distributor_id', 'text')
        .addColumn('chain_id', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('members_pk', ['ecosystem', 'address'])
        .execute()
      await db.schema.createIndex('members_distributor').on('members').column('distributor_id').execute()
      await db.schema
        .createTable('nonces')
        .addColumn('nonce', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull())
        .addColumn('ecosystem', 'text', (c) => c.notNull())
        .addColumn('address', 'text', (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('chain_id', 'text', (c) => c.notNull())
        .addColumn('domain', 'text', (c) => c.notNull())
        .addColumn('uri', 'text', (c) => c.notNull())
        .addColumn('issued_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('consumed_at', 'bigint')
        .execute()
      await db.schema.createIndex('nonces_expiry').on('nonces').column('expires_at').execute()
      await db.schema
        .createTable('actions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull())
        .addColumn('distributor_id', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('ecosystem', 'text', (c) => c.notNull())
        .addColumn('chain_id', 'text')
        .addColumn('wallet', 'text', (c) => c.notNull())
        .addColumn('opportunity_id', 'text')
        .addColumn('token', 'text')
        .addColumn('amount', 'text')
        .addColumn('referral_code', 'text')
        .addColumn('tx_hash', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('actions_wallet').on('actions').columns(['wallet', 'created_at']).execute()
      await db.schema
        .createIndex('actions_distributor')
        .on('actions')
        .columns(['distributor_id', 'created_at'])
        .execute()
    },
  },
  {
    version: 2,
    name: 'key usage per month (the in-process meter persists it)',
    async up(db) {
      await db.schema
        .createTable('key_usage')
        .addColumn('key_id', 'text', (c) => c.notNull())
        .addColumn('month', 'text', (c) => c.notNull())
        .addColumn('used', 'bigint', (c) => c.notNull())
        .addColumn('hour', 'bigint', (c) => c.notNull())
        .addColumn('hour_used', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('key_usage_pk', ['key_id', 'month'])
        .execute()
    },
  },
  {
    version: 3,
    name: 'opportunity catalog, settings, one verification per transaction',
    async up(db) {
      await db.schema
        .createTable('opportunities')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('ecosystem', 'text', (c) => c.notNull())
        .addColumn('chain_id', 'text', (c) => c.notNull())
        .addColumn('vault_address', 'text', (c) => c.notNull())
        .addColumn('listing', 'text', (c) => c.notNull())
        .addColumn('chain_facts', 'text')
        .addColumn('tvl', 'double precision', (c) => c.notNull().defaultTo(0))
        .addColumn('refreshed_at', 'bigint')
        .addColumn('refresh_error', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('opportunities_chain').on('opportunities').column('chain_id').execute()
      await db.schema
        .createTable('opportunity_deposit_tokens')
        .addColumn('opportunity_id', 'text', (c) => c.notNull().references('opportunities.id').onDelete('cascade'))
        .addColumn('address', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('opportunity_deposit_tokens_pk', ['opportunity_id', 'address'])
        .execute()
      await db.schema.createIndex('opportunity_deposit_tokens_address').on('opportunity_deposit_tokens').column('address').execute()
      await db.schema
        .createTable('settings')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute()
      // A mined transaction is recorded as verified once; built actions (tx_hash null) never collide.
      await db.schema.createIndex('actions_tx').unique().on('actions').columns(['chain_id', 'tx_hash', 'kind']).execute()
    },
  },
  {
    version: 4,
    name: 'streams',
    async up(db) {
      await db.schema
        .createTable('streams')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull().references('organizations.id'))
        .addColumn('type', 'text', (c) => c.notNull().check(sql`type in ('token', 'point')`))
        .addColumn('ecosystem', 'text', (c) => c.notNull())
        .addColumn('chain_id', 'text', (c) => c.notNull())
        .addColumn('reward_token', 'text')
        .addColumn('point_name', 'text')
        .addColumn('creator', 'text')
        .addColumn('treasury', 'text')
        .addColumn('net_budget', 'text', (c) => c.notNull())
        .addColumn('fee_amount', 'text', (c) => c.notNull())
        .addColumn('total_pulled', 'text', (c) => c.notNull())
        .addColumn('target_opportunity_id', 'text', (c) => c.notNull())
        .addColumn('start_time', 'bigint', (c) => c.notNull())
        .addColumn('end_time', 'bigint', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull().check(sql`state in ('pending', 'active', 'paused', 'cancelled', 'completed')`))
        .addColumn('funding_tx_hash', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .execute()
      // The list: one organization's streams, newest first.
      await db.schema.createIndex('streams_org').on('streams').columns(['org_id', 'created_at']).execute()
      // A mined transfer funds one stream at most (null while pending: nulls never collide).
      await db.schema.createIndex('streams_funding_tx').unique().on('streams').columns(['chain_id', 'funding_tx_hash']).execute()
    },
  },
  {
    version: 5,
    name: 'delisted opportunities',
    async up(db) {
      // A flag, not a delete: past actions still verify against the vault, and holders still withdraw.
      await db.schema.alterTable('opportunities').addColumn('delisted_at', 'bigint').execute()
    },
  },
  {
    version: 6,
    name: 'one verified transaction per built action',
    async up(db) {
      await db.schema.alterTable('actions').addColumn('verifies', 'text').execute()
      // Nulls never collide: built actions, and verifications recorded before this column, stay as they are.
      await db.schema.createIndex('actions_verifies').unique().on('actions').column('verifies').execute()
    },
  },
  {
    version: 7,
    name: 'the vault a built action was built for',
    async up(db) {
      // A re-import may move an opportunity to another vault; its earlier actions still verify against their own.
      await db.schema.alterTable('actions').addColumn('vault', 'text').execute()
    },
  },
  {
    version: 8,
    name: 'several verified deposits in one transaction',
    async up(db) {
      // A bundle carries several wallets' deposits, each verified for its own action: `actions_verifies` keeps one
      // verification per action, and a transaction no longer holds just one.
      await db.schema.dropIndex('actions_tx').execute()
      await db.schema.createIndex('actions_tx').on('actions').columns(['chain_id', 'tx_hash', 'kind']).execute()
    },
  },
  {
    version: 9,
    name: "an agreement's chain id is optional",
    async up(db, engine, now) {
      // Only EVM's agreement names a chain (SIWE); a Solana or TON agreement with none asked for records none.
      if (engine === 'postgres') {
        await sql`alter table nonces alter column chain_id drop not null`.execute(db)
        return
      }
      // SQLite cannot drop a NOT NULL in place: the table is copied into one without it. Its columns are version 1's,
      // written out again rather than shared: a migration must not change when a later one does.
      await db.schema
        .createTable('nonces_v9')
        .addColumn('nonce', 'text', (c) => c.primaryKey())
        .addColumn('org_id', 'text', (c) => c.notNull())
        .addColumn('ecosystem', 'text', (c) => c.notNull())
        .addColumn('address', 'text', (c) => c.notNull())
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('chain_id', 'text')
        .addColumn('domain', 'text', (c) => c.notNull())
        .addColumn('uri', 'text', (c) => c.notNull())
        .addColumn('issued_at', 'bigint', (c) => c.notNull())
        .addColumn('expires_at', 'bigint', (c) => c.notNull())
        .addColumn('consumed_at', 'bigint')
        .execute()
      // Nonces were never deleted before this version: only those the agreements' cleanup would keep (expired less
      // than a day ago) are copied, so the copy, under the write lock every process waits on, stays small.
      await sql`insert into nonces_v9 (nonce, org_id, ecosystem, address, message, chain_id, domain, uri, issued_at, expires_at, consumed_at)
        select nonce, org_id, ecosystem, address, message, chain_id, domain, uri, issued_at, expires_at, consumed_at from nonces
        where expires_at >= ${now - 24 * 60 * 60 * 1000}`.execute(db)
      await db.schema.dropTable('nonces').execute()
      await db.schema.alterTable('nonces_v9').renameTo('nonces').execute()
      await db.schema.createIndex('nonces_expiry').on('nonces').column('expires_at').execute()
    },
  },
  {
    version: 10,
    name: "a distributor's activity read in order, and counted, from its indexes",
    async up(db) {
      // A page is the newest rows of each source in index order, and the total an index-only count: the page no longer
      // sorts, nor the total visits, every row of a distributor's history (a 500,000-row history took ~1 s a page).
      // The new indexes first, the old ones dropped last: on PostgreSQL a DROP INDEX locks its table even against
      // reads until the commit, so it comes just before it rather than ahead of the index builds.
      await db.schema
        .createIndex('actions_by_distributor')
        .on('actions')
        .columns(['org_id', 'distributor_id', 'created_at', 'id', 'kind', 'opportunity_id'])
        .execute()
      await db.schema.createIndex('members_by_distributor').on('members').columns(['org_id', 'distributor_id', 'created_at', 'ecosystem', 'address']).execute()
      await db.schema.dropIndex('actions_distributor').execute()
      await db.schema.dropIndex('members_distributor').execute()
    },
  },
  {
    version: 11,
    name: 'stream and opportunity listings read in order, and counted, from their indexes',
    async up(db) {
      // As version 10: a page's ids come from an index in the listing's order, with what its filters read (a stream's
      // state and end, an entry's ecosystem, chain, refresh and delisting), and only its rows are read.
      // Each step may have been taken already: a store of 2026-11-27 ran this as its version 12 (PRE_RELEASE below).
      await db.schema.createIndex('streams_listing').ifNotExists().on('streams').columns(['org_id', 'created_at', 'id', 'state', 'end_time']).execute()
      await db.schema.dropIndex('streams_org').ifExists().execute()
      await db.schema
        .createIndex('opportunities_listing')
        .ifNotExists()
        .on('opportunities')
        .columns(['tvl desc', 'id', 'ecosystem', 'chain_id', 'refreshed_at', 'delisted_at'])
        .execute()
    },
  },
  {
    version: 12,
    name: "a wallet's activity index (wallet, created_at) where a pre-release version 11 replaced it",
    async up(db) {
      // Nothing on a store migrated by releases alone. One migrated on 2026-11-27 between c76caaa and cbad4e0 ran
      // another version 11 (PRE_RELEASE), which swapped actions_wallet for a covering index that cost every build.
      await db.schema.createIndex('actions_wallet').ifNotExists().on('actions').columns(['wallet', 'created_at']).execute()
      await db.schema.dropIndex('actions_by_wallet').ifExists().execute()
    },
  },
  {
    version: 13,
    name: "one transaction funds streams of several creators or reward tokens, one stream per creator's token",
    async up(db) {
      // A bundle (ERC-4337, EIP-5792) carries several wallets' transfers, each with its stream's tag on the creator's
      // own call: the index on (chain, transaction) let one of them be recorded and left the others pending for good,
      // their budgets at the treasury. Confirm counts a creator's transfers of one token (several streams' tags there
      // are refused), so that is what one transaction may fund once.
      await db.schema.dropIndex('streams_funding_tx').execute()
      await db.schema.createIndex('streams_funding_tx').unique().on('streams').columns(['chain_id', 'funding_tx_hash', 'creator', 'reward_token']).execute()
    },
  },
  {
    version: 14,
    name: 'pending streams found without reading the others',
    async up(db) {
      // The watch on fundings asks for the pending streams every pass; partial, so only they are in it and no other
      // stream's write touches it.
      await db.schema.createIndex('streams_pending').ifNotExists().on('streams').columns(['end_time', 'id']).where(sql.ref('state'), '=', 'pending').execute()
    },
  },
  {
    version: 15,
    name: "pending token streams found by their treasury and token's index",
    async up(db) {
      // The watch reads each treasury and token's pending streams, and pages through those pairs: by end time alone,
      // each read walked every pending stream (an audit: ~5 s a pass on SQLite at 100,000, a sequential scan on
      // PostgreSQL). Token streams only, so point streams are not in it.
      await db.schema
        .createIndex('streams_pending_look')
        .ifNotExists()
        .on('streams')
        .columns(['ecosystem', 'chain_id', 'treasury', 'reward_token', 'end_time', 'id'])
        .where(sql<boolean>`state = 'pending' and type = 'token'`)
        .execute()
      await db.schema.dropIndex('streams_pending').ifExists().execute()
    },
  },
  {
    version: 16,
    name: "where the watch on stream fundings got to, kept across restarts",
    async up(db) {
      // In memory only, a restarted server looked back over the plugin's recent past alone: a funding made while it was
      // down and before that window was left to the confirm endpoint.
      await db.schema
        .createTable('funding_looks')
        .ifNotExists()
        .addColumn('ecosystem', 'text', (c) => c.notNull())
        .addColumn('chain_id', 'text', (c) => c.notNull())
        .addColumn('treasury', 'text', (c) => c.notNull())
        .addColumn('reward_token', 'text', (c) => c.notNull())
        .addColumn('cursor', 'text', (c) => c.notNull())
        .addColumn('again', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('funding_looks_pk', ['ecosystem', 'chain_id', 'treasury', 'reward_token'])
        .execute()
    },
  },
  {
    version: 17,
    name: 'usage writes recorded, so one whose answer was lost is not counted twice',
    async up(db) {
      // PostgreSQL may commit a write whose answer never arrives (a network drop, a failover): sent again, its usage
      // was counted twice (an audit).
      await db.schema
        .createTable('usage_writes')
        .ifNotExists()
        .addColumn('writer', 'text', (c) => c.notNull())
        .addColumn('seq', 'bigint', (c) => c.notNull())
        .addColumn('at', 'bigint', (c) => c.notNull())
        .addPrimaryKeyConstraint('usage_writes_pk', ['writer', 'seq'])
        .execute()
    },
  },
  {
    version: 18,
    name: "a usage write's number told apart as written or claimed",
    async up(db) {
      // A claim whose own answer was lost, met again by the next check, had read as the write committed (a re-audit:
      // usage lost).
      await db.schema.alterTable('usage_writes').addColumn('claimed', 'integer', (c) => c.notNull().defaultTo(0)).execute()
    },
  },
  {
    version: 19,
    name: 'idempotency keys: a creation sent again is answered as the first time',
    async up(db) {
      // A client that lost the answer to a build or a stream creation and sent it again got a second row (an action or
      // a stream it never saw); with the same Idempotency-Key it now gets the first answer (core/src/idempotency.ts).
      await db.schema
        .createTable('idempotency_keys')
        .ifNotExists()
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('fingerprint', 'text', (c) => c.notNull())
        .addColumn('token', 'text')
        .addColumn('lease_until', 'bigint', (c) => c.notNull())
        .addColumn('answer', 'text')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema.createIndex('idempotency_keys_created').ifNotExists().on('idempotency_keys').column('created_at').execute()
    },
  },
]

/**
 * Versions recorded under names no migration now has: commits of 2026-11-27 (c76caaa to dc9e00f, an hour) numbered
 * migrations that were then withdrawn or renumbered (their 11 was the covering wallet index, their 12 is today's 11).
 * Such a row is taken as not applied, so today's migration of that number runs (each written to find its steps
 * taken or not) and version 12 puts the wallet index back. Any other name that differs is another schema: refused.
 */
const PRE_RELEASE: readonly { version: number; name: string }[] = [
  { version: 11, name: "a wallet's activity read in order, and counted, from its index" },
  { version: 12, name: 'stream and opportunity listings read in order, and counted, from their indexes' },
]

// Any fixed number works; it only has to be the same for every process of this service.
const ADVISORY_LOCK_ID = 724_201_611

/** Applies every migration not yet recorded; returns the versions this call applied. */
export async function migrate(db: Kysely<Database>, engine: Engine, now: number): Promise<number[]> {
  // Every start and CLI command but the first after an upgrade finds nothing to apply: that read takes no write lock,
  // so another process's long write holds up neither a start nor a read-only command, and a store that takes no
  // writes (a PostgreSQL standby, a read-only role) still serves one.
  if (await allApplied(db)) return []
  if (engine === 'postgres')
    return db
      .transaction()
      .execute(async (trx) => {
        // An index built over a large table, or the wait for another process migrating, outlasts a request's timeout.
        await sql`set local statement_timeout = 0`.execute(trx)
        await sql`select pg_advisory_xact_lock(${ADVISORY_LOCK_ID})`.execute(trx)
        return applyPending(trx, engine, now)
      })
      .catch(async (e: unknown) => {
        // PostgreSQL's own words ("no schema has been selected to create in") name neither the schema nor the setting.
        if ((e as { code?: unknown }).code !== '3F000') throw e
        const path = await sql<{ searchPath: string }>`select current_setting('search_path') as "searchPath"`.execute(db).then((r) => r.rows[0]?.searchPath, () => undefined)
        throw new Error(
          `PostgreSQL has no schema to create the tables in: the search_path (${path ?? 'unknown'}: DATABASE_URL's ?search_path=, else the role's or the database's default) names none that exists; create it first (CREATE SCHEMA ...)`,
        )
      })
  // SQLite: BEGIN IMMEDIATE takes the write lock before the first read, so two processes cannot both find a
  // migration missing (Kysely's transaction begins deferred).
  return db.connection().execute(async (conn) => {
    await sql.raw('begin immediate').execute(conn)
    try {
      const applied = await applyPending(conn, engine, now)
      await sql.raw('commit').execute(conn)
      return applied
    } catch (e) {
      await sql.raw('rollback').execute(conn).catch(() => {})
      throw e
    }
  })
}

/** Where a store's schema is: its newest recorded version (null: a new store, nothing recorded) and the migrations it lacks. */
export interface SchemaState {
  version: number | null
  pending: number[]
}

/** The store's own answer that it has no such table (PostgreSQL 42P01, SQLite's message): a new store. */
const noSuchTable = (e: unknown) => (e as { code?: unknown }).code === '42P01' || /no such table/i.test(String((e as Error | undefined)?.message))

export async function schemaState(db: Kysely<Database>): Promise<SchemaState> {
  const done = await db
    .selectFrom('schemaMigrations')
    .select(['version', 'name'])
    .execute()
    // No table yet: a new store. Any other failure (a lock past the timeout, a connection lost) is not one: taken for
    // one, a command only to look had upgraded an older store (a re-audit).
    .catch((e: unknown) => {
      if (noSuchTable(e)) return []
      throw e
    })
  if (!done.length) return { version: null, pending: MIGRATIONS.map((m) => m.version) }
  const names = new Map(done.map((r) => [r.version, r.name]))
  return { version: Math.max(...done.map((r) => r.version)), pending: MIGRATIONS.filter((m) => names.get(m.version) !== m.name).map((m) => m.version) }
}

async function allApplied(db: Kysely<Database>): Promise<boolean> {
  const done = await db
    .selectFrom('schemaMigrations')
    .select(['version', 'name'])
    .execute()
    .catch(() => undefined) // no table yet: a new store
  const names = new Map(done?.map((r) => [r.version, r.name]))
  // A newer schema than this release knows, or a version recorded under another name, takes the locked path, which
  // refuses the one and reconciles or refuses the other.
  return done !== undefined && names.size === MIGRATIONS.length && MIGRATIONS.every((m) => names.get(m.version) === m.name)
}

async function applyPending(conn: Kysely<Database>, engine: Engine, now: number): Promise<number[]> {
  await conn.schema
    .createTable('schema_migrations')
    .ifNotExists()
    .addColumn('version', 'integer', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('applied_at', 'bigint', (c) => c.notNull())
    .execute()
  const recorded = await conn.selectFrom('schemaMigrations').select(['version', 'name']).execute()
  const done = new Set<number>()
  for (const r of recorded) {
    const known = MIGRATIONS.find((m) => m.version === r.version)
    if (known?.name === r.name) done.add(r.version)
    else if (PRE_RELEASE.some((p) => p.version === r.version && p.name === r.name))
      await conn.deleteFrom('schemaMigrations').where('version', '=', r.version).execute()
    else if (known) throw new Error(`the store's schema version ${r.version} is "${r.name}", which this release does not know (its ${r.version} is "${known.name}"): it was migrated by another line of releases`)
    else done.add(r.version)
  }
  // An older release on a newer schema would write rows the newer code reads differently (a verification without
  // `verifies` stands for its whole transaction): refused, not run.
  const known = MIGRATIONS[MIGRATIONS.length - 1]!.version
  const newest = Math.max(0, ...done)
  if (newest > known)
    throw new Error(`the store's schema is at version ${newest}, newer than this release knows (${known}): run a release at least as new as the one that migrated it`)
  const applied: number[] = []
  for (const m of MIGRATIONS) {
    if (done.has(m.version)) continue
    await m.up(conn, engine, now)
    await conn.insertInto('schemaMigrations').values({ version: m.version, name: m.name, appliedAt: now }).execute()
    applied.push(m.version)
  }
  return applied
}
