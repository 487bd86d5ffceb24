/**
 * Migrations recorded under names no migration now has: stores migrated on 2026-11-27 between c76caaa and dc9e00f ran
 * a version 11 (a covering wallet index, later withdrawn) and a version 12 (today's 11). Such a store is reconciled,
 * on both engines; a version recorded under a name no release had is refused.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { createStore, type Store } from '@earn/core'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { DATABASE_URL, freshSchema, postgresAvailable } from './services.ts'

const WALLET_11 = "a wallet's activity read in order, and counted, from its index"
const LISTINGS = 'stream and opportunity listings read in order, and counted, from their indexes'
const T0 = 1_760_000_000_000

interface Engine {
  store: Store
  exec(sql: string): Promise<void>
  indexes(): Promise<string[]>
  recorded(): Promise<[number, string][]>
}

const cleanups: (() => Promise<unknown>)[] = []
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
})

async function sqliteEngine(): Promise<Engine> {
  const dir = mkdtempSync(join(tmpdir(), 'earn-migrations-'))
  const path = join(dir, 'earn.sqlite')
  const store = createStore({ engine: 'sqlite', path })
  const raw = new Database(path)
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }), async () => raw.close(), () => store.close())
  return {
    store,
    exec: async (sql) => void raw.exec(sql),
    indexes: async () => raw.query<{ name: string }, []>("select name from sqlite_master where type = 'index' and name not like 'sqlite_%'").all().map((r) => r.name),
    recorded: async () => raw.query<{ version: number; name: string }, []>('select version, name from schema_migrations order by version').all().map((r) => [r.version, r.name]),
  }
}

async function postgresEngine(): Promise<Engine> {
  const { schema, drop } = await freshSchema()
  const store = createStore({ engine: 'postgres', url: DATABASE_URL, schema })
  const raw = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
  cleanups.push(drop, () => raw.end(), () => store.close())
  await raw.unsafe(`set search_path to ${schema}`)
  return {
    store,
    exec: async (sql) => void (await raw.unsafe(sql)),
    indexes: async () => (await raw.unsafe<{ indexname: string }[]>('select indexname from pg_indexes where schemaname = $1', [schema])).map((r) => r.indexname).filter((n) => !n.endsWith('_pkey')),
    recorded: async () => (await raw.unsafe<{ version: number; name: string }[]>('select version, name from schema_migrations order by version')).map((r) => [r.version, r.name]),
  }
}

const engines: [string, () => Promise<Engine>][] = [['sqlite', sqliteEngine]]
if (await postgresAvailable()) engines.push(['postgres', postgresEngine])

describe.each(engines)('migrations reconcile pre-release versions (%s)', (_, open) => {
  test("a store of c76caaa (its 11 the covering wallet index) and one of dc9e00f (and its 12 today's 11) end as a release's", async () => {
    const e = await open()
    await e.store.migrate(T0)
    const current = await e.recorded()
    const released = (await e.indexes()).sort()
    expect(released).toContain('actions_wallet')
    expect(released).toContain('streams_listing')
    expect(released).not.toContain('actions_by_wallet')
    const asWalletIndexSwapped = async () => {
      await e.exec('create index actions_by_wallet on actions (org_id, ecosystem, wallet, created_at, id, kind)')
      await e.exec('drop index actions_wallet')
    }

    // c76caaa: versions 1-10 as released, its own 11; no listings indexes, streams_org still there.
    await e.exec('delete from schema_migrations where version in (11, 12)')
    await e.exec(`insert into schema_migrations (version, name, applied_at) values (11, '${WALLET_11.replace("'", "''")}', 1)`)
    await asWalletIndexSwapped()
    await e.exec('drop index streams_listing')
    await e.exec('drop index opportunities_listing')
    await e.exec('create index streams_org on streams (org_id, created_at)')
    expect(await e.store.migrate(T0)).toEqual([11, 12])
    expect(await e.recorded()).toEqual(current)
    expect((await e.indexes()).sort()).toEqual(released)

    // ee3618a-dc9e00f: its 11, and today's 11 as its 12 (the listings indexes there, streams_org dropped).
    await e.exec('delete from schema_migrations where version in (11, 12)')
    await e.exec(`insert into schema_migrations (version, name, applied_at) values (11, '${WALLET_11.replace("'", "''")}', 1), (12, '${LISTINGS}', 1)`)
    await asWalletIndexSwapped()
    expect(await e.store.migrate(T0)).toEqual([11, 12])
    expect(await e.recorded()).toEqual(current)
    expect((await e.indexes()).sort()).toEqual(released)
    expect(await e.store.migrate(T0)).toEqual([])
  })

  test('a version recorded under a name no release had is refused, naming both', async () => {
    const e = await open()
    await e.store.migrate(T0)
    await e.exec("update schema_migrations set name = 'something else' where version = 5")
    await expect(e.store.migrate(T0)).rejects.toThrow(`the store's schema version 5 is "something else", which this release does not know (its 5 is "delisted opportunities"): it was migrated by another line of releases`)
  })
})
