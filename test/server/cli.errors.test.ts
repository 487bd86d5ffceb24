/**
 * What the CLI prints when the store refuses a command (the store's error named and explained, not a raw String(e)),
 * and when the command line asks for something it does not do.
 */
import { expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { asksForHelp, errorMessage, parseCommand, UsageError } from '@earn/server/cli'
import postgres from 'postgres'
import { runCli } from '../process.ts'
import { cuttableProxy } from '../proxy.ts'
import { DATABASE_URL, freshSchema, postgresAvailable } from '../services.ts'
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

test('PostgreSQL refusing for a lock held or a deadlock reads as busy, run the command again', async () => {
  const holder = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
  const waiter = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
  const table = `cli_busy_${process.pid}`
  try {
    await holder.unsafe(`create table ${table} (x int)`)
    const locked = Promise.withResolvers<void>()
    const released = Promise.withResolvers<void>()
    const held = holder.begin(async (sql) => {
      await sql.unsafe(`lock table ${table}`)
      locked.resolve()
      await released.promise
    })
    await locked.promise
    const refused = await waiter.begin(async (sql) => {
      await sql.unsafe(`set local lock_timeout = 50`)
      await sql.unsafe(`lock table ${table}`)
    }).catch((e: unknown) => e)
    released.resolve()
    await held
    expect((refused as { code?: string }).code).toBe('55P03')
    expect(errorMessage(refused)).toStartWith('the store is busy: canceling statement due to lock timeout (another command or a server held what this one needed); run the command again (55P03)')
  } finally {
    await holder.unsafe(`drop table if exists ${table}`)
    await Promise.all([holder.end(), waiter.end()])
  }
})

test('a store that cannot be opened is named by the variable that says where it is', async () => {
  const unreachable = await runCli(['org', 'list', '--json'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test' })
  expect(unreachable.code).toBe(1)
  expect(JSON.parse(unreachable.stderr).error).toMatch(/^cannot open the database \(DATABASE_URL\): .*ECONNREFUSED/)
  const dir = mkdtempSync(join(tmpdir(), 'earn-cli-open-'))
  try {
    // A file where the data directory should be, or on its path (mkdir's "EEXIST: file already exists" had read as if
    // the directory's being there were the fault).
    const notADir = join(dir, 'file')
    await Bun.write(notADir, 'x')
    for (const [dataDir, code] of [[join(notADir, 'data'), 'ENOTDIR'], [notADir, 'EEXIST']] as const) {
      const r = await runCli(['org', 'list'], { DATA_DIR: dataDir })
      expect(r.code).toBe(1)
      expect(r.stderr.trim()).toBe(`error: cannot open the embedded store in ${dataDir} (DATA_DIR): it, or a directory on its path, is a file, not a directory (${code})`)
    }
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
    // A second value would silently replace the first (a revoke of B alone, a tier of the last one given).
    [['key', 'revoke', '--id', 'A', '--id', 'B'], '--id is given twice; give it once'],
    [['org', 'create', '--name', 'A', '--tier', 'premium', '--tier', 'standard'], '--tier is given twice'],
    [['org', 'create', '--name', 'A', '--name=B'], '--name is given twice'],
    // Names an object's prototype has are options like any other.
    [['org', 'list', '--constructor'], 'unknown option --constructor for "org list"'],
    [['org', 'list', '--__proto__', 'x'], 'unknown option --__proto__ for "org list"'],
    [['org', 'create', '--name', 'A', '--hourly-budget', 'constructor'], '--hourly-budget must be a whole number of cost units'],
    [['key', 'budget', '--id', 'K', '--monthly-budget', 'toString'], '--monthly-budget must be a whole number of cost units'],
    // Values that need no store are checked with the line.
    [['org', 'create', '--name', 'A', '--tier', 'gold'], '--tier must be standard or premium'],
    [['key', 'create', '--org', 'O', '--kind', 'bogus'], '--kind must be publishable or secret'],
    [['key', 'budget', '--id', 'K', '--hourly-budget', '99999999999999999999999'], `--hourly-budget must be a whole number of cost units up to ${Number.MAX_SAFE_INTEGER}, or default`],
    [['org', 'create', '--name', 'A', '--hourly-budget', 'none'], `--hourly-budget must be a whole number of cost units up to ${Number.MAX_SAFE_INTEGER}`],
    [['org', 'budget', '--org', 'O'], 'give --hourly-budget and/or --monthly-budget'],
    [['org', 'budget', '--hourly-budget', '5'], '--org is required'],
    [['org', 'budget', '--org', 'O', '--hourly-budget', 'none'], `--hourly-budget must be a whole number of cost units up to ${Number.MAX_SAFE_INTEGER}`],
  ]
  for (const [argv, message] of refused) {
    const error = thrown(() => parseCommand(argv))
    expect(error).toBeInstanceOf(UsageError)
    expect((error as Error).message).toContain(message)
  }
  const id = '36c2d744-8ad8-4079-93d2-13c31baa189f'
  expect(parseCommand(['opportunity', 'delist', id, '--json'])).toEqual({ command: 'opportunity delist', operand: id, flags: { json: true }, budgets: {} })
  // --json is a switch: the word after it is the command's.
  expect(parseCommand(['opportunity', 'import', '--json', 'catalog.json'])).toEqual({ command: 'opportunity import', operand: 'catalog.json', flags: { json: true }, budgets: {} })
  expect((thrown(() => parseCommand(['org', 'list', '--json=yes'])) as Error).message).toBe('--json takes no value: give it alone')
  expect(parseCommand(['key', 'rotate', '--id', 'A'])).toEqual({ command: 'key rotate', operand: undefined, flags: { id: 'A' }, budgets: {} })
  expect(parseCommand(['org', 'create', '--name', 'A', '--monthly-budget', 'none', '--hourly-budget', '5']).budgets).toEqual({ hourly: 5, monthly: null })
  expect(parseCommand(['org', 'budget', '--org', 'O', '--monthly-budget', 'none']).budgets).toEqual({ hourly: undefined, monthly: null })

  // Exit code 2, before the store is opened: the data directory is never created.
  const dir = mkdtempSync(join(tmpdir(), 'earn-cli-usage-'))
  try {
    const dataDir = join(dir, 'never')
    const r = await runCli(['org', 'create', '--name', 'Acme', '--teir', 'premium', '--json'], { DATA_DIR: dataDir })
    expect([r.code, JSON.parse(r.stderr).error]).toEqual([2, expect.stringContaining('unknown option --teir')])
    const gold = await runCli(['org', 'create', '--name', 'Acme', '--tier', 'gold'], { DATA_DIR: dataDir })
    expect([gold.code, gold.stderr]).toEqual([2, expect.stringContaining('--tier must be standard or premium')])
    // What a command cannot run without, and a name it cannot take, are told before the store is opened too.
    const missing: [string[], string][] = [
      [['org', 'create'], '--name is required'],
      [['org', 'create', '--name', 'a'.repeat(201)], '--name is at most 200 characters'],
      [['org', 'create', '--name', '  '], '--name must not be empty'],
      [['distributor', 'create', '--org', 'O', '--name', 'a\tb'], '--name must be one line of text, without control characters'],
      [['key', 'create', '--org', 'O'], '--kind is required'],
      [['key', 'list'], '--org is required'],
      [['key', 'rotate'], 'give --id KEY_ID or --key KEY'],
      [['key', 'budget', '--id', 'K'], 'give --hourly-budget and/or --monthly-budget'],
      [['opportunity', 'import'], 'opportunity import needs the catalog file: opportunity import FILE'],
      [['opportunity', 'delist'], 'opportunity delist needs the opportunity id: opportunity delist ID'],
      // Blank is no value.
      [['distributor', 'create', '--org='], '--org needs a value'],
      [['key', 'list', '--org', ' '], '--org needs a value'],
      [['key', 'create', '--org=', '--kind', 'secret'], '--org needs a value'],
      [['opportunity', 'delist', ''], 'opportunity delist needs the opportunity id: opportunity delist ID'],
      // An id no entry can have (it had opened, or made, the store to say it is not in the catalog).
      [['opportunity', 'relist', 'not-a-uuid'], 'ID must be the opportunity id, a UUID as `opportunity list` shows it (got "not-a-uuid")'],
    ]
    for (const [args, message] of missing) {
      const r = await runCli([...args, '--json'], { DATA_DIR: dataDir })
      expect([args.join(' '), r.code, JSON.parse(r.stderr).error]).toEqual([args.join(' '), 2, message])
    }
    expect(await Bun.file(join(dataDir, 'earn.sqlite')).exists()).toBe(false)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a catalog file that cannot be read is named as the CLI resolved it (the repository root), with the reason in words', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'earn-cli-file-'))
  try {
    const missing = await runCli(['opportunity', 'import', 'no-such-catalog.json', '--json'], { DATA_DIR: dir })
    expect([missing.code, JSON.parse(missing.stderr).error]).toEqual([1, `cannot read ${join(import.meta.dir, '../..', 'no-such-catalog.json')}: no such file (ENOENT)`])
    const directory = await runCli(['opportunity', 'import', dir, '--json'], { DATA_DIR: dir })
    expect(JSON.parse(directory.stderr).error).toBe(`cannot read ${dir}: it is a directory (EISDIR)`)
    // What is wrong inside the file names it as resolved too.
    const notJson = await runCli(['opportunity', 'import', 'README.md', '--json'], { DATA_DIR: dir })
    expect(JSON.parse(notJson.stderr).error).toStartWith(`${join(import.meta.dir, '../..', 'README.md')} is not JSON`)
    // A device or a pipe has no size to check first: read up to the bound, then refused (it had grown past 3 GB).
    const endless = await runCli(['opportunity', 'import', '/dev/zero', '--json'], { DATA_DIR: dir })
    expect([endless.code, JSON.parse(endless.stderr).error]).toEqual([1, 'cannot read /dev/zero: it is over 268435456 bytes, more than a catalog file\'s 268435456'])
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

test('-h and --help ask for usage where an option or a word goes, not as an option\'s value', () => {
  for (const argv of [[], ['--help'], ['-h'], ['key', 'list', '-h'], ['key', 'list', '--org', 'O', '--help'], ['distributor', 'create', '--name', '--help']]) expect(asksForHelp(argv), argv.join(' ')).toBe(true)
  for (const argv of [['distributor', 'create', '--org', 'O', '--name', '-h'], ['org', 'list']]) expect(asksForHelp(argv), argv.join(' ')).toBe(false)
})

test('listing the keys or distributors of an organization the store does not know is an error, not an empty list', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'earn-cli-unknown-org-'))
  try {
    for (const what of ['key', 'distributor']) {
      const r = await runCli([what, 'list', '--org', 'org_nosuch'], { DATA_DIR: dir })
      expect([r.code, r.stderr.trim()]).toEqual([1, 'error: organization org_nosuch not found'])
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('`bun run cli` does not echo its command line, which may carry a key, to stderr', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'earn-cli-echo-'))
  try {
    const key = `sk_live_${'x'.repeat(32)}`
    const run = Bun.spawn([process.execPath, 'run', 'cli', 'key', 'revoke', '--key', key], { env: { ...process.env, DATA_DIR: dir }, stdout: 'pipe', stderr: 'pipe' })
    const [code, stderr] = await Promise.all([run.exited, new Response(run.stderr).text()])
    expect([code, stderr.trim()]).toEqual([1, 'error: key not found'])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a key pasted where an id or a word goes is cut to its prefix in the error, as the API cuts it (stderr ends up in logs)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'earn-cli-mask-'))
  try {
    const key = `sk_live_${'Ft5oAkv1U5EcJcZvftF6MULQjZN9LqZVgc1zk'}`
    for (const [args, said] of [
      [['key', 'revoke', key], 'error: "key revoke" takes no word after it (got sk_live_…)'],
      [['key', 'create', '--org', key, '--kind', 'secret'], 'error: organization sk_live_… not found'],
      [['distributor', 'list', '--org', key, '--json'], '{"error":"organization sk_live_… not found"}'],
    ] as const) {
      const run = Bun.spawn([process.execPath, 'run', 'cli', ...args], { env: { ...process.env, DATA_DIR: dir }, stdout: 'pipe', stderr: 'pipe' })
      const [, stderr] = await Promise.all([run.exited, new Response(run.stderr).text()])
      expect(stderr).not.toContain(key)
      expect(stderr.split('\n')[0]).toBe(said)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a result standard output cannot take (a full disk) is exit 1, the ids it made on stderr: the keys are shown nowhere else', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'earn-cli-full-'))
  try {
    const proc = Bun.spawn([process.execPath, join(import.meta.dir, '../../server/src/cli.ts'), 'org', 'create', '--name', 'Lost', '--json'], {
      env: { ...process.env, DATA_DIR: dir },
      stdout: Bun.file('/dev/full'),
      stderr: 'pipe',
    })
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()])
    expect(code).toBe(1)
    const error: string = JSON.parse(stderr).error
    expect(error).toMatch(/^the command was carried out, but its result could not be written to standard output \(ENOSPC\): orgId=org_\w+ publishableKeyId=key_\w+ secretKeyId=key_\w+; a key it issued is shown nowhere else, so revoke or rotate it$/)
    expect(error).not.toMatch(/(pk|sk)_live_/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test.if(await postgresAvailable())("a write whose answer PostgreSQL never sent says it may have been carried out: a revoke reported failed had revoked the key", async () => {
  const { schema, drop } = await freshSchema()
  const direct = { DATABASE_URL: `${DATABASE_URL}?search_path=${schema}` }
  const proxy = cuttableProxy(5432)
  const holder = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
  const watcher = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
  try {
    const created = await runCli(['org', 'create', '--name', 'Held', '--json'], direct)
    const org = created.json()
    const keyId: string = org.secretKeyId
    // The key's row locked, so the revoke's UPDATE waits on PostgreSQL; the route is cut while it waits, then the lock
    // is let go: the UPDATE commits, and its answer never comes back.
    const locked = Promise.withResolvers<void>()
    const release = Promise.withResolvers<void>()
    const held = holder.begin(async (sql) => {
      await sql.unsafe(`select 1 from ${schema}.api_keys where id = $1 for update`, [keyId])
      locked.resolve()
      await release.promise
    })
    await locked.promise
    const revoke = runCli(['key', 'revoke', '--id', keyId, '--json'], {
      DATABASE_URL: `postgres://postgres@127.0.0.1:${proxy.port}/test?search_path=${schema}`,
      DATABASE_STATEMENT_TIMEOUT_MS: '3000',
    })
    const deadline = Date.now() + 15_000
    while (Date.now() < deadline) {
      const [waiting] = await watcher.unsafe(`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query ilike '%update%api_keys%'`)
      if (waiting!.n > 0) break
      await Bun.sleep(20)
    }
    proxy.cut()
    release.resolve()
    await held
    const r = await revoke
    expect(r.code).toBe(1)
    expect(JSON.parse(r.stderr).error).toBe(
      'the store did not answer: PostgreSQL gave no answer within 5000 ms; what the command changes may have been carried out all the same: look (org list, key list, opportunity list) before running it again',
    )
    const [row] = await holder.unsafe(`select revoked_at from ${schema}.api_keys where id = $1`, [keyId])
    expect(row!.revoked_at).not.toBeNull()
  } finally {
    proxy.stop()
    await Promise.all([holder.end(), watcher.end()])
    await drop()
  }
}, 60_000)
