/** /readyz asks every configured chain, through each plugin's health check. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { evmClientFromPublicClients } from '@earn/plugin-evm'
import { createPublicClient, http } from 'viem'
import { closedPortUrl, startAnvil, type Anvil } from '../chains/evm.ts'
import { createHarness } from '../harness.ts'
import { ConfigError, createStore } from '@earn/core'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'

let anvil: Anvil
beforeAll(async () => {
  anvil = await startAnvil()
})
afterAll(() => anvil.stop())

describe('readiness and the store', () => {
  test("a store that fails its probe is named in a word, as the API's 503s name it: no database host in an answer that needs no key", async () => {
    const h = await createHarness()
    try {
      // A real driver failure: PostgreSQL refusing the connection names its host and port in its text.
      const refused = await postgres('postgres://postgres@127.0.0.1:1/test', { max: 1, connect_timeout: 2, onnotice: () => {} })`select 1`.then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(String((refused as Error).message)).toContain('127.0.0.1')
      h.deps.store.ping = () => Promise.reject(refused)
      const r = await h.get('/readyz', { key: null })
      expect(r.status).toBe(503)
      expect(r.body.checks.store).toBe('unavailable: unreachable')
      expect(r.text).not.toContain('127.0.0.1')
    } finally {
      await h.close()
    }
  })

  test('an embedded store closed after a probe is unavailable, and a file that is no database is not ready', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'earn-ready-'))
    try {
      const h = await createHarness({ store: createStore({ engine: 'sqlite', path: join(dir, 'earn.sqlite') }) })
      expect((await h.get('/readyz', { key: null })).body.checks.store).toBe('ok')
      await h.store.close()
      const closed = await h.get('/readyz', { key: null })
      expect([closed.status, closed.body.checks.store]).toEqual([503, 'unavailable: failed (the server log says why)'])
      // Not a database at all (a file overwritten): the probe reads the schema's page.
      const path = join(dir, 'garbage.sqlite')
      const garbage = createStore({ engine: 'sqlite', path })
      await Bun.write(path, Buffer.alloc(8192, 0x5a))
      await expect(garbage.ping()).rejects.toThrow()
      await garbage.close().catch(() => {})
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test("an embedded store's probe waits behind no write: another process holding the write lock leaves readiness ok while reads are served", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'earn-ready-'))
    const h = await createHarness({ store: createStore({ engine: 'sqlite', path: join(dir, 'earn.sqlite') }) })
    const other = new Database(join(dir, 'earn.sqlite'))
    try {
      other.exec('begin immediate')
      // A write queued behind the lock (an agreement's nonce), then the probe.
      const write = h.post('/v2/membership/agreement', { address: '0x' + 'ab'.repeat(20), walletEcosystem: 'evm', url: 'https://app.example.com' })
      await Bun.sleep(50)
      const started = performance.now()
      const r = await h.get('/readyz', { key: null })
      expect([r.status, r.body.checks.store]).toEqual([200, 'ok'])
      expect(performance.now() - started).toBeLessThan(1_000)
      other.exec('rollback')
      expect((await write).status).toBe(200)
    } finally {
      other.close()
      await h.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('readiness and chains', () => {
  test('a configured chain that answers is ok; one that does not makes the server unready', async () => {
    const up = await createHarness({ clients: { evm: evmClientFromPublicClients({ [anvil.chainId]: anvil.publicClient }) } })
    const ready = await up.get('/readyz', { key: null })
    expect(ready.status).toBe(200)
    expect(ready.body.checks[`chain:evm:${anvil.chainId}`]).toBe('ok')
    await up.close()

    const deadRpc = await closedPortUrl()
    const down = await createHarness({
      clients: { evm: evmClientFromPublicClients({ '8453': createPublicClient({ transport: http(deadRpc, { retryCount: 0 }) }) }) },
    })
    const unready = await down.get('/readyz', { key: null })
    expect(unready.status).toBe(503)
    expect(unready.body.status).toBe('unavailable')
    expect(unready.body.checks['chain:evm:8453']).toStartWith('unavailable')
    expect(unready.text).not.toContain(deadRpc)
    await down.close()
  })

  test('an RPC that serves another chain than configured is not ready', async () => {
    const wrong = await createHarness({ clients: { evm: evmClientFromPublicClients({ '1': anvil.publicClient }) } })
    const r = await wrong.get('/readyz', { key: null })
    expect(r.status).toBe(503)
    expect(r.body.checks['chain:evm:1']).toBe(`unavailable: the RPC serves chain ${anvil.chainId}`)
    await wrong.close()
  })

  test('draining: 503 "shutting down" at once, asking no chain (a slow one held the answer up to its probe limit)', async () => {
    // A chain that never answers.
    const hung = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Promise<Response>(() => {}) })
    const h = await createHarness({ clients: { evm: evmClientFromPublicClients({ '8453': createPublicClient({ transport: http(`http://127.0.0.1:${hung.port}`) }) }) } })
    try {
      h.deps.lifecycle = { draining: true, respelling: false }
      const started = performance.now()
      const r = await h.get('/readyz', { key: null })
      expect(performance.now() - started).toBeLessThan(200)
      expect([r.status, r.body]).toEqual([503, { status: 'unavailable', checks: { server: 'unavailable: shutting down' } }])
    } finally {
      await h.close()
      hung.stop(true)
    }
  })

  test("a plugin's health check that throws, or never answers, is its ecosystem unavailable: a 503 within the probe limit, not a 500 or no answer", async () => {
    const logs: Record<string, unknown>[] = []
    const logger = { info: (f: Record<string, unknown>) => logs.push(f), error: (f: Record<string, unknown>) => logs.push(f) }
    const h = await createHarness({ logger, clients: { evm: evmClientFromPublicClients({ [anvil.chainId]: anvil.publicClient }) } })
    try {
      const real = await h.deps.ecosystems.get('evm')
      // A fourth ecosystem's plugin, as it might be written: the built-in ones bound and catch their own probes.
      const withHealth = (health: () => Promise<never>) => {
        h.deps.ecosystems.get = async () => ({ ...real, plugin: { ...real.plugin, health } })
      }
      withHealth(() => Promise.reject(new Error('fetch to https://rpc.example/v2/SECRETKEY failed')))
      const threw = await h.get('/readyz', { key: null })
      expect([threw.status, threw.body.checks['chain:evm']], threw.text).toEqual([503, 'unavailable: its health check failed (see the server log)'])
      expect(JSON.stringify(logs)).toContain('"health check failed"')
      expect(JSON.stringify(logs)).toContain('https://rpc.example')
      expect(JSON.stringify(logs)).not.toContain('SECRETKEY')
      await Bun.sleep(1_100) // past the second in which probes share one ask of each chain
      withHealth(() => new Promise<never>(() => {}))
      const started = performance.now()
      const hung = await h.get('/readyz', { key: null })
      expect(performance.now() - started).toBeLessThan(4_000)
      expect([hung.status, hung.body.checks['chain:evm']], hung.text).toEqual([503, 'unavailable: no answer within 2000 ms'])
      expect(hung.body.checks.store).toBe('ok')
    } finally {
      await h.close()
    }
  })

  test('probes within a second share one ask of each chain: /readyz needs no key, and each ask may be a paid RPC call', async () => {
    const h = await createHarness({ clients: { evm: evmClientFromPublicClients({ [anvil.chainId]: anvil.publicClient }) } })
    try {
      const real = await h.deps.ecosystems.get('evm')
      let asked = 0
      const original = h.deps.ecosystems.get.bind(h.deps.ecosystems)
      h.deps.ecosystems.get = async (id) => (id === 'evm' ? { ...real, plugin: { ...real.plugin, health: (client: never) => (asked++, real.plugin.health(client)) } } : original(id))
      const answers = await Promise.all(Array.from({ length: 20 }, () => h.get('/readyz', { key: null })))
      for (let i = 0; i < 5; i++) answers.push(await h.get('/readyz', { key: null }))
      expect(answers.map((r) => r.status)).toEqual(Array(25).fill(200))
      expect(asked).toBe(1)
      await Bun.sleep(1_100)
      expect((await h.get('/readyz', { key: null })).body.checks[`chain:evm:${anvil.chainId}`]).toBe('ok')
      expect(asked).toBe(2)
    } finally {
      await h.close()
    }
  })

  test("a plugin whose variables are refused when a request loads it is a 503 naming no value (the process stops on it), not a 500", async () => {
    const h = await createHarness()
    try {
      h.deps.ecosystems.get = () => Promise.reject(new ConfigError('evm plugin', 'EVM_RPC_URLS: https://rpc.example/SECRETKEY is not chainId=url'))
      const r = await h.post('/v2/membership/agreement', { address: '0x000000000000000000000000000000000000dEaD', walletEcosystem: 'evm', url: 'https://app.example.com' })
      expect([r.status, r.body.context], r.text).toEqual([503, { server: 'misconfigured' }])
      expect(r.text).not.toContain('SECRETKEY')
    } finally {
      await h.close()
    }
  })
})
