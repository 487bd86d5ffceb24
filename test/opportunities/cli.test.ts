/**
 * `bun run cli opportunity import FILE` and `opportunity list` as processes on the store `bun run start` uses, and
 * a server process whose refresher fills in entries imported while their chain was down.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { getAddress } from 'viem'
import { closedPortUrl } from '../chains/evm.ts'
import { LOCAL_CATALOG_PATH, localCatalog, startLocalChain, type LocalChain } from '../actions/localChain.ts'
import { runCli, startServer } from '../process.ts'

// Chains and server processes start here; bun 1.4.5 does not apply bunfig's [test] timeout, so set it per file.
setDefaultTimeout(60_000)

let chain: LocalChain
const dirs: string[] = []
const dataDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'earn-catalog-cli-'))
  dirs.push(d)
  return d
}
beforeAll(async () => {
  chain = await startLocalChain()
})
afterAll(async () => {
  await chain.anvil.stop()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

describe('opportunity import and list', () => {
  test('imports the sample catalog with its chain facts; a re-import updates; list shows them', async () => {
    const env = { DATA_DIR: dataDir(), ...chain.env() }
    const first = await runCli(['opportunity', 'import', LOCAL_CATALOG_PATH, '--json'], env)
    expect(first.code, first.stderr).toBe(0)
    const rows = first.json().opportunities as { note?: string }[]
    expect(rows.map(({ note: _note, ...row }) => row)).toEqual([
      { id: chain.directId, name: 'Test USD Vault', result: 'created', chainFacts: 'read' },
      { id: chain.swapId, name: 'Test USD Vault (swap)', result: 'created', chainFacts: 'read' },
      // This deployment has no Solana or TON endpoint: their entries wait for the refresher.
      { id: localCatalog('solana').opportunities[0]!.id, name: 'Test USD Vault (Solana)', result: 'created', chainFacts: 'pending' },
      { id: localCatalog('ton').opportunities[0]!.id, name: 'Test USD Vault (TON)', result: 'created', chainFacts: 'pending' },
    ])
    expect(rows[2]!.note).toContain('SOLANA_RPC_URL')
    expect(rows[3]!.note).toContain('TON_API_URL')
    // Not "on its next refresh" as if this server would: it has no RPC for them.
    for (const row of rows.slice(2)) expect(row.note).toEndWith('a server with that RPC configured fills the chain facts in on its next refresh')
    const again = await runCli(['opportunity', 'import', LOCAL_CATALOG_PATH], env)
    expect(again.code).toBe(0)
    expect(again.stdout).toContain(`id=${chain.directId} name=Test USD Vault result=updated chainFacts=read`)
    const list = await runCli(['opportunity', 'list', '--json'], env)
    const listed = list.json().opportunities.map((o: { id: string; refreshedAt: string }) => [o.id, /^\d{4}-/.test(o.refreshedAt)])
    expect(listed.sort()).toEqual(
      [
        [chain.directId, true],
        [chain.swapId, true],
        [localCatalog('solana').opportunities[0]!.id, false],
        [localCatalog('ton').opportunities[0]!.id, false],
      ].sort(),
    )
    // Addresses as the API shows them: EIP-55, TON's bounceable form, Solana's base58 as it is.
    const vaults = Object.fromEntries(list.json().opportunities.map((o: { id: string; vaultAddress: string }) => [o.id, o.vaultAddress]))
    const [ton, solana] = [localCatalog('ton').opportunities[0]!, localCatalog('solana').opportunities[0]!]
    expect([vaults[chain.directId], vaults[ton.id]!.slice(0, 2), vaults[solana.id]]).toEqual([getAddress(chain.vault), 'EQ', solana.vaultAddress])
  })

  test('a catalog with problems exits 1 naming each entry and field, and writes nothing', async () => {
    const env = { DATA_DIR: dataDir(), ...chain.env() }
    const bad = localCatalog()
    bad.opportunities[1]!.vaultAddress = '0xnot'
    ;(bad.opportunities[0] as Record<string, unknown>).chainId = 'x'
    const file = join(env.DATA_DIR, 'bad.json')
    writeFileSync(file, JSON.stringify(bad))
    const r = await runCli(['opportunity', 'import', file], env)
    expect(r.code).toBe(1)
    expect(r.stderr).toContain('the catalog has 2 problems:')
    expect(r.stderr).toContain(`opportunities[0] (${chain.directId}): chainId: "x" is not a chain id of evm`)
    expect(r.stderr).toContain(`opportunities[1] (${chain.swapId}): vaultAddress:`)
    expect((await runCli(['opportunity', 'list', '--json'], env)).json()).toEqual({ opportunities: [] })

    writeFileSync(file, '{ not json')
    const notJson = await runCli(['opportunity', 'import', file, '--json'], env)
    expect(notJson.code).toBe(1)
    expect(JSON.parse(notJson.stderr).error).toContain('is not JSON')
    // A key given twice (the second vault would have been listed without a word) is refused, naming where.
    const entry = JSON.stringify(bad.opportunities[1]).replace('"vaultAddress":', `"vaultAddress":"${chain.vault}","vaultAddress":`)
    writeFileSync(file, `{"opportunities":[${entry}]}`)
    const twice = await runCli(['opportunity', 'import', file], env)
    expect([twice.code, twice.stderr.trim()]).toEqual([1, `error: ${file}: opportunities[0] names "vaultAddress" twice; a JSON reader keeps one of the two silently: remove the other`])
    expect((await runCli(['opportunity', 'list', '--json'], env)).json()).toEqual({ opportunities: [] })
    const missing = await runCli(['opportunity', 'import', join(env.DATA_DIR, 'nope.json')], env)
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain('ENOENT')
    const usage = await runCli(['opportunity', 'import'], env)
    expect(usage.code).toBe(2)
  })

  test('delist and relist: list shows when, a re-import leaves it delisted and says so; an unknown id exits 1', async () => {
    const env = { DATA_DIR: dataDir(), ...chain.env() }
    expect((await runCli(['opportunity', 'import', LOCAL_CATALOG_PATH], env)).code).toBe(0)
    const delist = await runCli(['opportunity', 'delist', chain.directId, '--json'], env)
    expect(delist.code, delist.stderr).toBe(0)
    expect(delist.json()).toEqual({ id: chain.directId, delisted: true })
    const delisted = () =>
      runCli(['opportunity', 'list', '--json'], env).then((r) =>
        r.json().opportunities.flatMap((o: { id: string; delistedAt?: string }) => (o.delistedAt === undefined ? [] : [[o.id, /^\d{4}-/.test(o.delistedAt)]])),
      )
    expect(await delisted()).toEqual([[chain.directId, true]])
    const again = await runCli(['opportunity', 'import', LOCAL_CATALOG_PATH], env)
    expect(again.stdout).toContain(`id=${chain.directId} name=Test USD Vault result=updated chainFacts=read delisted=true`)
    expect(again.stdout).not.toContain(`id=${chain.swapId} name=Test USD Vault (swap) result=updated chainFacts=read delisted`)
    expect(await delisted()).toEqual([[chain.directId, true]])
    const relist = await runCli(['opportunity', 'relist', chain.directId], env)
    expect(relist.stdout).toBe(`id: ${chain.directId}\ndelisted: false\n`)
    expect(await delisted()).toEqual([])

    const unknown = await runCli(['opportunity', 'delist', '00000000-0000-4000-8000-000000000000'], env)
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain('opportunity 00000000-0000-4000-8000-000000000000 is not in the catalog; see opportunity list')
    const usage = await runCli(['opportunity', 'delist'], env)
    expect(usage.code).toBe(2)
    expect(usage.stderr).toContain('opportunity delist needs the opportunity id')
  })

  test('imported while the chain is down: pending; a server reaching the chain fills it in at start', async () => {
    const DATA_DIR = dataDir()
    const evmOnly = join(DATA_DIR, 'evm.json')
    writeFileSync(evmOnly, JSON.stringify(localCatalog()))
    const down = await runCli(['opportunity', 'import', evmOnly, '--json'], { DATA_DIR, ...chain.env(await closedPortUrl()) })
    expect(down.code, down.stderr).toBe(0)
    expect(down.json().opportunities.map((o: { chainFacts: string }) => o.chainFacts)).toEqual(['pending', 'pending'])
    // A chain that is down (or an RPC serving another chain: its message says "configured" too) is one this
    // deployment's own refresh reads later; only a chain it has no RPC for waits for another server.
    for (const o of down.json().opportunities as { note: string }[]) expect(o.note).toEndWith('; the server fills the chain facts in on its next refresh')
    const elsewhere = join(dataDir(), 'elsewhere.json')
    const onBase = localCatalog().opportunities.map((o) => ({ ...o, id: crypto.randomUUID(), chainId: '8453' }))
    writeFileSync(elsewhere, JSON.stringify({ ...localCatalog(), opportunities: onBase }))
    const wrongChain = await runCli(['opportunity', 'import', elsewhere, '--json'], { DATA_DIR: dirname(elsewhere), EVM_RPC_URLS: `8453=${chain.anvil.url}` })
    expect(wrongChain.code, wrongChain.stderr).toBe(0)
    for (const o of wrongChain.json().opportunities as { note: string }[]) {
      expect(o.note).toStartWith(`the RPC configured for EVM chain 8453 serves chain ${chain.anvil.chainId}`)
      expect(o.note).toEndWith('; the server fills the chain facts in on its next refresh')
    }
    const listed = await runCli(['opportunity', 'list', '--json'], { DATA_DIR })
    expect(listed.json().opportunities.map((o: { refreshedAt: string }) => o.refreshedAt)).toEqual(['pending', 'pending'])

    const org = (await runCli(['org', 'create', '--name', 'Catalog test', '--json'], { DATA_DIR })).json()
    const server = await startServer({ DATA_DIR, ...chain.env(), CATALOG_REFRESH_SECONDS: '5' })
    try {
      let total = 0
      for (let i = 0; i < 100 && total < 2; i++) {
        const r = await fetch(`${server.url}/v2/opportunities/`, { headers: { 'x-api-key': org.publishableKey } })
        total = ((await r.json()) as { total: number }).total
        if (total < 2) await Bun.sleep(100)
      }
      expect(total).toBe(2)
      expect(server.output()).toContain('"msg":"catalog refreshed","ecosystem":"evm","chainId":"31337","refreshed":2,"failed":0')
    } finally {
      expect(await server.stop()).toBe(0)
    }
  })

  test('a SIGTERM while a refresh reads a chain that never answers stops within the grace period, writing usage first', async () => {
    const DATA_DIR = dataDir()
    const evmOnly = join(DATA_DIR, 'evm.json')
    writeFileSync(evmOnly, JSON.stringify(localCatalog()))
    expect((await runCli(['opportunity', 'import', evmOnly], { DATA_DIR, ...chain.env(await closedPortUrl()) })).code).toBe(0)
    // Accepts every request and never answers: each read would wait out two 60 s timeouts.
    const hung = Bun.serve({ port: 0, hostname: '127.0.0.1', idleTimeout: 0, fetch: () => new Promise<Response>(() => {}) })
    try {
      const server = await startServer({ DATA_DIR, ...chain.env(`http://127.0.0.1:${hung.port}/`), EVM_RPC_TIMEOUT_MS: '60000', SHUTDOWN_GRACE_SECONDS: '1' })
      for (let i = 0; i < 100 && hung.pendingRequests === 0; i++) await Bun.sleep(50)
      expect(hung.pendingRequests).toBeGreaterThan(0)
      const started = performance.now()
      expect(await server.stop('SIGTERM')).toBe(0)
      expect(performance.now() - started).toBeLessThan(8_000)
      expect(server.output()).toContain('"msg":"stopped","drained":true,"refresh":"abandoned"')
    } finally {
      await hung.stop(true)
    }
  })
})
