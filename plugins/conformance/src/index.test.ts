/** The kit itself: a deliberately incomplete plugin fails it with messages naming what is missing. */
import { describe, expect, test } from 'bun:test'
import { InvalidAddressError, InvalidArgumentError, NotFoundError } from '@earn/core'
import { createHash } from 'node:crypto'
import { conformanceReport, type ConformanceFixtures } from './index.ts'

// A half-built "fourth chain": addresses are 40 hex chars, but it accepts anything as valid,
// has no signature verification and no balance reader.
const halfBuilt = {
  id: 'evm' as const,
  connect: () => ({}),
  address: {
    isValid: () => true,
    parse: (input: string) => {
      if (input.length === 0) throw new InvalidAddressError('test', 'empty')
      return input.toLowerCase()
    },
    format: (c: string) => c,
  },
  signIn: {
    message: (p: { nonce: string }) => `sign in ${p.nonce}`,
  },
  transactions: {
    build: async () => [],
  },
}

// Signing that a real plugin would verify: a keyed hash stands in for a signature scheme here,
// because the plugin under test has no verifier to call anyway.
const fixtures: ConformanceFixtures<object> = {
  client: {},
  chainId: '1',
  addressForms: ['0xABCDEF0000000000000000000000000000000001', '0xabcdef0000000000000000000000000000000001'],
  invalidAddresses: ['not-an-address'],
  async newSigner() {
    const secret = crypto.randomUUID()
    return {
      address: '0x' + createHash('sha256').update(secret).digest('hex').slice(0, 40),
      sign: async (message: string) => createHash('sha256').update(secret + message).digest('hex'),
    }
  },
}

describe('conformance kit on an incomplete plugin', () => {
  test('reports every missing capability by name', async () => {
    const failures = await conformanceReport(halfBuilt as never, fixtures)
    const byName = Object.fromEntries(failures.map((f) => [f.name, f.error]))
    expect(byName['implements signIn.verify']).toBe('signIn.verify is missing: the plugin must implement signIn.verify()')
    expect(byName['implements balance.read']).toBe('balance.read is missing: the plugin must implement balance.read()')
    expect(byName['implements transactions.check']).toBe('transactions.check is missing: the plugin must implement transactions.check()')
    // What the server calls for catalog import, portfolio, verify and stream funding.
    for (const member of ['balance.vault', 'balance.assets', 'balance.flows', 'transactions.buildTransfer', 'transactions.readTransfers'])
      expect(byName[`implements ${member}`]).toBe(`${member} is missing: the plugin must implement ${member}()`)
    expect(byName["owns its chain and no other ecosystem's; a canonical chain id is owned and stays as it is"]).toContain('ownsChain is missing')
    expect(byName["signIn.verify accepts a real wallet's signature"]).toContain('signIn.verify is missing')
    expect(byName['address.parse rejects invalid input with a 400 InvalidArgument error']).toContain('address.isValid("not-an-address") is true')
    expect(byName['transactions.build returns unsigned steps in signing order']).toContain('no build fixture')
    // What it does implement passes.
    expect(byName['implements address.parse']).toBeUndefined()
    expect(byName['signIn.message is deterministic and carries the nonce']).toBeUndefined()
    expect(byName['address.parse gives one canonical form for every input form, idempotently']).toBeUndefined()
  })

  test("reports a plugin that owns another ecosystem's chain ids, or whose canonical ids it does not own", async () => {
    const name = "owns its chain and no other ecosystem's; a canonical chain id is owned and stays as it is"
    const greedy = await conformanceReport({ ...halfBuilt, ownsChain: () => true } as never, fixtures)
    expect(greedy.find((f) => f.name === name)?.error).toBe('ownsChain("mainnet") is true, but that is a chain id of solana: chain ids must not overlap')
    const renaming = { ...halfBuilt, ownsChain: (id: string) => id === '1', canonicalChainId: () => 'one' }
    expect((await conformanceReport(renaming as never, fixtures)).find((f) => f.name === name)?.error).toBe('canonicalChainId("1") gave "one", which ownsChain does not own')
    const honest = { ...halfBuilt, ownsChain: (id: string) => /^\d+$/.test(id) }
    expect((await conformanceReport(honest as never, fixtures)).find((f) => f.name === name)).toBeUndefined()
  })

  test("reports a plugin that does not name its chain's own coin", async () => {
    const name = 'declares a known ecosystem id'
    const declared = { ...halfBuilt, ownsChain: () => false, health: async () => [] }
    for (const nativeCoin of [undefined, { symbol: '', decimals: 18 }, { symbol: 'ETH\n', decimals: 18 }, { symbol: 'ETH', decimals: 1.5 }, { symbol: 'ETH', decimals: 256 }])
      expect((await conformanceReport({ ...declared, nativeCoin } as never, fixtures)).find((f) => f.name === name)?.error).toStartWith("nativeCoin must name the chain's own coin")
    expect((await conformanceReport({ ...declared, nativeCoin: { symbol: 'ETH', decimals: 18 } } as never, fixtures)).find((f) => f.name === name)).toBeUndefined()
  })

  test('reports a portfolio bound that is no whole number above 0', async () => {
    const name = 'declares a known ecosystem id'
    const declared = { ...halfBuilt, ownsChain: () => false, health: async () => [], nativeCoin: { symbol: 'ETH', decimals: 18 } }
    for (const readsAtOnce of [0, -1, 1.5, Number.NaN, '16'])
      expect((await conformanceReport({ ...declared, balance: { readsAtOnce } } as never, fixtures)).find((f) => f.name === name)?.error).toStartWith('balance.readsAtOnce, where given, must be')
    for (const readsAtOnce of [1, 16, undefined])
      expect((await conformanceReport({ ...declared, balance: { readsAtOnce } } as never, fixtures)).find((f) => f.name === name)).toBeUndefined()
  })

  test('reports a balance reader whose reads in bulk (a portfolio\'s) give other amounts than one read alone', async () => {
    const name = 'balance.read returns the on-chain balance as a bigint'
    const params = { chainId: '1', owner: '0xabcdef0000000000000000000000000000000001', token: 'native' }
    const withBalance = { ...fixtures, balance: { params, expected: 7n } }
    const reader = (read: (p: { inBulk?: boolean }) => Promise<bigint>) => ({ ...halfBuilt, balance: { read: (_: unknown, p: { inBulk?: boolean }) => read(p) } }) as never
    const bulkWrong = (await conformanceReport(reader(async (p) => (p.inBulk ? 0n : 7n)), withBalance)).find((f) => f.name === name)
    expect(bulkWrong?.error).toBe('balance.read in bulk (five at once, inBulk) returned 0, 0, 0, 0, 0, the chain holds 7')
    expect((await conformanceReport(reader(async () => 7n), withBalance)).find((f) => f.name === name)?.error).toBeUndefined()
  })

  test("reports a vault reader that refuses what is no vault without naming the catalog's field, and a missing 404 for an unknown transaction", async () => {
    const name = "balance.vault reads a vault's facts, and refuses what is no vault naming the catalog's field"
    const params = { chainId: '1', vaultAddress: '0xabcdef0000000000000000000000000000000002' }
    const withVault = { ...fixtures, vault: { params, expected: { decimals: 6, totalAssets: 5n }, wrong: { params: { ...params, vaultAddress: '0x01' }, field: 'vaultAddress' as const } }, unknownTxHash: '0x00' }
    const state = { baseToken: '0xb', receiptToken: params.vaultAddress, decimals: 6, totalAssets: 5n }
    const reader = (refuse: () => never) => ({ ...halfBuilt, balance: { vault: async (_: unknown, p: { vaultAddress: string }) => (p.vaultAddress === '0x01' ? refuse() : state) } }) as never
    expect((await conformanceReport(halfBuilt as never, fixtures)).find((f) => f.name === name)?.error).toStartWith('balance.vault is missing')
    expect((await conformanceReport(reader(() => { throw new Error('no vault') }), fixtures)).find((f) => f.name === name)?.error).toStartWith('no vault fixture')
    // A plain error, or one naming another key: the import would keep the entry pending, as if the chain were down.
    for (const refuse of [() => { throw new Error('no vault') }, () => { throw new InvalidArgumentError('no vault', { vault: 'none' }) }])
      expect((await conformanceReport(reader(refuse as () => never), withVault)).find((f) => f.name === name)?.error).toStartWith(
        'balance.vault of what is no vault must throw InvalidArgumentError (400) whose context names vaultAddress',
      )
    // Named, also as the cause of another error (the import looks through causes).
    const named = () => { throw new Error('read failed', { cause: new InvalidArgumentError('no vault there', { vaultAddress: 'no vault there' }) }) }
    expect((await conformanceReport(reader(named as () => never), withVault)).find((f) => f.name === name)).toBeUndefined()

    const notFound = 'transactions.readTransfers of a transaction that does not exist is NotFound (404)'
    const transfers = (read: () => Promise<never>) => ({ ...halfBuilt, transactions: { readTransfers: read } }) as never
    expect((await conformanceReport(transfers(async () => { throw new Error('nothing') }), withVault)).find((f) => f.name === notFound)?.error).toStartWith('transactions.readTransfers of an unknown transaction must throw NotFoundError')
    expect((await conformanceReport(transfers(async () => { throw new NotFoundError('no such transaction', {}) }), withVault)).find((f) => f.name === notFound)).toBeUndefined()
  })

  test('signs the agreement a request naming no chain gets: the plugin\'s default chain, or none', async () => {
    const seen: (string | null)[] = []
    const recording = { ...halfBuilt, signIn: { message: (p: { nonce: string; chainId: string | null }) => (seen.push(p.chainId), `sign in ${p.nonce}`) } }
    await conformanceReport(recording as never, fixtures)
    await conformanceReport({ ...recording, signIn: { ...recording.signIn, defaultChainId: '10' } } as never, fixtures)
    expect(seen.length).toBeGreaterThan(1)
    expect(new Set(seen)).toEqual(new Set([null, '10']))
  })

  test('reports a plugin with no id or connect', async () => {
    const failures = await conformanceReport({} as never, fixtures)
    expect(failures.find((f) => f.name === 'declares a known ecosystem id')?.error).toContain('id is missing or unknown')
    expect(failures.length).toBeGreaterThanOrEqual(10)
  })
})
