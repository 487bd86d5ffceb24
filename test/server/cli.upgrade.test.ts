/**
 * Upgrading a store is one-way (an older release refuses it after), so it is done on purpose: the CLI makes a new
 * store, but leaves one of an older schema as it is unless told `store migrate`; the server migrates at start and
 * says so in its log. An older store is made here by taking the newest migration back off a current one (its table
 * made `if not exists`, its record deleted), as a store of the release before it is.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MIGRATIONS } from '@earn/core/store/migrations'
import { runCli, startServer } from '../process.ts'

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})
const newDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'earn-upgrade-'))
  dirs.push(d)
  return d
}

const LATEST = MIGRATIONS.at(-1)!.version
const schemaOf = (dir: string) => {
  const db = new Database(join(dir, 'earn.sqlite'), { readonly: true })
  try {
    return (db.query('select max(version) as v from schema_migrations').get() as { v: number }).v
  } finally {
    db.close()
  }
}

/** A store as the release before the newest migration left it, with an organization in it. */
async function olderStore(): Promise<string> {
  const dir = newDir()
  expect((await runCli(['org', 'create', '--name', 'Before the upgrade'], { DATA_DIR: dir })).code).toBe(0)
  const db = new Database(join(dir, 'earn.sqlite'))
  db.run('delete from schema_migrations where version = ?', [LATEST])
  db.close()
  expect(schemaOf(dir)).toBe(LATEST - 1)
  return dir
}

describe('the CLI on a store of an older schema', () => {
  test('refuses to run (exit 1) saying how to upgrade, and leaves the store as it was', async () => {
    const dir = await olderStore()
    const r = await runCli(['org', 'list'], { DATA_DIR: dir })
    expect(r.code, r.stderr).toBe(1)
    expect(r.stderr).toContain(`the store's schema is at version ${LATEST - 1} and this release needs ${LATEST} (migrations ${LATEST}); an upgrade is one-way`)
    expect(r.stderr).toContain('run `bun run cli store migrate`')
    expect(r.stdout).toBe('')
    expect(schemaOf(dir)).toBe(LATEST - 1)
  }, 30_000)

  test('`store migrate` upgrades it and says from what; then every command runs', async () => {
    const dir = await olderStore()
    const migrated = await runCli(['store', 'migrate', '--json'], { DATA_DIR: dir })
    expect(migrated.code, migrated.stderr).toBe(0)
    expect(migrated.json()).toEqual({ schema: LATEST, from: LATEST - 1, applied: String(LATEST) })
    expect(schemaOf(dir)).toBe(LATEST)
    const listed = await runCli(['org', 'list', '--json'], { DATA_DIR: dir })
    expect(listed.code, listed.stderr).toBe(0)
    expect(listed.json().organizations.map((o: { name: string }) => o.name)).toEqual(['Before the upgrade'])
    const again = await runCli(['store', 'migrate', '--json'], { DATA_DIR: dir })
    expect(again.json()).toEqual({ schema: LATEST, from: LATEST, applied: 'nothing: the store was up to date' })
  }, 30_000)

  test('a new store is made by any command, and by `store migrate`', async () => {
    const made = await runCli(['store', 'migrate', '--json'], { DATA_DIR: newDir() })
    expect(made.code, made.stderr).toBe(0)
    expect(made.json()).toMatchObject({ schema: LATEST, from: 'a new store' })
  }, 30_000)
})

test('the server migrates an older store at start and logs from what, and what it applied', async () => {
  const dir = await olderStore()
  const server = await startServer({ DATA_DIR: dir })
  try {
    const lines = server
      .output()
      .split('\n')
      .filter((l) => l.includes('"msg":"store: migrat'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(lines.map((l) => [l.msg, l.from])).toEqual([
      ['store: migrating; the server listens once it is done', LATEST - 1],
      ['store: migrated', LATEST - 1],
    ])
    expect(lines[1]!.applied).toEqual([LATEST])
    expect(typeof lines[1]!.ms).toBe('number')
  } finally {
    expect(await server.stop()).toBe(0)
  }
  expect(schemaOf(dir)).toBe(LATEST)
}, 30_000)
