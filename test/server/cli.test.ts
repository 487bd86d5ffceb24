/** The CLI against a running server, on both engines: keys it creates work at once, revocations within 5 s. */
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCli, startServer } from '../process.ts'
import { DATABASE_URL, freshSchema, postgresAvailable } from '../services.ts'

const path = '/v2/membership/?address=0x000000000000000000000000000000000000dEaD'

async function cliWhileServing(env: Record<string, string>) {
  const server = await startServer(env)
  try {
    const org = await runCli(['org', 'create', '--name', 'Acme', '--tier', 'premium', '--hourly-budget', '500', '--json'], env)
    expect(org.code, org.stderr).toBe(0)
    const { orgId, publishableKey, secretKey } = org.json()
    expect(publishableKey).toMatch(/^pk_live_[1-9A-HJ-NP-Za-km-z]{43,44}$/)
    expect(secretKey).toMatch(/^sk_live_/)

    const call = (key: string) => fetch(server.url + path, { headers: { 'x-api-key': key } })
    const first = await call(secretKey)
    expect(first.status).toBe(200)
    expect(first.headers.get('x-ratelimit-limit')).toBe('500')

    // The organization's budgets changed while it serves: its keys (none set its own) take them within 5 s.
    const budgeted = await runCli(['org', 'budget', '--org', orgId, '--hourly-budget', '700', '--monthly-budget', '9000', '--json'], env)
    expect(budgeted.code, budgeted.stderr).toBe(0)
    expect(budgeted.json()).toEqual({ orgId, hourlyBudget: 700, monthlyBudget: 9000 })
    const eventually = async (header: string, want: string | null) => {
      const started = Date.now()
      let seen: string | null = null
      while (Date.now() - started < 5000) {
        seen = (await call(secretKey)).headers.get(header)
        if (seen === want) break
        await Bun.sleep(100)
      }
      expect(seen).toBe(want)
    }
    await eventually('x-ratelimit-limit', '700')
    await eventually('x-monthly-limit', '9000')
    const lifted = await runCli(['org', 'budget', '--org', orgId, '--monthly-budget', 'none', '--json'], env)
    expect(lifted.json()).toEqual({ orgId, hourlyBudget: 700, monthlyBudget: null })
    await eventually('x-monthly-limit', null)
    const unknown = await runCli(['org', 'budget', '--org', 'org_unknown', '--hourly-budget', '1', '--json'], env)
    expect([unknown.code, JSON.parse(unknown.stderr).error]).toEqual([1, 'organization org_unknown not found'])

    const dist = await runCli(['distributor', 'create', '--org', orgId, '--name', 'Wallet app', '--json'], env)
    expect(dist.json().distributorId).toMatch(/^[0-9a-f-]{36}$/)

    const rotated = await runCli(['key', 'rotate', '--key', publishableKey, '--json'], env)
    expect(rotated.code, rotated.stderr).toBe(0)
    expect((await call(rotated.json().key)).status).toBe(200)

    const revoked = await runCli(['key', 'revoke', '--key', secretKey, '--json'], env)
    expect(revoked.json()).toMatchObject({ revoked: true })
    const started = Date.now()
    let status = 200
    while (Date.now() - started < 5000 && status === 200) {
      status = (await call(secretKey)).status
      if (status === 200) await Bun.sleep(100)
    }
    expect(status).toBe(401)
    expect(Date.now() - started).toBeLessThan(5000)

    // The listing never shows a digest or a key.
    const list = await runCli(['key', 'list', '--org', orgId, '--json'], env)
    expect(list.stdout).not.toContain(secretKey)
    expect(list.stdout).not.toContain('hash')
    expect(list.json().keys).toHaveLength(3)

    const bad = await runCli(['org', 'create', '--json'], env)
    expect(bad.code).toBe(2)
    expect(JSON.parse(bad.stderr).error).toContain('--name')
  } finally {
    expect(await server.stop()).toBe(0)
  }
}

describe('CLI while the server runs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'earn-cli-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  test('embedded SQLite', async () => {
    await cliWhileServing({ DATA_DIR: dir })
  })

  test('PostgreSQL', async () => {
    if (!(await postgresAvailable())) return
    const { schema, drop } = await freshSchema()
    try {
      await cliWhileServing({ DATABASE_URL: `${DATABASE_URL}?search_path=${schema}` })
    } finally {
      await drop()
    }
  })
})
