/**
 * A re-import meeting the chain's answers, on both engines, against anvil behind a proxy the test controls: it can
 * hold requests (a refresh caught mid-read) or refuse them (the RPC down). A refresh in flight never writes the
 * old listing's facts over a newer import, and a re-import while the chain is down keeps the last facts priced at
 * the new file, checked against them, and does not move a listed opportunity to a vault nobody could read.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CatalogError, createRegistry, createStore, importCatalog, manualClock, refreshCatalog, type Store } from '@earn/core'
import { evm } from '@earn/plugin-evm'
import { mintToken } from '../chains/evm.ts'
import { localCatalog, startLocalChain, type LocalChain } from '../actions/localChain.ts'
import { DATABASE_URL, freshSchema, postgresAvailable } from '../services.ts'

setDefaultTimeout(60_000)

let chain: LocalChain
let VAULT_A: string
let VAULT_B: string
/** In front of anvil: requests that arrive while `hold` is set wait for it; while `down`, they get a 503. */
const rpc = { hold: undefined as Promise<void> | undefined, held: 0, down: false }
let proxy: ReturnType<typeof Bun.serve>

beforeAll(async () => {
  chain = await startLocalChain()
  ;[VAULT_A, VAULT_B] = [chain.vault.toLowerCase(), chain.swapVault.toLowerCase()]
  // totalAssets() is the vault's balance of its asset: 1 and 5 tUSD.
  await mintToken(chain.anvil, chain.token, chain.vault, 1_000_000n)
  await mintToken(chain.anvil, chain.token, chain.swapVault, 5_000_000n)
  proxy = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const hold = rpc.hold
      if (hold) {
        rpc.held++
        await hold
      }
      if (rpc.down) return new Response('down', { status: 503 })
      return fetch(chain.anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: await req.text() })
    },
  })
})
afterAll(async () => {
  proxy?.stop(true)
  await chain?.anvil.stop()
})

/**
 * The EVM plugin on the proxy, as a process configures it. The refresher and the import each get their own, as
 * the server and the CLI are separate processes (one client would share the refresher's held read with the import).
 */
const ecosystems = () => createRegistry({ evm: async () => ({ plugin: evm, client: evm.connect({ EVM_RPC_URLS: `31337=http://127.0.0.1:${proxy.port}` }) }) })

/** The sample's two EVM entries, one vault each; `swap` trades their vaults. */
function catalog({ swap = false, price = 1 } = {}) {
  const file = localCatalog()
  const [a, b] = file.opportunities
  for (const o of [a!, b!]) {
    o.baseTokenPriceUsd = price
    delete o.receiptToken.address
  }
  a!.vaultAddress = swap ? VAULT_B : VAULT_A
  b!.vaultAddress = swap ? VAULT_A : VAULT_B
  return file
}

function reimportTests(engine: string, make: () => Promise<{ store: Store; cleanup(): Promise<void> }>) {
  describe(`re-import and refresh: ${engine}`, () => {
    let store: Store
    let cleanup: () => Promise<void>
    const clock = manualClock(Date.UTC(2026, 5, 1))
    const logged: Record<string, unknown>[] = []
    const logger = { info: (f: Record<string, unknown>) => logged.push(f), error: (f: Record<string, unknown>) => logged.push(f) }
    const [directId, swapId] = localCatalog().opportunities.map((o) => o.id)
    const stored = async (id: string) => {
      const row = (await store.getOpportunity(id))!
      return { vaultAddress: row.vaultAddress.toLowerCase(), totalAssets: row.chainFacts && JSON.parse(row.chainFacts).totalAssets, tvl: row.tvl, refreshedAt: row.refreshedAt }
    }
    beforeAll(async () => {
      rpc.down = false
      ;({ store, cleanup } = await make())
      await store.migrate(0)
    })
    afterAll(async () => {
      await store.close()
      await cleanup()
    })

    test('a refresh in flight does not write the old listing’s facts over an import made meanwhile', async () => {
      const server = ecosystems()
      await importCatalog({ store, ecosystems: ecosystems(), clock }, catalog())
      expect(await stored(directId!)).toMatchObject({ vaultAddress: VAULT_A, totalAssets: '1000000', tvl: 1 })
      const importedAt = clock.now()

      // The refresher loads both listings and asks the chain, which holds the answers.
      let release!: () => void
      rpc.held = 0
      rpc.hold = new Promise<void>((r) => (release = r))
      clock.advance(60_000)
      const pass = refreshCatalog({ store, ecosystems: server, clock, logger })
      while (rpc.held === 0) await Bun.sleep(5)
      // Meanwhile the operator swaps the entries' vaults; the import's own reads answer at once.
      rpc.hold = undefined
      const swapped = await importCatalog({ store, ecosystems: ecosystems(), clock }, catalog({ swap: true }))
      expect(swapped.opportunities.map((o) => o.chainFacts)).toEqual(['read', 'read'])
      release()
      expect(await pass).toEqual({ refreshed: 0, failed: 0 })

      // Each entry shows its new vault with that vault's facts, as the import wrote them.
      expect(await stored(directId!)).toEqual({ vaultAddress: VAULT_B, totalAssets: '5000000', tvl: 5, refreshedAt: importedAt + 60_000 })
      expect(await stored(swapId!)).toEqual({ vaultAddress: VAULT_A, totalAssets: '1000000', tvl: 1, refreshedAt: importedAt + 60_000 })
      expect(logged.filter((l) => l.msg === 'catalog entry re-imported, or read later by another process, during the refresh; read again on the next pass').map((l) => l.opportunityId).sort()).toEqual(
        [directId, swapId].sort(),
      )
      // The next pass reads the new listings.
      expect(await refreshCatalog({ store, ecosystems: server, clock, logger })).toEqual({ refreshed: 2, failed: 0 })
      expect(await stored(directId!)).toMatchObject({ vaultAddress: VAULT_B, totalAssets: '5000000' })
    })

    test('a re-import while the chain is down keeps the facts, prices them at the new file, and says they were kept', async () => {
      await importCatalog({ store, ecosystems: ecosystems(), clock }, catalog())
      const before = await stored(directId!)
      rpc.down = true
      const again = await importCatalog({ store, ecosystems: ecosystems(), clock }, catalog({ price: 2.5 }))
      expect(again.opportunities.map((o) => [o.result, o.chainFacts])).toEqual([
        ['updated', 'kept'],
        ['updated', 'kept'],
      ])
      expect(again.opportunities[0]!.note).toBe('the RPC for EVM chain 31337 did not answer; try again later; the last facts read stay until the server reads the chain on its next refresh')
      expect(await stored(directId!)).toEqual({ ...before, tvl: 2.5 })
      expect((await stored(swapId!)).tvl).toBe(12.5)
      // The file must agree with the facts it keeps, as with facts read.
      const wrong = catalog({ price: 2.5 })
      wrong.opportunities[0]!.baseToken.decimals = 18
      const disagrees = await importCatalog({ store, ecosystems: ecosystems(), clock }, wrong).catch((e: CatalogError) => e)
      expect(disagrees).toBeInstanceOf(CatalogError)
      expect((disagrees as CatalogError).problems).toEqual([`opportunities[0] (${directId}): baseToken.decimals: the file says 18, the chain says 6`])
      rpc.down = false
    })

    test('a re-import from a process with no RPC for the chain keeps the facts too, rather than refusing the modes it cannot check', async () => {
      await importCatalog({ store, ecosystems: ecosystems(), clock }, catalog())
      const before = await stored(directId!)
      const unconfigured = createRegistry({ evm: async () => ({ plugin: evm, client: evm.connect({}) }) })
      const again = await importCatalog({ store, ecosystems: unconfigured, clock }, catalog({ price: 3 }))
      expect(again.opportunities.map((o) => [o.result, o.chainFacts])).toEqual([
        ['updated', 'kept'],
        ['updated', 'kept'],
      ])
      expect(await stored(directId!)).toEqual({ ...before, tvl: 3 })
    })

    test('while the chain is down, a re-import may not move a listed opportunity to another vault; a delisted one it may', async () => {
      await importCatalog({ store, ecosystems: ecosystems(), clock }, catalog())
      const before = [await stored(directId!), await stored(swapId!)]
      rpc.down = true
      const refused = await importCatalog({ store, ecosystems: ecosystems(), clock }, catalog({ swap: true })).catch((e: CatalogError) => e)
      expect(refused).toBeInstanceOf(CatalogError)
      expect((refused as CatalogError).problems).toEqual(
        [directId, swapId].map(
          (id, i) =>
            `opportunities[${i}] (${id}): vaultAddress: moves a listed opportunity to a vault whose chain did not answer (the RPC for EVM chain 31337 did ` +
            'not answer; try again later); it would leave the API until that vault is read. Check the value, or import where that chain answers',
        ),
      )
      // Nothing written: both stay listed on their vaults.
      expect([await stored(directId!), await stored(swapId!)]).toEqual(before)
      // Delisted, neither is on the API: another vault under its id waits for its first read.
      for (const id of [directId!, swapId!]) await store.setOpportunityDelisted(id, true, clock.now())
      const moved = await importCatalog({ store, ecosystems: ecosystems(), clock }, catalog({ swap: true }))
      expect(moved.opportunities.map((o) => [o.chainFacts, o.delisted])).toEqual([
        ['pending', true],
        ['pending', true],
      ])
      expect(moved.opportunities[0]!.note).toBe('the RPC for EVM chain 31337 did not answer; try again later; the server fills the chain facts in on its next refresh')
      rpc.down = false
      for (const id of [directId!, swapId!]) await store.setOpportunityDelisted(id, false, clock.now())
    })
  })
}

reimportTests('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'earn-reimport-'))
  return { store: createStore({ engine: 'sqlite', path: join(dir, 'earn.sqlite') }), cleanup: async () => rmSync(dir, { recursive: true, force: true }) }
})
if (await postgresAvailable()) {
  reimportTests('postgres', async () => {
    const { schema, drop } = await freshSchema()
    return { store: createStore({ engine: 'postgres', url: DATABASE_URL, schema }), cleanup: drop }
  })
} else describe.skip('re-import and refresh: postgres (PostgreSQL not reachable)', () => {})
