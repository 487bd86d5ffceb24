/**
 * The catalog file: validated whole (shape, ecosystem, chain, every address), problems named by entry and field;
 * imported by id (a re-import updates); chain facts read at import where the chain answers, otherwise filled in by
 * the refresher, which keeps the last facts when the chain fails.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CatalogError, ConfigError, createRegistry, createStore, importCatalog, manualClock, parseConfig, refreshCatalog, startCatalogRefresher } from '@earn/core'
import { loadEcosystems } from '@earn/server/ecosystems'
import { connect, evm, evmClientFromPublicClients } from '@earn/plugin-evm'
import { solana } from '@earn/plugin-solana'
import { createPublicClient, http } from 'viem'
import { closedPortUrl, deployVault, mintToken, sendUnsigned } from '../chains/evm.ts'
import { localCatalog, startLocalChain, type LocalChain } from '../actions/localChain.ts'
import { createHarness, type Harness, type Json } from '../harness.ts'
import { fundedMember } from '../actions/members.ts'

// Chains and server processes start here; bun 1.4.5 does not apply bunfig's [test] timeout, so set it per file.
setDefaultTimeout(60_000)

let chain: LocalChain
let h: Harness
const clock = manualClock(Date.UTC(2026, 5, 1))
const logged: Json[] = []
const logger = { info: (f: Json) => logged.push({ level: 'info', ...f }), error: (f: Json) => logged.push({ level: 'error', ...f }) }

beforeAll(async () => {
  chain = await startLocalChain()
  h = await createHarness({ clock, clients: { evm: chain.evmClient() } })
})
afterAll(async () => {
  await h.close()
  await chain.anvil.stop()
})

const deps = () => ({ store: h.store, ecosystems: h.deps.ecosystems, clock, logger })
const entry = (over: Json = {}) => ({ ...structuredClone(localCatalog().opportunities[0]), ...over }) as Json

async function problems(file: unknown): Promise<string[]> {
  try {
    await importCatalog(deps(), file)
  } catch (e) {
    expect(e).toBeInstanceOf(CatalogError)
    return (e as CatalogError).problems
  }
  throw new Error('the catalog was accepted')
}

describe('catalog validation', () => {
  test('shape problems name the entry and the field, all at once', async () => {
    const bad = entry({ id: 'not-a-uuid', estimatedApr: 'high' })
    delete bad.name
    const found = await problems({ opportunities: [entry(), bad, { ...entry({ id: crypto.randomUUID() }), extra: 1 }] })
    expect(found).toContain('opportunities[1] (not-a-uuid): id: Expected string to match \'^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$\'')
    // One line for the missing field, not one for missing and another for not a string.
    expect(found.filter((p) => p.startsWith('opportunities[1] (not-a-uuid): name:'))).toEqual(['opportunities[1] (not-a-uuid): name: Expected required property'])
    expect(found.some((p) => p.startsWith('opportunities[1] (not-a-uuid): estimatedApr:'))).toBe(true)
    expect(found.some((p) => /^opportunities\[2\] \([^)]+\): extra: /.test(p))).toBe(true)
    expect(await problems({ opportunities: 'none' })).toEqual(['opportunities: Expected array'])
    // With an entry's shape wrong, the others' addresses are looked at too: every problem of form at once.
    const nameless = entry({ id: crypto.randomUUID() })
    delete nameless.name
    const both = await problems({ opportunities: [nameless, entry({ id: crypto.randomUUID(), vaultAddress: '0x12' })] })
    expect(both.map((p) => p.replace(/ \([^)]+\)/, '').split(': ').slice(0, 2).join(': '))).toEqual(['opportunities[0]: name', 'opportunities[1]: vaultAddress'])
    // An entry of the wrong shape still holds its id against the others'; a field beside the list hides no entry's.
    const twice = await problems({ opportunities: [{ ...nameless }, entry({ id: nameless.id })] })
    expect(twice.map((p) => p.replace(/ \([^)]+\)/, '').split(': ').slice(0, 2).join(': '))).toEqual(['opportunities[0]: name', 'opportunities[1]: id'])
    const beside = await problems({ opportunities: [entry({ id: crypto.randomUUID(), vaultAddress: '0x12' })], extra: 1 })
    expect(beside.map((p) => p.replace(/ \([^)]+\)/, '').split(': ').slice(0, 2).join(': '))).toEqual(['extra: Unexpected property', 'opportunities[0]: vaultAddress'])
    const early = await problems({ opportunities: [entry({ eventsFromBlock: -1 }), entry({ id: crypto.randomUUID(), eventsFromBlock: 1.5 })] })
    expect(early.map((p) => p.replace(/ \([^)]+\)/, ''))).toEqual([
      expect.stringMatching(/^opportunities\[0\]: eventsFromBlock: Expected integer to be greater or equal to 0/),
      expect.stringMatching(/^opportunities\[1\]: eventsFromBlock: Expected integer/),
    ])
    const blank = await problems({ opportunities: [entry({ name: '   ', protocol: ' ', eventsFromBlock: 1e300 })] })
    expect(blank.map((p) => p.replace(/ \([^)]+\)/, '').split(': ').slice(0, 2).join(': '))).toEqual([
      'opportunities[0]: name',
      'opportunities[0]: protocol',
      'opportunities[0]: eventsFromBlock',
    ])
    // A price past 1e15 USD could make a uint256 of assets worth more than a number holds.
    const dear = await problems({ opportunities: [entry({ baseTokenPriceUsd: 1e16 })] })
    expect(dear).toEqual([expect.stringMatching(/^opportunities\[0\] \([^)]+\): baseTokenPriceUsd: Expected number to be less or equal to 1000000000000000/)])
  })

  test('a file with more than 50 problems lists the first 50 and says there are more', async () => {
    const caught = async (file: unknown) => {
      const e = await importCatalog(deps(), file).then(() => undefined, (error: unknown) => error)
      expect(e).toBeInstanceOf(CatalogError)
      return e as CatalogError
    }
    // Shape problems are not counted past the first 50.
    const unpriced = await caught({ opportunities: Array.from({ length: 100 }, () => entry({ id: crypto.randomUUID(), estimatedApr: 'high' })) })
    expect(unpriced.problems).toHaveLength(50)
    expect(unpriced.message).toStartWith('the catalog has more than 50 problems; the first 50:')
    // The ecosystem's problems are all counted.
    const elsewhere = await caught({ opportunities: Array.from({ length: 60 }, () => entry({ id: crypto.randomUUID(), vaultAddress: '0x1234' })) })
    expect(elsewhere.problems).toHaveLength(50)
    expect(elsewhere.message).toStartWith('the catalog has 60 problems; the first 50:')
    // So are the chain's: 60 entries whose vault is a token.
    const tokens = await caught({ opportunities: Array.from({ length: 60 }, () => entry({ id: crypto.randomUUID(), vaultAddress: chain.token })) })
    expect(tokens.problems).toHaveLength(50)
    expect(tokens.message).toStartWith('the catalog has 60 problems; the first 50:')
    const one = await caught({ opportunities: [entry({ vaultAddress: '0x1234' })] })
    expect(one.message).toStartWith('the catalog has 1 problem:')
  })

  test('what only the ecosystem knows: loaded ecosystem, its chain ids, every address', async () => {
    const found = await problems({
      opportunities: [
        entry({ ecosystem: 'cosmos' }),
        entry({ id: crypto.randomUUID(), chainId: 'mainnet' }),
        entry({ id: crypto.randomUUID(), vaultAddress: '0x1234', depositTokens: [{ address: 'usdc', symbol: 'USDC', decimals: 6 }, { address: chain.token, symbol: 'tUSD', decimals: 6, chainId: '1' }] }),
      ],
    })
    expect(found[0]).toMatch(/^opportunities\[0\] \(36c2d744-[^)]+\): ecosystem: "cosmos" is not an ecosystem this deployment loads/)
    expect(found).toContain(`opportunities[1] (${(found[1]!.match(/\(([^)]+)\)/) ?? [])[1]}): chainId: "mainnet" is not a chain id of evm`)
    expect(found.filter((p) => p.startsWith('opportunities[2]')).map((p) => p.split(': ')[1])).toEqual([
      'vaultAddress',
      'depositTokens[0].address',
      'depositTokens[1].chainId',
    ])
  })

  test("an entry on a chain id another loaded ecosystem also owns (and is asked first for) is refused: its verify and streams would go there", async () => {
    // A fourth chain's plugin that claims EVM's ids, as no plugin here does: the Solana plugin with one more id.
    const greedy = { ...solana, ownsChain: (id: string) => id === '31337' || solana.ownsChain(id) }
    const ecosystems = createRegistry({ evm: async () => ({ plugin: evm, client: chain.evmClient() }), solana: async () => ({ plugin: greedy, client: solana.connect({}) }) })
    let refused: unknown
    await importCatalog({ ...deps(), ecosystems }, { opportunities: [entry({ ecosystem: 'solana' })] }).catch((e: unknown) => (refused = e))
    expect(refused).toBeInstanceOf(CatalogError)
    expect((refused as CatalogError).problems.filter((p) => p.includes(': chainId: '))).toEqual([
      expect.stringMatching(/^opportunities\[0\] \([^)]+\): chainId: "31337" is a chain id of evm too, which is asked first for it; two ecosystems must not own one chain id$/),
    ])
    // The same entry as EVM's is fine.
    expect((await problems({ opportunities: [entry({ eventsFromBlock: -1 })] })).some((p) => p.includes('chainId'))).toBe(false)
  })

  test('names and symbols are one line: a line break or an escape sequence, which would forge a row in a listing, is refused', async () => {
    const forged = entry({ name: 'A\nid=fake name=evil', protocol: 'ERC-4626\u001b[31m' })
    forged.depositTokens[0].symbol = 'tUSD\u0085'
    const found = await problems({ opportunities: [forged] })
    expect(found.map((p) => p.split(': ')[1])).toEqual(['name', 'protocol', 'depositTokens[0].symbol'])
    expect(found[0]).toEndWith('has a control character (a line break, an escape); it must be one line of text')
    // A chain id is quoted as JSON in its problem: each problem stays one line.
    const [line] = await problems({ opportunities: [entry({ chainId: '31337\nopportunities[9]: forged' })] })
    expect(line).toEndWith('chainId: "31337\\u000aopportunities[9]: forged" is not a chain id of evm')
  })

  test('an entry offering what no deposit could build is refused: a token no enabled mode takes, no mode at all', async () => {
    const tusd = { address: chain.token, symbol: 'tUSD', decimals: 6 }
    const teur = { address: chain.otherToken, symbol: 'tEUR', decimals: 18 }
    const directOnly = entry({ depositTokens: [tusd, teur] })
    expect(await problems({ opportunities: [directOnly] })).toEqual([
      expect.stringMatching(new RegExp(`^opportunities\\[0\\] \\(${directOnly.id}\\): depositTokens\\[1\\]: no enabled mode takes tEUR: direct: a direct deposit takes only 0x`)),
    ])
    const closed = entry({ swapDirectEnabled: false, swapRouteEnabled: false })
    expect(await problems({ opportunities: [closed] })).toEqual([
      `opportunities[0] (${closed.id}): swapDirectEnabled, swapRouteEnabled: both false, so the entry takes no deposits; to close it, delist it (opportunity delist ID)`,
    ])
    expect(await h.store.getOpportunity(directOnly.id)).toBeUndefined()
    // The vault's own shares, which every deposit refuses, whatever the mode.
    const share = { address: entry().vaultAddress, symbol: 'vtUSD', decimals: 6 }
    const offersShare = entry({ depositTokens: [tusd, share], swapRouteEnabled: true })
    expect(await problems({ opportunities: [offersShare] })).toEqual([
      `opportunities[0] (${offersShare.id}): depositTokens[1]: vtUSD is the vault's receipt token, which no deposit takes; list the tokens a wallet deposits`,
    ])
    // Swap mode takes tEUR where the chain has a router (this deployment's EVM_SWAP_ROUTERS): only the decimals
    // planted here are wrong, and nothing is written.
    const swap = entry({ depositTokens: [tusd, teur], swapRouteEnabled: true, baseToken: { symbol: 'tUSD', decimals: 7 } })
    expect(await problems({ opportunities: [swap] })).toEqual([`opportunities[0] (${swap.id}): baseToken.decimals: the file says 7, the chain says 6`])
  })

  test("a deposit token besides the vault's asset is read on chain: other decimals, or no token at all, are refused", async () => {
    const tusd = { address: chain.token, symbol: 'tUSD', decimals: 6 }
    const sixDecimalEuro = entry({ depositTokens: [tusd, { address: chain.otherToken, symbol: 'tEUR', decimals: 6 }], swapRouteEnabled: true })
    expect(await problems({ opportunities: [sixDecimalEuro] })).toEqual([
      `opportunities[0] (${sixDecimalEuro.id}): depositTokens[1].decimals: the file says 6 for ${chain.otherToken.toLowerCase()}, the chain says 18`,
    ])
    // An address with no code: no decimals() answers there.
    const nowhere = '0x' + '5e'.repeat(20)
    const noToken = entry({ depositTokens: [tusd, { address: nowhere, symbol: 'NONE', decimals: 18 }], swapRouteEnabled: true })
    expect(await problems({ opportunities: [noToken] })).toEqual([
      `opportunities[0] (${noToken.id}): depositTokens[1].address: ${nowhere} answers no decimals() on chain ${chain.anvil.chainId}, so it is no token there`,
    ])
    expect(await h.store.getOpportunity(noToken.id)).toBeUndefined()
    // With the chain's decimals the entry imports (into a store of its own: the suite's counts its entries), and its
    // facts keep what the chain said.
    const right = entry({ id: crypto.randomUUID(), depositTokens: [tusd, { address: chain.otherToken, symbol: 'tEUR', decimals: 18 }], swapRouteEnabled: true })
    const own = createStore({ engine: 'sqlite', path: ':memory:' })
    await own.migrate(clock.now())
    await importCatalog({ ...deps(), store: own }, { opportunities: [right] })
    const stored = await own.getOpportunity(right.id)
    await own.close()
    expect(JSON.parse(stored!.chainFacts!).tokenDecimals).toEqual({ [chain.token.toLowerCase()]: 6, [chain.otherToken.toLowerCase()]: 18 })
  })

  test("a deposit token listed twice (in any spelling), and the chain's own coin with other decimals, are refused", async () => {
    const tusd = { address: chain.token.toLowerCase(), symbol: 'tUSD', decimals: 6 }
    const twice = entry({ depositTokens: [tusd, { ...tusd, address: chain.token }] })
    expect(await problems({ opportunities: [twice] })).toEqual([`opportunities[0] (${twice.id}): depositTokens[1].address: repeats depositTokens[0]`])
    const coin = entry({ depositTokens: [tusd, { address: 'native', symbol: 'ETH', decimals: 6 }] })
    expect(await problems({ opportunities: [coin] })).toEqual([
      `opportunities[0] (${coin.id}): depositTokens[1].decimals: the chain's own coin has 18 decimals on evm, the file says 6`,
    ])
  })

  test('a repeated id, and a file that disagrees with the chain, are refused; nothing is written', async () => {
    const e = entry()
    expect(await problems({ opportunities: [e, e] })).toEqual([`opportunities[1] (${e.id}): id: repeats opportunities[0]`])
    const wrongAsset = entry({ baseToken: { symbol: 'tUSD', address: chain.vault, decimals: 18 } })
    const found = await problems({ opportunities: [wrongAsset] })
    expect(found).toHaveLength(2)
    expect(found[0]).toContain('baseToken.address: the file says')
    expect(found[1]).toContain('baseToken.decimals: the file says 18, the chain says 6')
    expect(await h.store.getOpportunity(e.id)).toBeUndefined()
    // The chain answers that the token is no vault: refused, not stored as pending for a refresh that cannot help.
    const notAVault = entry({ vaultAddress: chain.token })
    expect(await problems({ opportunities: [notAVault] })).toEqual([expect.stringMatching(new RegExp(`^opportunities\\[0\\] \\(${e.id}\\): vaultAddress: .*not an ERC-4626 vault`, 'i'))])
    expect(await h.store.getOpportunity(e.id)).toBeUndefined()
  })
})

describe('import and refresh', () => {
  test('import reads the vaults from the chain; a re-import updates by id', async () => {
    const first = await importCatalog(deps(), localCatalog())
    expect(first.opportunities.map((o) => [o.result, o.chainFacts])).toEqual([['created', 'read'], ['created', 'read']])
    const got = await h.get(`/v2/opportunities/${chain.directId}`)
    expect(got.status).toBe(200)
    expect(got.body.opportunity).toMatchObject({ name: 'Test USD Vault', totalAssets: '0', tvl: 0 })

    const renamed = localCatalog()
    renamed.opportunities[0]!.name = 'Renamed vault'
    const second = await importCatalog(deps(), renamed)
    expect(second.opportunities.map((o) => o.result)).toEqual(['updated', 'updated'])
    expect((await h.get(`/v2/opportunities/${chain.directId}`)).body.opportunity.name).toBe('Renamed vault')
  })

  test('the refresher reads total assets and TVL again; the list follows', async () => {
    const member = await fundedMember(h, chain, 1_500n * 10n ** 6n)
    const built = await h.post(`/v2/actions/deposit/${chain.directId}`, { userAddress: member.address, tokenIn: chain.token, amount: '1500000000', distributorId: h.distributorId })
    expect(built.status).toBe(200)
    for (const t of built.body.transactions) expect((await sendUnsigned(chain.anvil, member, t.transaction)).status).toBe('success')
    expect((await h.get(`/v2/opportunities/${chain.directId}`)).body.opportunity.totalAssets).toBe('0') // not on the request path

    clock.advance(60_000)
    expect(await refreshCatalog(deps())).toEqual({ refreshed: 2, failed: 0 })
    const { opportunity } = (await h.get(`/v2/opportunities/${chain.directId}`)).body
    expect(opportunity).toMatchObject({ totalAssets: '1500000000', tvl: 1500, refreshedAt: new Date(clock.now()).toISOString() })
    expect((await h.get('/v2/opportunities/?tvlGreaterThan=1000')).body.opportunities.map((o: Json) => o.id)).toEqual([chain.directId])
  })

  test('a refresh whose chain fails keeps the last facts, notes and logs the failure', async () => {
    const down = createPublicClient({ transport: http(await closedPortUrl(), { retryCount: 0 }) })
    const broken = await createHarness({ store: h.store, clock, clients: { evm: evmClientFromPublicClients({ [chain.anvil.chainId]: down }) } })
    const before = (await h.get(`/v2/opportunities/${chain.directId}`)).body.opportunity
    logged.length = 0
    clock.advance(60_000)
    expect(await refreshCatalog({ ...deps(), ecosystems: broken.deps.ecosystems })).toEqual({ refreshed: 0, failed: 2 })
    expect((await h.get(`/v2/opportunities/${chain.directId}`)).body.opportunity).toEqual(before)
    expect((await h.store.getOpportunity(chain.directId))?.refreshError).toMatch(/did not answer/)
    expect(logged.filter((l) => l.level === 'error').map((l) => l.opportunityId).sort()).toEqual([chain.directId, chain.swapId].sort())
    expect(JSON.stringify(logged)).not.toContain('127.0.0.1')
  })

  test('a vault whose code is gone keeps its listing (a refresh keeps the last facts), but no deposit into it is built: it would land and deposit nothing', async () => {
    const vault = await deployVault(chain.anvil, chain.token)
    const id = crypto.randomUUID()
    await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock }, { opportunities: [entry({ id, vaultAddress: vault })] })
    const code = await chain.anvil.publicClient.getCode({ address: vault })
    const member = await fundedMember(h, chain, 10_000_000n)
    const deposit = () => h.post(`/v2/actions/deposit/${id}`, { userAddress: member.address, tokenIn: chain.token, amount: '1000000', distributorId: h.distributorId })
    try {
      await chain.anvil.testClient.setCode({ address: vault, bytecode: '0x' })
      clock.advance(60_000)
      await refreshCatalog(deps())
      expect((await h.get(`/v2/opportunities/${id}`)).status).toBe(200)
      const refused = await deposit()
      expect([refused.status, refused.body.context]).toEqual([503, { chainId: chain.anvil.chainId, vaultAddress: 'answers no ERC-4626 view now' }])
      // A contract there that lacks the views reverts without a reason: built for as before (not every vault has them).
      await chain.anvil.testClient.setCode({ address: vault, bytecode: '0x60006000fd' })
      expect((await deposit()).status).toBe(200)
    } finally {
      await chain.anvil.testClient.setCode({ address: vault, bytecode: code! })
    }
    expect((await deposit()).status).toBe(200)
  })

  test('a plugin that refuses its variables fails the pass, and no entry carries that as its refresh error', async () => {
    // As a server's refresher meets it: its first pass starts before the plugins are loaded (and refused).
    const misconfigured = loadEcosystems(parseConfig({ EVM_RPC_URLS: `${chain.anvil.chainId}=${chain.anvil.url}`, EVM_RPC_TIMEOUT_MS: 'abc' }))
    const before = await h.store.getOpportunity(chain.directId)
    const e = await refreshCatalog({ store: h.store, ecosystems: misconfigured, clock, logger }).catch((x: unknown) => x)
    expect(e).toBeInstanceOf(ConfigError)
    expect(await h.store.getOpportunity(chain.directId)).toEqual(before)
  })

  test("a chain whose RPC never answers holds up only its own vaults' refresh", async () => {
    // Accepts every request and never answers.
    const hung = Bun.serve({ port: 0, hostname: '127.0.0.1', idleTimeout: 0, fetch: () => new Promise<Response>(() => {}) })
    const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${chain.anvil.url},8453=http://127.0.0.1:${hung.port}/`, EVM_RPC_TIMEOUT_MS: '60000' })
    const two = await createHarness({ clock, clients: { evm: client } })
    let refresh: Promise<unknown> | undefined
    try {
      // Two groups' worth of entries on the hung chain, stored before the anvil one (a pass reads in that order).
      for (let i = 0; i < 16; i++) {
        const id = crypto.randomUUID()
        const vaultAddress = `0x${String(i + 1).padStart(40, '0')}`
        const listing = entry({ id, chainId: '8453', vaultAddress })
        const row = { id, ecosystem: 'evm', chainId: '8453', vaultAddress, listing: JSON.stringify(listing), chainFacts: null, tvl: 0, refreshedAt: null, refreshError: null, delistedAt: null, createdAt: 1, updatedAt: 1 }
        await two.store.upsertOpportunity(row, [])
      }
      const vault = await deployVault(chain.anvil, chain.token)
      const id = crypto.randomUUID()
      await importCatalog({ store: two.store, ecosystems: two.deps.ecosystems, clock }, { opportunities: [entry({ id, vaultAddress: vault })] })
      await mintToken(chain.anvil, chain.token, vault, 7n * 10n ** 6n)
      refresh = refreshCatalog({ store: two.store, ecosystems: two.deps.ecosystems, clock, logger })
      let tvl = 0
      for (let i = 0; i < 100 && tvl === 0; i++) {
        await Bun.sleep(50)
        tvl = (await two.store.getOpportunity(id))!.tvl
      }
      expect(tvl).toBe(7)
      expect(hung.pendingRequests).toBeGreaterThan(0)
    } finally {
      // Closing the hung server's connections fails its reads, and the pass ends.
      await hung.stop(true)
      await refresh
      await two.close()
    }
  })

  test("the schedule reads a healthy chain again each interval while a hung chain's read is still in flight", async () => {
    const hung = Bun.serve({ port: 0, hostname: '127.0.0.1', idleTimeout: 0, fetch: () => new Promise<Response>(() => {}) })
    const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${chain.anvil.url},8453=http://127.0.0.1:${hung.port}/`, EVM_RPC_TIMEOUT_MS: '60000' })
    const two = await createHarness({ clock, clients: { evm: client } })
    let refresher: ReturnType<typeof startCatalogRefresher> | undefined
    try {
      const id = crypto.randomUUID()
      const vaultAddress = `0x${'81'.repeat(20)}`
      const row = { id, ecosystem: 'evm', chainId: '8453', vaultAddress, listing: JSON.stringify(entry({ id, chainId: '8453', vaultAddress })), chainFacts: null, tvl: 0, refreshedAt: null, refreshError: null, delistedAt: null, createdAt: 1, updatedAt: 1 }
      await two.store.upsertOpportunity(row, [])
      const vault = await deployVault(chain.anvil, chain.token)
      const healthy = crypto.randomUUID()
      await importCatalog({ store: two.store, ecosystems: two.deps.ecosystems, clock }, { opportunities: [entry({ id: healthy, vaultAddress: vault })] })
      refresher = startCatalogRefresher({ store: two.store, ecosystems: two.deps.ecosystems, clock, logger }, 50)
      const tvlReaches = async (tvl: number) => {
        let seen = -1
        for (let i = 0; i < 100 && seen !== tvl; i++) {
          await Bun.sleep(50)
          seen = (await two.store.getOpportunity(healthy))!.tvl
        }
        return seen
      }
      // Each TVL is a later pass's read: the first pass has not ended (its hung chain is still being read).
      await mintToken(chain.anvil, chain.token, vault, 7n * 10n ** 6n)
      expect(await tvlReaches(7)).toBe(7)
      await mintToken(chain.anvil, chain.token, vault, 7n * 10n ** 6n)
      expect(await tvlReaches(14)).toBe(14)
      expect(hung.pendingRequests).toBeGreaterThan(0)
    } finally {
      // Closing the hung server's connections fails its reads, and the refresher can stop.
      await hung.stop(true)
      await refresher?.stop()
      await two.close()
    }
  })

  test('a stop while a pass reads the catalog waits for that read: nothing fails on the store closed after it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'earn-refresh-'))
    const store = createStore({ engine: 'sqlite', path: join(dir, 'earn.sqlite') })
    try {
      await store.migrate(clock.now())
      // Three pages of the catalog's read, on a chain this process has no RPC for.
      const rows = Array.from({ length: 2_500 }, () => {
        const id = crypto.randomUUID()
        const listing = entry({ id, chainId: '8453' })
        return { row: { id, ecosystem: 'evm', chainId: '8453', vaultAddress: String(listing.vaultAddress), listing: JSON.stringify(listing), chainFacts: null, tvl: 0, refreshedAt: null, refreshError: null, delistedAt: null, createdAt: 1, updatedAt: 1 }, depositTokens: [] }
      })
      await store.upsertOpportunities(rows)
      const seen: Json[] = []
      const capture = { info: (f: Json) => seen.push(f), error: (f: Json) => seen.push({ level: 'error', ...f }) }
      const refresher = startCatalogRefresher({ store, ecosystems: h.deps.ecosystems, clock, logger: capture }, 60_000)
      await refresher.stop()
      await store.close()
      await Bun.sleep(100)
      expect(seen).toEqual([])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test("a vault whose asset changed keeps its last facts, the change noted: the entry's price is the old asset's", async () => {
    const other = await createHarness({ clock, clients: { evm: chain.evmClient() } })
    try {
      const vault = await deployVault(chain.anvil, chain.token)
      const id = crypto.randomUUID()
      await importCatalog({ store: other.store, ecosystems: other.deps.ecosystems, clock }, { opportunities: [entry({ id, vaultAddress: vault })] })
      const before = (await other.get(`/v2/opportunities/${id}`)).body.opportunity
      // Upgraded in place: the same address now answers another asset (tEUR, 18 decimals), holding 5 of it.
      const euroVault = await deployVault(chain.anvil, chain.otherToken)
      await chain.anvil.testClient.setCode({ address: vault, bytecode: (await chain.anvil.publicClient.getCode({ address: euroVault }))! })
      await mintToken(chain.anvil, chain.otherToken, vault, 5n * 10n ** 18n)
      logged.length = 0
      clock.advance(60_000)
      expect(await refreshCatalog({ store: other.store, ecosystems: other.deps.ecosystems, clock, logger })).toEqual({ refreshed: 0, failed: 1 })
      expect((await other.get(`/v2/opportunities/${id}`)).body.opportunity).toEqual(before)
      expect((await other.store.getOpportunity(id))?.refreshError).toBe(
        `the vault's asset is now ${chain.otherToken.toLowerCase()}, not ${chain.token.toLowerCase()} as the catalog entry prices it; import the entry again with the new asset and its price`,
      )
    } finally {
      await other.close()
    }
  })

  test('an entry imported while its chain is down is pending (not served) until the refresher reads it', async () => {
    const down = createPublicClient({ transport: http(await closedPortUrl(), { retryCount: 0 }) })
    const offline = await createHarness({ clock, clients: { evm: evmClientFromPublicClients({ [chain.anvil.chainId]: down }) } })
    const imported = await importCatalog({ store: offline.store, ecosystems: offline.deps.ecosystems, clock }, localCatalog())
    expect(imported.opportunities.map((o) => o.chainFacts)).toEqual(['pending', 'pending'])
    expect(imported.opportunities[0]!.note).toContain('the server fills the chain facts in on its next refresh')
    expect((await offline.get(`/v2/opportunities/${chain.directId}`)).status).toBe(404)
    expect((await offline.get('/v2/opportunities/')).body.total).toBe(0)

    // The same store, now served by a process that reaches the chain: its refresher fills the entries in.
    const online = await createHarness({ store: offline.store, clock, clients: { evm: chain.evmClient() } })
    const refresher = startCatalogRefresher({ store: online.store, ecosystems: online.deps.ecosystems, clock, logger }, 60_000)
    const first = await refresher.refreshNow()
    await refresher.stop()
    expect(first.failed).toBe(0)
    expect((await online.get('/v2/opportunities/')).body.total).toBe(2)
    await offline.close()
  })

  test("a chain that answers none of a group's reads, nor then its readiness probe, is asked no more: its other entries are pending for the same reason", async () => {
    // An RPC that fails every request (a 503), counting them.
    let asked = 0
    const failing = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: () => {
        asked++
        return new Response('unavailable', { status: 503 })
      },
    })
    const down = createPublicClient({ transport: http(`http://127.0.0.1:${failing.port}`, { retryCount: 0 }) })
    const offline = await createHarness({ clock, clients: { evm: evmClientFromPublicClients({ [chain.anvil.chainId]: down }) } })
    const offlineDeps = { store: offline.store, ecosystems: offline.deps.ecosystems, clock }
    const copies = (n: number) => ({ opportunities: Array.from({ length: n }, () => entry({ id: crypto.randomUUID() })) })
    try {
      // An EVM chain's vaults are read 64 at a time (core's chain.ts FOLDED_VAULTS_AT_ONCE).
      const first = await importCatalog(offlineDeps, copies(65))
      const askedForFirst = asked
      expect(askedForFirst).toBeGreaterThan(0)
      asked = 0
      const more = await importCatalog(offlineDeps, copies(200))
      // The first 64 read, then the chain's readiness probe (as many requests as 65 took: the 65th was not read
      // either), the other 136 not.
      expect(asked).toBe(askedForFirst)
      expect(more.opportunities.map((o) => o.chainFacts)).toEqual(Array(200).fill('pending'))
      expect(new Set(more.opportunities.map((o) => o.note))).toEqual(new Set([first.opportunities[0]!.note]))
    } finally {
      await offline.close()
      await failing.stop(true)
    }
  })

  test("vaults that each fail for their own reasons (a call too heavy for the node) leave the chain asked: the file's other entries are read", async () => {
    const heavy = Array.from({ length: 8 }, (_, i) => `0x${(0xbeef00 + i).toString(16).padStart(40, '0')}`)
    // geth's answer to a call past its execution timeout, for any request naming one of them; the rest reach anvil.
    const node = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(req) {
        const text = await req.text()
        if (heavy.some((a) => text.toLowerCase().includes(a.slice(2)))) {
          const body = JSON.parse(text) as { id: number } | { id: number }[]
          const refuse = (m: { id: number }) => ({ jsonrpc: '2.0', id: m.id, error: { code: -32000, message: 'execution aborted (timeout = 5s)' } })
          return Response.json(Array.isArray(body) ? body.map(refuse) : refuse(body))
        }
        return fetch(chain.anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text })
      },
    })
    const client = createPublicClient({ transport: http(`http://127.0.0.1:${node.port}`, { retryCount: 0 }) })
    const h = await createHarness({ clock, clients: { evm: evmClientFromPublicClients({ [chain.anvil.chainId]: client }) } })
    try {
      const good = [entry({ id: crypto.randomUUID() }), entry({ id: crypto.randomUUID() })]
      const file = { opportunities: [...heavy.map((vaultAddress) => entry({ id: crypto.randomUUID(), vaultAddress })), ...good] }
      const imported = await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock }, file)
      expect(imported.opportunities.map((o) => o.chainFacts)).toEqual([...Array(8).fill('pending'), 'read', 'read'])
    } finally {
      await h.close()
      await node.stop(true)
    }
  })

  test('an entry imported pending with decimals the chain contradicts is served with the chain\'s once refreshed', async () => {
    const down = createPublicClient({ transport: http(await closedPortUrl(), { retryCount: 0 }) })
    const offline = await createHarness({ clock, clients: { evm: evmClientFromPublicClients({ [chain.anvil.chainId]: down }) } })
    // tUSD has 6 decimals on chain; where the chain answers, this file is refused (above).
    const wrong = entry()
    wrong.depositTokens = [{ ...wrong.depositTokens[0], decimals: 18 }]
    const imported = await importCatalog({ store: offline.store, ecosystems: offline.deps.ecosystems, clock }, { opportunities: [wrong] })
    expect(imported.opportunities.map((o) => o.chainFacts)).toEqual(['pending'])

    const online = await createHarness({ store: offline.store, clock, clients: { evm: chain.evmClient() } })
    logged.length = 0
    expect(await refreshCatalog({ store: online.store, ecosystems: online.deps.ecosystems, clock, logger })).toEqual({ refreshed: 1, failed: 0 })
    const { opportunity } = (await online.get(`/v2/opportunities/${chain.directId}`)).body
    expect(opportunity.baseToken.decimals).toBe(6)
    expect(opportunity.depositTokens[0]).toMatchObject({ symbol: 'tUSD', decimals: 6 })
    expect(logged).toContainEqual(expect.objectContaining({ level: 'error', msg: 'catalog entry disagrees with the chain', opportunityId: chain.directId }))
    await offline.close()
  })

  test('an entry imported pending is checked on its first read as an import would have: offering what no deposit builds, it stays off the API', async () => {
    const down = createPublicClient({ transport: http(await closedPortUrl(), { retryCount: 0 }) })
    const offline = await createHarness({ clock, clients: { evm: evmClientFromPublicClients({ [chain.anvil.chainId]: down }) } })
    const tusd = { address: chain.token, symbol: 'tUSD', decimals: 6 }
    const teur = { address: chain.otherToken, symbol: 'tEUR', decimals: 18 }
    const id = () => crypto.randomUUID()
    const teurDirect = entry({ id: id(), depositTokens: [teur] })
    const shares = entry({ id: id(), depositTokens: [tusd, { address: entry().vaultAddress, symbol: 'vtUSD', decimals: 6 }] })
    const fine = entry({ id: id() })
    // Neither mode needs no chain to be refused: at the import, chain or not.
    const closed = entry({ id: id(), swapDirectEnabled: false, swapRouteEnabled: false })
    const offlineDeps = { store: offline.store, ecosystems: offline.deps.ecosystems, clock }
    await expect(importCatalog(offlineDeps, { opportunities: [closed] })).rejects.toMatchObject({
      problems: [`opportunities[0] (${closed.id}): swapDirectEnabled, swapRouteEnabled: both false, so the entry takes no deposits; to close it, delist it (opportunity delist ID)`],
    })
    const imported = await importCatalog(offlineDeps, { opportunities: [teurDirect, shares, fine] })
    expect(imported.opportunities.map((o) => o.chainFacts)).toEqual(['pending', 'pending', 'pending'])

    const online = await createHarness({ store: offline.store, clock, clients: { evm: chain.evmClient() } })
    logged.length = 0
    expect(await refreshCatalog({ store: online.store, ecosystems: online.deps.ecosystems, clock, logger })).toMatchObject({ failed: 2 })
    expect((await online.get(`/v2/opportunities/${fine.id}`)).status).toBe(200)
    for (const [e, why] of [
      [teurDirect, /^depositTokens\[0\]: no enabled mode takes tEUR: direct: a direct deposit takes only 0x/],
      [shares, /^depositTokens\[1\]: vtUSD is the vault's receipt token, which no deposit takes/],
    ] as const) {
      expect((await online.get(`/v2/opportunities/${e.id}`)).status).toBe(404)
      const row = (await online.store.getOpportunity(e.id))!
      expect(row.chainFacts).toBeNull()
      expect(row.refreshError).toMatch(why)
      expect(row.refreshError).toEndWith('; import the entry again, corrected')
      expect(logged).toContainEqual(expect.objectContaining({ level: 'error', msg: 'catalog entry refused by its chain on its first read; kept off the API', opportunityId: e.id }))
    }
    // Listed once corrected.
    await importCatalog({ store: online.store, ecosystems: online.deps.ecosystems, clock }, { opportunities: [{ ...teurDirect, depositTokens: [tusd] }] })
    expect((await online.get(`/v2/opportunities/${teurDirect.id}`)).status).toBe(200)
    await offline.close()
  })

  test("a pending entry re-imported while a refresh first reads it: the refresh's facts, checked against the listing before, are not kept", async () => {
    const down = createPublicClient({ transport: http(await closedPortUrl(), { retryCount: 0 }) })
    const offline = await createHarness({ clock, clients: { evm: evmClientFromPublicClients({ [chain.anvil.chainId]: down }) } })
    const online = await createHarness({ store: offline.store, clock, clients: { evm: chain.evmClient() } })
    const id = crypto.randomUUID()
    const good = entry({ id })
    const bad = entry({ id, depositTokens: [good.depositTokens[0], { address: good.vaultAddress, symbol: 'vtUSD', decimals: 6 }] })
    const offlineDeps = { store: offline.store, ecosystems: offline.deps.ecosystems, clock }
    await importCatalog(offlineDeps, { opportunities: [good] })
    // The server's first read of the good listing commits between the import's checks of the bad one and its write.
    const store = offline.store
    const raced = new Proxy(store, {
      get(target, key, receiver) {
        if (key !== 'upsertOpportunities') return Reflect.get(target, key, receiver)
        return async (...args: Parameters<typeof store.upsertOpportunities>) => {
          expect(await refreshCatalog({ store, ecosystems: online.deps.ecosystems, clock, logger })).toEqual({ refreshed: 1, failed: 0 })
          return store.upsertOpportunities(...args)
        }
      },
    })
    const imported = await importCatalog({ ...offlineDeps, store: raced }, { opportunities: [bad] })
    expect(imported.opportunities.map((o) => o.chainFacts)).toEqual(['pending'])
    expect((await online.get(`/v2/opportunities/${id}`)).status).toBe(404)
    // Its next first read checks the listing it now holds.
    expect(await refreshCatalog({ store, ecosystems: online.deps.ecosystems, clock, logger })).toEqual({ refreshed: 0, failed: 1 })
    expect((await online.get(`/v2/opportunities/${id}`)).status).toBe(404)
    expect((await store.getOpportunity(id))!.refreshError).toMatch(/^depositTokens\[1\]: vtUSD is the vault's receipt token/)
    await offline.close()
  })

  test('a catalog of many vaults reads at import through the production client, where viem knows no Multicall3 there', async () => {
    // Chain 31337 has no Multicall3 in viem's definitions, so viem sends its code with each batch (deployless),
    // and nodes cap that as init code: 60 entries in one batch were refused ("max initcode size exceeded").
    const production = await createHarness({ clock, clients: { evm: connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${chain.anvil.url}` }) } })
    const many = Array.from({ length: 120 }, () => entry({ id: crypto.randomUUID() }))
    const imported = await importCatalog({ store: production.store, ecosystems: production.deps.ecosystems, clock }, { opportunities: many })
    expect(imported.opportunities.map((o) => o.chainFacts)).toEqual(many.map(() => 'read'))
    expect((await production.get('/v2/opportunities/?limit=500')).body.total).toBe(120)
    await production.close()
  })

  test('the refresher runs on its schedule until stopped', async () => {
    let passes = 0
    const counting = { info: (f: Json) => f.msg === 'catalog refreshed' && passes++, error() {} }
    const refresher = startCatalogRefresher({ ...deps(), logger: counting }, 20)
    await Bun.sleep(300)
    await refresher.stop()
    const after = passes
    expect(after).toBeGreaterThanOrEqual(2)
    await Bun.sleep(100)
    expect(passes).toBe(after)
  })
})
