/**
 * `bun run start` (server/src/launch.ts) builds its bundle when none was built from the sources on disk. Several
 * processes starting at once with no bundle, as a scaled-out deployment does after an upgrade, must all come up: each
 * one used to write the same files in place, so another could import a half-written main.js or chunk (a SyntaxError,
 * or an empty module and exit code 0).
 */
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fingerprint } from '../../server/src/bundle.ts'
import postgres from 'postgres'
import { runCli, spawnListening, type ServerProcess } from '../process.ts'
import { DATABASE_URL, freshSchema, postgresAvailable } from '../services.ts'

const ROOT = join(import.meta.dir, '../..')

setDefaultTimeout(120_000)

const dirs: string[] = []
const tempDir = (prefix: string) => {
  const d = mkdtempSync(join(tmpdir(), prefix))
  dirs.push(d)
  return d
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

test('six processes starting at once with no bundle all build, start and answer; no staging directory is left (three rounds)', async () => {
  for (let round = 0; round < 3; round++) await startTogether(6)
})

test('a BUNDLE_DIR that cannot hold the bundle stops the start with one line naming it, no stack', async () => {
  const proc = Bun.spawn([process.execPath, 'server/src/launch.ts'], {
    cwd: join(import.meta.dir, '../..'),
    env: { ...process.env, BUNDLE_DIR: '/etc/hostname/bundle', DATA_DIR: tempDir('earn-launch-') },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()])
  expect(code).toBe(1)
  expect(stderr.trim()).toMatch(/^startup error: building the server bundle in \/etc\/hostname\/bundle \(BUNDLE_DIR\): ENOTDIR: not a directory.*$/)
})

test('a BUNDLE_DIR of spaces stops the start with one line naming it, and makes no directory', async () => {
  const root = join(import.meta.dir, '../..')
  const proc = Bun.spawn([process.execPath, 'server/src/launch.ts'], {
    cwd: root,
    env: { ...process.env, BUNDLE_DIR: '   ', DATA_DIR: tempDir('earn-launch-') },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()])
  expect([code, stderr.trim()]).toEqual([1, 'configuration error: BUNDLE_DIR: is only whitespace; unset it for the default, or name a directory'])
  expect(existsSync(join(root, '   '))).toBe(false)
})

test.skipIf(!(await postgresAvailable()))("the bundle tells PostgreSQL's own refusals as the sources do: 503 busy, not 500", async () => {
  // Its classes' names are kept: the store knew PostgreSQL's errors by name, and a minified one (`Be`) made a
  // statement timeout, a lock not granted or a read-only standby a 500 under `bun run start` alone.
  const { schema, drop } = await freshSchema()
  const url = new URL(DATABASE_URL)
  url.searchParams.set('search_path', schema)
  const sql = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
  const server = await spawnListening([process.execPath, 'server/src/launch.ts'], { DATABASE_URL: url.toString(), DATABASE_STATEMENT_TIMEOUT_MS: '300', DATA_DIR: tempDir('earn-launch-') }, { timeoutMs: 90_000 })
  try {
    const { secretKey } = (await runCli(['org', 'create', '--name', 'Locked out', '--json'], { DATABASE_URL: url.toString() })).json() as Record<string, string>
    const agreement = () =>
      fetch(`${server.url}/v2/membership/agreement`, {
        method: 'POST',
        headers: { 'X-API-Key': secretKey!, 'content-type': 'application/json' },
        body: JSON.stringify({ address: '0x' + 'ab'.repeat(20), walletEcosystem: 'evm', url: 'https://app.example.com' }),
      })
    expect((await agreement()).status).toBe(200)
    // A transaction holding the nonces table: the agreement's write waits past the statement timeout.
    await sql.begin(async (tx) => {
      await tx.unsafe(`lock table ${schema}.nonces in access exclusive mode`)
      const r = await agreement()
      expect([r.status, ((await r.json()) as { context?: unknown }).context]).toEqual([503, { database: 'busy' }])
    })
  } finally {
    await server.stop()
    await sql.end()
    await drop()
  }
})

async function startTogether(count: number) {
  const bundleDir = join(tempDir('earn-bundle-'), 'bundle')
  const started = await Promise.allSettled(
    Array.from({ length: count }, () =>
      spawnListening([process.execPath, 'server/src/launch.ts'], { BUNDLE_DIR: bundleDir, DATA_DIR: tempDir('earn-launch-') }, { timeoutMs: 90_000 }),
    ),
  )
  const servers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []))
  try {
    expect(started.map((s) => (s.status === 'rejected' ? String(s.reason).slice(0, 500) : 'up'))).toEqual(Array(count).fill('up'))
    for (const server of servers) expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
    // The OpenAPI document is a chunk loaded on first request: present and whole for every process.
    for (const server of servers) expect((await fetch(`${server.url}/openapi.json`)).status).toBe(200)
  } finally {
    await Promise.all(servers.map((s: ServerProcess) => s.stop()))
  }
  expect(existsSync(join(bundleDir, fingerprint(ROOT), 'main.js'))).toBe(true)
  expect(readdirSync(bundleDir).filter((f) => f.startsWith('.build-'))).toEqual([])
}

test("a bundle of other sources is not run, however new: a release unpacked with its files' old times builds its own", async () => {
  const bundleDir = join(tempDir('earn-bundle-'), 'bundle')
  mkdirSync(bundleDir, { recursive: true })
  // What an earlier release left (the flat layout), built after every source's time: it must not run. It stays: a
  // process of that release may still be running and load a chunk of it later.
  writeFileSync(join(bundleDir, 'main.js'), 'console.error("the old release ran"); process.exit(3)')
  const server = await spawnListening([process.execPath, 'server/src/launch.ts'], { BUNDLE_DIR: bundleDir, DATA_DIR: tempDir('earn-launch-') }, { timeoutMs: 90_000 })
  try {
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
  } finally {
    await server.stop()
  }
  expect(readdirSync(bundleDir).sort()).toEqual([fingerprint(ROOT), 'main.js'])
})
