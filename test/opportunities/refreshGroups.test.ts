/**
 * A catalog pass over many EVM vaults costs the round trips of one vault's reads per group of 64, not of 8: the
 * plugin folds a group's reads into Multicall3 calls, and a vault's reads are one round trip where the file names its
 * asset among its tokens. Counted at a proxy in front of anvil, on 40 vaults.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { createRegistry, createStore, importCatalog, manualClock, refreshCatalog } from '@earn/core'
import { evm } from '@earn/plugin-evm'
import { deployVault, mintToken } from '../chains/evm.ts'
import { localCatalog, startLocalChain, type LocalChain } from '../actions/localChain.ts'

setDefaultTimeout(120_000)

const VAULTS = 40
let chain: LocalChain
let vaults: string[]
let requests = 0
let proxy: ReturnType<typeof Bun.serve>

beforeAll(async () => {
  chain = await startLocalChain()
  vaults = []
  for (let i = 0; i < VAULTS; i++) vaults.push(await deployVault(chain.anvil, chain.token, { name: `Vault ${i}`, symbol: `v${i}` }))
  // Each vault holds i + 1 tUSD: its totalAssets, read back below.
  for (const [i, v] of vaults.entries()) await mintToken(chain.anvil, chain.token, v as `0x${string}`, BigInt(i + 1) * 1_000_000n)
  proxy = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      requests++
      return fetch(chain.anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: await req.text() })
    },
  })
})
afterAll(async () => {
  proxy?.stop(true)
  await chain?.anvil.stop()
})

test('an import and a refresh pass over 40 EVM vaults take a few round trips, each vault read right', async () => {
  const [template] = localCatalog().opportunities
  const opportunities = vaults.map((vaultAddress, i) => ({
    ...template!,
    id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    name: `Vault ${i}`,
    vaultAddress,
    receiptToken: { symbol: `v${i}`, decimals: 6 },
  }))
  const store = createStore({ engine: 'sqlite', path: ':memory:' })
  const clock = manualClock(Date.UTC(2026, 5, 1))
  await store.migrate(clock.now())
  const ecosystems = createRegistry({ evm: async () => ({ plugin: evm, client: evm.connect({ EVM_RPC_URLS: `31337=http://127.0.0.1:${proxy.port}` }) }) })
  try {
    requests = 0
    await importCatalog({ store, ecosystems, clock }, { opportunities })
    const imported = requests
    requests = 0
    const logger = { info() {}, error() {} }
    expect(await refreshCatalog({ store, ecosystems, clock, logger })).toEqual({ refreshed: VAULTS, failed: 0 })
    // Read 8 at a time, the pass made 5 groups of ~4 round trips in turn (20 requests); the import, its vaults not yet
    // vouched for (each contract's reads in a call of its own), ~50.
    // Now: the chain id beside one Multicall3 call (the asset's decimals among the file's tokens), and the import's
    // probe for Multicall3.
    expect({ imported, refreshed: requests }).toSatisfy(({ imported, refreshed }) => imported <= 4 && refreshed <= 3)
    for (const [i, id] of opportunities.map((o) => o.id).entries()) {
      const row = (await store.getOpportunity(id))!
      expect([id, JSON.parse(row.chainFacts!).totalAssets]).toEqual([id, String((i + 1) * 1_000_000)])
    }
  } finally {
    await store.close()
  }
})
