/**
 * What the CLI prints when the store refuses a command (the store's error named and explained, not a raw String(e)),
 * and when the command line asks for something it does not do.
 */
import { expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { errorMessage, parseCommand, UsageError } from '@earn/server/cli'
import { runCli } from '../process.ts'
import { thrown } from '../thrown.ts'

test('a store busy past its timeout reads as such; other store errors keep their code', () => {
  const dir = mkdtempSync(join(tmpdir(), 'earn-cli-errors-'))
  const path = join(dir, 'earn.sqlite')
  const holder = new Database(path, { create: true })
  const waiter = new Database(path)
  try {
    holder.exec('pragma journal_mode = wal; create table t (x)')
    holder.exec('begin immediate')
    waiter.exec('pragma busy_timeout = 0')
    const busy = thrown(() => waiter.exec('begin immediate'))
    expect(String(busy)).toBe('SQLiteError: database is locked')
    expect(errorMessage(busy)).toBe('the store is busy: another process held its write lock past the 5 s busy timeout; run the command again (SQLITE_BUSY)')
    const missing = thrown(() => waiter.exec('select * from nope'))
    expect(errorMessage(missing)).toBe('the store refused the command: no such table: nope (SQLITE_ERROR)')
    expect(errorMessage(new TypeError('x'))).toBe('TypeError: x')
  } finally {
    waiter.close()
    holder.close()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a store that cannot be opened is named by the variable that says where it is', async () => {
  const unreachable = await runCli(['org', 'list', '--json'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test' })
  expect(unreachable.code).toBe(1)
  expect(JSON.parse(unreachable.stderr).error).toMatch(/^cannot open the database \(DATABASE_URL\): .*ECONNREFUSED/)
  const dir = mkdtempSync(join(tmpdir(), 'earn-cli-open-'))
  try {
    // A file where the data directory should be.
    const notADir = join(dir, 'file')
    await Bun.write(notADir, 'x')
    const r = await runCli(['org', 'list'], { DATA_DIR: join(notADir, 'data') })
    expect(r.code).toBe(1)
    expect(r.stderr).toStartWith(`error: cannot open the embedded store in ${join(notADir, 'data')} (DATA_DIR): `)
    expect(r.stderr).not.toContain('    at ')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a misspelt option or an extra word is a usage error, not a command that does less than asked', async () => {
  const refused: [string[], string][] = [
    [['org', 'create', '--name', 'Acme', '--teir', 'premium'], 'unknown option --teir for "org create"; it takes --name, --tier, --hourly-budget, --monthly-budget'],
    [['org', 'create', '--name', 'Capped', '--monthly-budjet', '1000'], 'unknown option --monthly-budjet'],
    [['key', 'create', '--org', 'O', '--kind', 'secret', '--hourly_budget', '5'], 'unknown option --hourly_budget'],
    [['opportunity', 'delist', 'ID1', 'ID2'], '"opportunity delist" takes one ID, not 2: run it once for each'],
    [['org', 'list', 'extra', '--bogus'], 'unknown option --bogus for "org list"; it takes none'],
    [['org', 'list', 'extra'], '"org list" takes no word after it (got extra)'],
    [['org'], 'unknown command "org"'],
  ]
  for (const [argv, message] of refused) {
    const error = thrown(() => parseCommand(argv))
    expect(error).toBeInstanceOf(UsageError)
    expect((error as Error).message).toContain(message)
  }
  expect(parseCommand(['opportunity', 'delist', 'ID1', '--json'])).toEqual({ command: 'opportunity delist', operand: 'ID1', flags: { json: true } })
  // --json is a switch: the word after it is the command's.
  expect(parseCommand(['opportunity', 'import', '--json', 'catalog.json'])).toEqual({ command: 'opportunity import', operand: 'catalog.json', flags: { json: true } })
  expect((thrown(() => parseCommand(['org', 'list', '--json=yes'])) as Error).message).toBe('--json takes no value: give it alone')
  expect(parseCommand(['key', 'rotate', '--id', 'A'])).toEqual({ command: 'key rotate', operand: undefined, flags: { id: 'A' } })

  // Exit code 2, before the store is opened: the data directory is never created.
  const dir = mkdtempSync(join(tmpdir(), 'earn-cli-usage-'))
  try {
    const dataDir = join(dir, 'never')
    const r = await runCli(['org', 'create', '--name', 'Acme', '--teir', 'premium', '--json'], { DATA_DIR: dataDir })
    expect([r.code, JSON.parse(r.stderr).error]).toEqual([2, expect.stringContaining('unknown option --teir')])
    expect(await Bun.file(join(dataDir, 'earn.sqlite')).exists()).toBe(false)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a key command given both --id and --key is a usage error (exit 2), with nothing done', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'earn-cli-both-'))
  try {
    const env = { DATA_DIR: dir }
    const org = (await runCli(['org', 'create', '--name', 'Both', '--json'], env)).json() as { secretKeyId: string; publishableKey: string }
    for (const command of ['revoke', 'rotate', 'budget']) {
      const r = await runCli(['key', command, '--id', org.secretKeyId, '--key', org.publishableKey], env)
      expect([r.code, r.stderr]).toEqual([2, expect.stringContaining('give --id KEY_ID or --key KEY, not both')])
    }
    const keys = (await runCli(['key', 'list', '--org', (await runCli(['org', 'list', '--json'], env)).json().organizations[0].id, '--json'], env)).json() as { keys: { revokedAt: unknown }[] }
    expect(keys.keys.map((k) => k.revokedAt)).toEqual([null, null])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
