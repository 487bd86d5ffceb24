/** One suite, run against every engine (Hono's routers pattern): see sqlite.test.ts, postgres.test.ts. */
import { describe, expect, test, beforeAll, afterAll } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { hashKey } from '../keys.ts'
import type { Member, NonceRecord, OpportunityRecord } from './schema.ts'
import type { Store } from './store.ts'
import { streamStoreTests } from './streams.suite.ts'
import { idempotencyStoreTests } from './idempotency.suite.ts'

const T0 = 1_760_000_000_000

export function runStoreSuite(name: string, make: () => Promise<{ store: Store; cleanup(): Promise<void> }>) {
  describe(`store: ${name}`, () => {
    let store: Store
    let cleanup: () => Promise<void>
    beforeAll(async () => {
      ;({ store, cleanup } = await make())
      await store.migrate(T0)
    })
    afterAll(async () => {
      await store.close()
      await cleanup()
    })

    const org = (id = `org_${randomUUID()}`) => ({ id, name: 'Org', tier: 'standard' as const, hourlyBudget: 100, monthlyBudget: null, createdAt: T0 })
    const nonce = (over: Partial<NonceRecord> = {}): NonceRecord => ({
      nonce: randomUUID(),
      orgId: 'org_x',
      ecosystem: 'evm',
      address: '0x' + 'ab'.repeat(20),
      message: 'Sign this\nexactly',
      chainId: '1',
      domain: 'app.example.com',
      uri: 'https://app.example.com',
      issuedAt: T0,
      expiresAt: T0 + 300_000,
      consumedAt: null,
      ...over,
    })
    const member = (n: NonceRecord): Member => ({
      ecosystem: n.ecosystem,
      address: n.address,
      orgId: n.orgId,
      distributorId: null,
      chainId: n.chainId,
      createdAt: T0 + 1,
    })

    test('migrations are recorded and not applied twice', async () => {
      expect(await store.migrate(T0)).toEqual([])
    })

    test('organizations, keys (by digest) and distributors round-trip', async () => {
      const o = org()
      expect(await store.createOrganization(o)).toBe(true)
      expect(await store.getOrganization(o.id)).toEqual(o)
      // With rows: written with the organization, or, asked only for a first organization, nothing at all.
      const first = org()
      const key = { id: `key_${randomUUID()}`, orgId: first.id, kind: 'publishable' as const, hash: hashKey(`pk_live_${randomUUID()}`), start: 'pk_live_abcd', hourlyBudget: null, monthlyBudget: null, createdAt: T0, revokedAt: null }
      const distributor = { id: randomUUID(), orgId: first.id, name: 'First', createdAt: T0 }
      expect(await store.createOrganization(first, { keys: [key], distributors: [distributor], onlyIfFirst: true })).toBe(false)
      expect([await store.getOrganization(first.id), await store.getKey(key.id), await store.getDistributor(distributor.id)]).toEqual([undefined, undefined, undefined])
      expect(await store.createOrganization(first, { keys: [key], distributors: [distributor] })).toBe(true)
      expect([await store.getKey(key.id), await store.getDistributor(distributor.id)]).toEqual([key, distributor])
      const hash = hashKey(`sk_live_${randomUUID()}`)
      await store.insertKey({ id: `key_${randomUUID()}`, orgId: o.id, kind: 'secret', hash, start: 'sk_live_abcd', hourlyBudget: null, monthlyBudget: 7, createdAt: T0, revokedAt: null })
      const found = await store.findKeyByHash(hash)
      expect(found?.organization.id).toBe(o.id)
      expect(found?.key.monthlyBudget).toBe(7)
      expect(found?.key.kind).toBe('secret')
      expect(await store.findKeyByHash(hashKey('sk_live_other'))).toBeUndefined()
      expect(await store.setKeyBudgets(found!.key.id, { hourlyBudget: 42 })).toBe(true)
      expect((await store.getKey(found!.key.id))?.hourlyBudget).toBe(42)
      expect(await store.revokeKey(found!.key.id, T0 + 5)).toBe(true)
      expect(await store.revokeKey(found!.key.id, T0 + 6)).toBe(false)
      expect((await store.findKeyByHash(hash))?.key.revokedAt).toBe(T0 + 5)
      // A revoked key's budgets are no longer set.
      expect(await store.setKeyBudgets(found!.key.id, { hourlyBudget: 43 })).toBe(false)
      expect((await store.getKey(found!.key.id))?.hourlyBudget).toBe(42)
      expect(await store.setOrganizationBudgets(o.id, { monthlyBudget: 9_000 })).toBe(true)
      expect(await store.setOrganizationBudgets(o.id, { hourlyBudget: 70 })).toBe(true)
      expect((await store.findKeyByHash(hash))?.organization).toMatchObject({ hourlyBudget: 70, monthlyBudget: 9_000 })
      expect(await store.setOrganizationBudgets(o.id, { monthlyBudget: null })).toBe(true)
      expect((await store.getOrganization(o.id))?.monthlyBudget).toBeNull()
      expect(await store.setOrganizationBudgets('org_unknown', { hourlyBudget: 1 })).toBe(false)
      const d = { id: randomUUID(), orgId: o.id, name: 'D', createdAt: T0 }
      await store.createDistributor(d)
      expect(await store.getDistributor(d.id)).toEqual(d)
      expect((await store.listDistributors(o.id)).map((x) => x.id)).toEqual([d.id])
    })

    test('of concurrent asks for a first organization on an empty store, exactly one writes', async () => {
      // A store of its own, empty: the suite's shared one has organizations already.
      const { store: empty, cleanup: drop } = await make()
      try {
        await empty.migrate(T0)
        // Connections opened first (PostgreSQL's pool opens them as needed), so the asks below run side by side.
        await Promise.all(Array.from({ length: 12 }, () => empty.ping()))
        const made = await Promise.all(Array.from({ length: 12 }, () => empty.createOrganization(org(), { onlyIfFirst: true })))
        expect(made.filter(Boolean)).toHaveLength(1)
        expect(await empty.listOrganizations()).toHaveLength(1)
      } finally {
        await empty.close()
        await drop()
      }
    })

    test('a nonce is stored verbatim and creates one member, once', async () => {
      const n = nonce({ message: 'line one\nline two — ünïcode ✓' })
      await store.insertNonce(n)
      expect(await store.getNonce(n.nonce)).toEqual(n)
      const first = await store.createMemberWithNonce(n.nonce, member(n), T0 + 10)
      expect(first.ok).toBe(true)
      expect((await store.getNonce(n.nonce))?.consumedAt).toBe(T0 + 10)
      expect(await store.getMember('evm', n.address)).toEqual(member(n))
      const again = await store.createMemberWithNonce(n.nonce, member(n), T0 + 11)
      expect(again).toEqual({ ok: false, reason: 'nonce_unusable' })
    })

    test('a nonce without a chain id is stored as one; expired nonces are deleted, at most the limit asked at a time', async () => {
      const chainless = nonce({ ecosystem: 'solana', chainId: null })
      await store.insertNonce(chainless)
      expect((await store.getNonce(chainless.nonce))?.chainId).toBeNull()
      // Expired long before every other nonce of this suite (T0 is 2025), so only these are candidates.
      const old = [1_000, 2_000, 3_000].map((expiresAt) => nonce({ issuedAt: 0, expiresAt }))
      for (const n of old) await store.insertNonce(n)
      expect(await store.deleteExpiredNonces(2_500, 1)).toBe(1)
      expect(await store.deleteExpiredNonces(2_500, 10)).toBe(1)
      expect(await store.deleteExpiredNonces(2_500, 10)).toBe(0)
      const left = await Promise.all(old.map(async (n) => (await store.getNonce(n.nonce)) !== undefined))
      expect(left).toEqual([false, false, true])
      expect(await store.deleteExpiredNonces(3_001, 10)).toBe(1)
      expect(await store.getNonce(chainless.nonce)).toEqual(chainless)
    })

    test('an expired nonce, or one issued to another wallet, creates nothing', async () => {
      const n = nonce({ address: '0x' + '01'.repeat(20) })
      await store.insertNonce(n)
      expect(await store.createMemberWithNonce(n.nonce, member(n), n.expiresAt)).toEqual({ ok: false, reason: 'nonce_unusable' })
      const other = { ...member(n), address: '0x' + '02'.repeat(20) }
      expect(await store.createMemberWithNonce(n.nonce, other, T0 + 1)).toEqual({ ok: false, reason: 'nonce_unusable' })
      expect(await store.getMember('evm', n.address)).toBeUndefined()
      expect((await store.getNonce(n.nonce))?.consumedAt).toBeNull()
    })

    test('an existing member leaves the nonce unconsumed', async () => {
      const a = nonce({ address: '0x' + '03'.repeat(20) })
      const b = nonce({ address: a.address })
      await store.insertNonce(a)
      await store.insertNonce(b)
      expect((await store.createMemberWithNonce(a.nonce, member(a), T0 + 1)).ok).toBe(true)
      expect(await store.createMemberWithNonce(b.nonce, member(b), T0 + 2)).toEqual({ ok: false, reason: 'exists' })
      expect((await store.getNonce(b.nonce))?.consumedAt).toBeNull()
    })

    test('20 concurrent creates with one nonce make exactly one member', async () => {
      const n = nonce({ address: '0x' + '04'.repeat(20) })
      await store.insertNonce(n)
      const results = await Promise.all(Array.from({ length: 20 }, () => store.createMemberWithNonce(n.nonce, member(n), T0 + 1)))
      expect(results.filter((r) => r.ok)).toHaveLength(1)
    })

    test('amounts keep every digit of a uint256', async () => {
      const max = (2n ** 256n - 1n).toString()
      const id = randomUUID()
      await store.insertAction({ id, orgId: 'o', distributorId: 'd', kind: 'deposit', ecosystem: 'evm', chainId: '1', wallet: 'w', opportunityId: null, token: null, amount: max, referralCode: null, txHash: null, createdAt: T0 })
      expect((await store.getAction(id))?.amount).toBe(max)
    })

    test('key usage adds up per month; the hour count adds, moves forward, never back', async () => {
      const month = '2031-01'
      const a = `key_${randomUUID()}`
      const b = `key_${randomUUID()}`
      const byKey = async () => new Map((await store.loadKeyUsage(month)).map((r) => [r.keyId, r]))
      await store.addKeyUsage([{ keyId: a, month, used: 5, hour: 100, hourUsed: 5 }])
      await store.addKeyUsage([
        { keyId: a, month, used: 3, hour: 100, hourUsed: 3 },
        { keyId: b, month, used: 1, hour: 100, hourUsed: 1 },
        { keyId: a, month: '2031-02', used: 50, hour: 100, hourUsed: 50 },
      ])
      expect((await byKey()).get(a)).toEqual({ keyId: a, month, used: 8, hour: 100, hourUsed: 8 })
      expect((await byKey()).get(b)).toEqual({ keyId: b, month, used: 1, hour: 100, hourUsed: 1 })
      // A later hour replaces the hour count; an earlier one (a slow writer) leaves it alone.
      await store.addKeyUsage([{ keyId: a, month, used: 2, hour: 101, hourUsed: 2 }])
      await store.addKeyUsage([{ keyId: a, month, used: 4, hour: 100, hourUsed: 4 }])
      expect((await byKey()).get(a)).toEqual({ keyId: a, month, used: 14, hour: 101, hourUsed: 2 })
      expect((await store.loadKeyUsage('2031-02')).map((r) => r.used)).toEqual([50])
      expect(await store.loadKeyUsage('2031-03')).toEqual([])
    })

    test('key usage is written in batches larger than one statement holds', async () => {
      const month = '2032-01'
      const rows = Array.from({ length: 2500 }, (_, i) => ({ keyId: `key_${i}`, month, used: i + 1, hour: 7, hourUsed: 1 }))
      await store.addKeyUsage(rows)
      await store.addKeyUsage(rows)
      const loaded = await store.loadKeyUsage(month)
      expect(loaded).toHaveLength(2500)
      expect(loaded.reduce((s, r) => s + r.used, 0)).toBe(2 * rows.reduce((s, r) => s + r.used, 0))
      expect(loaded.every((r) => r.hourUsed === 2 && r.hour === 7)).toBe(true)
    })

    test("a usage write is recorded with it, so a writer that lost its answer can ask; one that never committed never will; a gone writer's is forgotten after 30 days", async () => {
      const [writer, gone] = [randomUUID(), randomUUID()]
      const month = '2032-02'
      const at = 1_900_000_000_000
      const row = (used: number) => [{ keyId: 'key_w', month, used, hour: 7, hourUsed: used }]
      await store.addKeyUsage(row(1), { writer: gone, seq: 1, at })
      await store.addKeyUsage(row(2), { writer, seq: 1, at })
      expect(await store.claimUsageWrite({ writer, seq: 1, at })).toBe(true)
      // Not written: claimed, so the write cannot commit later.
      expect(await store.claimUsageWrite({ writer, seq: 2, at })).toBe(false)
      await expect(store.addKeyUsage(row(100), { writer, seq: 2, at })).rejects.toThrow()
      await store.addKeyUsage(row(4), { writer, seq: 3, at: at + 31 * 86_400_000 })
      expect(await store.claimUsageWrite({ writer, seq: 3, at })).toBe(true)
      // The writer's older numbers, and the gone writer's (30 days older), forgotten.
      expect(await store.claimUsageWrite({ writer: gone, seq: 1, at })).toBe(false)
      expect((await store.loadKeyUsage(month)).map((r) => r.used)).toEqual([7])
    })

    const opportunity = (over: Partial<OpportunityRecord> = {}): OpportunityRecord => ({
      id: randomUUID(),
      ecosystem: 'evm',
      chainId: '1',
      vaultAddress: '0x' + 'aa'.repeat(20),
      listing: '{"name":"x"}',
      chainFacts: '{"totalAssets":"1"}',
      tvl: 0,
      refreshedAt: T0,
      refreshError: null,
      delistedAt: null,
      createdAt: T0,
      updatedAt: T0,
      ...over,
    })

    test('opportunities: list filters by ecosystem, chain, deposit token and TVL, counts all matches, pages by TVL', async () => {
      const chain = `9${Math.floor(Math.random() * 1e9)}`
      const usdc = '0x' + randomUUID().replaceAll('-', '').padEnd(40, '0')
      const rows = [
        opportunity({ chainId: chain, tvl: 10.5 }),
        opportunity({ chainId: chain, tvl: 2_000_000.25 }),
        opportunity({ chainId: chain, tvl: 300 }),
        opportunity({ chainId: chain, tvl: 7, chainFacts: null, refreshedAt: null }),
        opportunity({ chainId: chain, tvl: 50, ecosystem: 'ton' }),
      ]
      for (const [i, r] of rows.entries()) expect(await store.upsertOpportunity(r, i === 0 || i === 2 ? [usdc, '0xother'] : ['0xother'])).toBe('created')
      const base = { ecosystems: ['evm'], chainIds: [chain], offset: 0, limit: 10 }
      const all = await store.listOpportunities(base)
      // Pending (never refreshed) and unloaded-ecosystem rows are not listed.
      expect(all.total).toBe(3)
      expect(all.rows.map((r) => r.tvl)).toEqual([2_000_000.25, 300, 10.5])
      expect((await store.listOpportunities({ ...base, ecosystems: ['evm', 'ton'] })).total).toBe(4)
      const page2 = await store.listOpportunities({ ...base, offset: 1, limit: 1 })
      expect(page2).toEqual({ rows: [rows[2]!], total: 3 })
      // A page past the end still says how many match.
      expect(await store.listOpportunities({ ...base, offset: 3, limit: 2 })).toEqual({ rows: [], total: 3 })
      expect((await store.listOpportunities({ ...base, depositTokens: [usdc] })).rows.map((r) => r.id).sort()).toEqual([rows[0]!.id, rows[2]!.id].sort())
      expect((await store.listOpportunities({ ...base, tvlGreaterThan: 300 })).rows.map((r) => r.id)).toEqual([rows[1]!.id])
      expect((await store.listOpportunities({ ...base, tvlGreaterThan: 10, depositTokens: [usdc] })).total).toBe(2)
      expect(await store.listOpportunities({ ...base, chainIds: [] })).toEqual({ rows: [], total: 0 })
      expect((await store.listOpportunities({ ...base, chainIds: ['nope'] })).total).toBe(0)
    })

    test('opportunities: re-import updates, keeps the chain facts of the same vault, replaces the deposit tokens', async () => {
      const chain = `8${Math.floor(Math.random() * 1e9)}`
      const row = opportunity({ chainId: chain, tvl: 99, chainFacts: '{"totalAssets":"99"}' })
      await store.upsertOpportunity(row, ['0xa'])
      expect(await store.upsertOpportunity({ ...row, listing: '{"name":"renamed"}', chainFacts: null, tvl: 0, refreshedAt: null, updatedAt: T0 + 5 }, ['0xb'])).toBe('updated')
      expect(await store.getOpportunity(row.id)).toEqual({ ...row, listing: '{"name":"renamed"}', updatedAt: T0 + 5 })
      const q = { ecosystems: ['evm'], chainIds: [chain], offset: 0, limit: 10 }
      expect((await store.listOpportunities({ ...q, depositTokens: ['0xa'] })).total).toBe(0)
      expect((await store.listOpportunities({ ...q, depositTokens: ['0xb'] })).total).toBe(1)
      // Another vault under the same id drops the old facts until they are read again.
      await store.upsertOpportunity({ ...row, vaultAddress: '0x' + 'bb'.repeat(20), chainFacts: null, tvl: 0, refreshedAt: null }, [])
      expect((await store.getOpportunity(row.id))?.refreshedAt).toBeNull()
      expect(await store.setOpportunityChainFacts(row.id, { listing: row.listing, chainFacts: '{"totalAssets":"5"}', tvl: 5, refreshedAt: T0 + 9 })).toBe(true)
      await store.setOpportunityRefreshError(row.id, row.listing, 'rpc down', T0 + 10)
      expect(await store.getOpportunity(row.id)).toMatchObject({ chainFacts: '{"totalAssets":"5"}', tvl: 5, refreshedAt: T0 + 9, refreshError: 'rpc down' })
      // A failed read of a listing imported over since notes nothing on the new one.
      await store.setOpportunityRefreshError(row.id, '{"name":"before"}', 'old vault down', T0 + 11)
      expect(await store.getOpportunity(row.id)).toMatchObject({ refreshError: 'rpc down', updatedAt: T0 + 10 })
      expect((await store.allOpportunities()).some((r) => r.id === row.id)).toBe(true)
    })

    test('opportunities: kept chain facts get the TVL at the new listing, and the upsert says it kept them', async () => {
      const chain = `7${Math.floor(Math.random() * 1e9)}`
      const row = opportunity({ chainId: chain, listing: '{"price":1}', chainFacts: '{"totalAssets":"40"}', tvl: 40 })
      const tvlWith = (price: number) => (facts: string) => Number((JSON.parse(facts) as { totalAssets: string }).totalAssets) * price
      await store.upsertOpportunity(row, [])
      const repriced = { ...row, listing: '{"price":3}', chainFacts: null, tvl: 0, refreshedAt: null, updatedAt: T0 + 5 }
      expect(await store.upsertOpportunities([{ row: repriced, depositTokens: [], tvlWith: tvlWith(3) }])).toEqual([{ result: 'updated', keptFacts: true, delisted: false }])
      expect(await store.getOpportunity(row.id)).toEqual({ ...row, listing: '{"price":3}', tvl: 120, updatedAt: T0 + 5 })
      // Another vault under the id: nothing is kept, nothing to price.
      const moved = { ...repriced, vaultAddress: '0x' + 'cc'.repeat(20) }
      expect(await store.upsertOpportunities([{ row: moved, depositTokens: [], tvlWith: tvlWith(3) }])).toEqual([{ result: 'updated', keptFacts: false, delisted: false }])
      expect(await store.getOpportunity(row.id)).toMatchObject({ chainFacts: null, tvl: 0, refreshedAt: null })
      // Still pending: "kept" means facts that were read.
      expect(await store.upsertOpportunities([{ row: moved, depositTokens: [], tvlWith: tvlWith(3) }])).toEqual([{ result: 'updated', keptFacts: false, delisted: false }])
      // Facts stored after the caller found none (a refresh's first read of the listing before) are not kept.
      expect(await store.setOpportunityChainFacts(row.id, { listing: moved.listing, chainFacts: '{"totalAssets":"7"}', tvl: 7, refreshedAt: T0 + 6 })).toBe(true)
      const unseen = { ...moved, listing: '{"price":4}', updatedAt: T0 + 7 }
      expect(await store.upsertOpportunities([{ row: unseen, depositTokens: [], tvlWith: tvlWith(4), factsSeen: false }])).toEqual([{ result: 'updated', keptFacts: false, delisted: false }])
      expect(await store.getOpportunity(row.id)).toMatchObject({ listing: '{"price":4}', chainFacts: null, tvl: 0, refreshedAt: null })
    })

    test("opportunities: an import's facts read before a refresh's stored ones leave those, for the same listing; another listing takes its own", async () => {
      const row = opportunity({ listing: '{"name":"same"}', chainFacts: '{"totalAssets":"6"}', tvl: 6, refreshedAt: T0 + 10 })
      await store.upsertOpportunity(row, [])
      // The import's read began at T0 + 5, before the refresh's (T0 + 10) that stored 6.
      const older = { ...row, chainFacts: '{"totalAssets":"5"}', tvl: 5, refreshedAt: T0 + 5, updatedAt: T0 + 20 }
      expect(await store.upsertOpportunities([{ row: older, depositTokens: [] }])).toEqual([{ result: 'updated', keptFacts: true, delisted: false }])
      expect(await store.getOpportunity(row.id)).toMatchObject({ chainFacts: '{"totalAssets":"6"}', tvl: 6, refreshedAt: T0 + 10, updatedAt: T0 + 20 })
      // A newer read, or another listing, is the import's.
      const newer = { ...older, refreshedAt: T0 + 11 }
      expect(await store.upsertOpportunities([{ row: newer, depositTokens: [] }])).toEqual([{ result: 'updated', keptFacts: false, delisted: false }])
      expect(await store.getOpportunity(row.id)).toMatchObject({ chainFacts: '{"totalAssets":"5"}', refreshedAt: T0 + 11 })
      await store.setOpportunityChainFacts(row.id, { listing: row.listing, chainFacts: '{"totalAssets":"7"}', tvl: 7, refreshedAt: T0 + 30 })
      const renamed = { ...older, listing: '{"name":"renamed"}' }
      expect(await store.upsertOpportunities([{ row: renamed, depositTokens: [] }])).toEqual([{ result: 'updated', keptFacts: false, delisted: false }])
      expect(await store.getOpportunity(row.id)).toMatchObject({ chainFacts: '{"totalAssets":"5"}', refreshedAt: T0 + 5 })
    })

    test('opportunities: chain facts are written only while the entry holds the listing they were read for', async () => {
      const row = opportunity({ listing: '{"vault":"a"}', chainFacts: null, refreshedAt: null })
      await store.upsertOpportunity(row, [])
      // A refresh read the chain for {"vault":"a"}; an import replaced the listing before it wrote.
      await store.upsertOpportunity({ ...row, vaultAddress: '0x' + 'dd'.repeat(20), listing: '{"vault":"d"}', updatedAt: T0 + 1 }, [])
      expect(await store.setOpportunityChainFacts(row.id, { listing: '{"vault":"a"}', chainFacts: '{"totalAssets":"9"}', tvl: 9, refreshedAt: T0 + 2 })).toBe(false)
      expect(await store.getOpportunity(row.id)).toMatchObject({ listing: '{"vault":"d"}', chainFacts: null, tvl: 0, refreshedAt: null, updatedAt: T0 + 1 })
      expect(await store.setOpportunityChainFacts(row.id, { listing: '{"vault":"d"}', chainFacts: '{"totalAssets":"4"}', tvl: 4, refreshedAt: T0 + 3 })).toBe(true)
      expect(await store.getOpportunity(row.id)).toMatchObject({ chainFacts: '{"totalAssets":"4"}', tvl: 4, refreshedAt: T0 + 3 })
      expect(await store.setOpportunityChainFacts(randomUUID(), { listing: '{"vault":"d"}', chainFacts: '{}', tvl: 0, refreshedAt: T0 })).toBe(false)
      // Of two reads of the same listing (two processes), the one begun later stands, whichever is written last.
      expect(await store.setOpportunityChainFacts(row.id, { listing: '{"vault":"d"}', chainFacts: '{"totalAssets":"6"}', tvl: 6, refreshedAt: T0 + 5 })).toBe(true)
      expect(await store.setOpportunityChainFacts(row.id, { listing: '{"vault":"d"}', chainFacts: '{"totalAssets":"5"}', tvl: 5, refreshedAt: T0 + 4 })).toBe(false)
      expect(await store.getOpportunity(row.id)).toMatchObject({ chainFacts: '{"totalAssets":"6"}', tvl: 6, refreshedAt: T0 + 5 })
      expect(await store.setOpportunityChainFacts(row.id, { listing: '{"vault":"d"}', chainFacts: '{"totalAssets":"6"}', tvl: 6, refreshedAt: T0 + 5 })).toBe(true)
    })

    test('opportunities: several in one transaction, all written or none', async () => {
      const chain = `9${Math.floor(Math.random() * 1e9)}`
      const a = opportunity({ chainId: chain })
      const b = opportunity({ chainId: chain })
      expect(await store.upsertOpportunities([{ row: a, depositTokens: ['0xa'] }])).toEqual([{ result: 'created', keptFacts: false, delisted: false }])
      expect(await store.upsertOpportunities([{ row: { ...a, tvl: 7 }, depositTokens: [] }, { row: b, depositTokens: ['0xb'] }])).toEqual([
        { result: 'updated', keptFacts: false, delisted: false },
        { result: 'created', keptFacts: false, delisted: false },
      ])
      expect((await store.getOpportunity(a.id))?.tvl).toBe(7)
      // The second entry breaks a constraint: the first, written before it in the same call, is rolled back.
      const c = opportunity({ chainId: chain })
      const broken = { ...opportunity({ chainId: chain }), listing: null } as unknown as typeof c
      await expect(store.upsertOpportunities([{ row: c, depositTokens: [] }, { row: broken, depositTokens: [] }])).rejects.toThrow()
      expect(await store.getOpportunity(c.id)).toBeUndefined()
    })

    test('opportunities: a catalog of 1,200 in chunks of statements, created then updated, its token index whole; an id twice updates in file order', async () => {
      const chain = `5${Math.floor(Math.random() * 1e9)}`
      const rows = Array.from({ length: 1_200 }, (_, i) => opportunity({ chainId: chain, tvl: i }))
      const created = await store.upsertOpportunities(rows.map((row, i) => ({ row, depositTokens: i % 2 ? ['0xa', '0xb', '0xa'] : ['0xc'] })))
      expect(created.every((o) => o.result === 'created')).toBe(true)
      const q = { ecosystems: ['evm'], chainIds: [chain], offset: 0, limit: 10 }
      expect([(await store.listOpportunities({ ...q, depositTokens: ['0xa'] })).total, (await store.listOpportunities({ ...q, depositTokens: ['0xc'] })).total]).toEqual([600, 600])
      // Half updated (their tokens swapped), a new one, and an id given twice: the later entry is what stays.
      const twice = rows[7]!
      const entries = [
        ...rows.slice(0, 600).map((row, i) => ({ row: { ...row, tvl: 10_000 + i, updatedAt: T0 + 1 }, depositTokens: i % 2 ? ['0xc'] : ['0xa'] })),
        { row: opportunity({ chainId: chain }), depositTokens: ['0xd'] },
        { row: { ...twice, tvl: 1, updatedAt: T0 + 2 }, depositTokens: ['0xe'] },
      ]
      const outcomes = await store.upsertOpportunities(entries)
      expect(outcomes.slice(0, 600).every((o) => o.result === 'updated')).toBe(true)
      expect(outcomes.slice(600)).toEqual([
        { result: 'created', keptFacts: false, delisted: false },
        { result: 'updated', keptFacts: false, delisted: false },
      ])
      expect(await store.getOpportunity(rows[0]!.id)).toEqual({ ...rows[0]!, tvl: 10_000, updatedAt: T0 + 1 })
      expect(await store.getOpportunity(twice.id)).toEqual({ ...twice, tvl: 1, updatedAt: T0 + 2 })
      expect(await store.getOpportunity(rows[1_000]!.id)).toEqual(rows[1_000]!)
      const total = async (token: string) => (await store.listOpportunities({ ...q, depositTokens: [token] })).total
      // The first 600: even ones 0xa, odd ones 0xc but the one given twice (0xe); the other 600 as created.
      expect([await total('0xa'), await total('0xb'), await total('0xc'), await total('0xd'), await total('0xe')]).toEqual([300 + 300, 300, 299 + 300, 1, 1])

      // Read back whole, each once, in import order, in pages that leave the event loop its turns.
      let turned = false
      setImmediate(() => (turned = true))
      const all = await store.allOpportunities()
      expect(turned).toBe(true)
      const ours = all.filter((r) => r.chainId === chain)
      expect(new Set(ours.map((r) => r.id)).size).toBe(1_201)
      expect(all.length).toBeGreaterThan(1_000)
      const order = all.map((r) => `${String(r.createdAt).padStart(16, '0')}|${r.id}`)
      expect(order).toEqual([...order].sort())
    })

    test('opportunities: a delisted one leaves the list (unless asked for), outlives re-imports, and lists again', async () => {
      const chain = `6${Math.floor(Math.random() * 1e9)}`
      const [a, b] = [opportunity({ chainId: chain, tvl: 2 }), opportunity({ chainId: chain, tvl: 1 })]
      for (const r of [a, b]) await store.upsertOpportunity(r, ['0xa'])
      const q = { ecosystems: ['evm'], chainIds: [chain], offset: 0, limit: 10 }
      expect(await store.setOpportunityDelisted(a.id, true, T0 + 1)).toBe(true)
      expect(await store.setOpportunityDelisted(a.id, true, T0 + 2)).toBe(true)
      expect(await store.getOpportunity(a.id)).toMatchObject({ delistedAt: T0 + 1, updatedAt: T0 + 2 })
      expect(await store.listOpportunities(q)).toEqual({ rows: [b], total: 1 })
      expect((await store.listOpportunities({ ...q, depositTokens: ['0xa'] })).total).toBe(1)
      expect((await store.listOpportunities({ ...q, includeDelisted: true })).rows.map((r) => r.id)).toEqual([a.id, b.id])
      // The catalog file does not list again what the operator delisted.
      expect(await store.upsertOpportunities([{ row: { ...a, listing: '{"name":"again"}', updatedAt: T0 + 3 }, depositTokens: [] }])).toEqual([
        { result: 'updated', keptFacts: false, delisted: true },
      ])
      expect(await store.getOpportunity(a.id)).toMatchObject({ listing: '{"name":"again"}', delistedAt: T0 + 1 })
      expect(await store.setOpportunityDelisted(a.id, false, T0 + 4)).toBe(true)
      expect((await store.getOpportunity(a.id))?.delistedAt).toBeNull()
      expect((await store.listOpportunities(q)).total).toBe(2)
      expect(await store.setOpportunityDelisted(randomUUID(), true, T0)).toBe(false)
    })

    test("opportunities: a chain id respelled only while the row is as read; facts, TVL and times stay the refresher's", async () => {
      const [old, now] = [`7${Math.floor(Math.random() * 1e9)}`, `8${Math.floor(Math.random() * 1e9)}`]
      const a = opportunity({ chainId: old, tvl: 3 })
      await store.upsertOpportunity(a, ['0xa'])
      const from = { chainId: old, listing: a.listing }
      const to = { chainId: now, listing: a.listing.replace('{', `{"respelled":true,`) }
      // A refresh wrote newer facts after the row was read: they stay.
      const refreshed = { ...a, chainFacts: '{"totalAssets":"9"}', tvl: 9, refreshedAt: T0 + 5, updatedAt: T0 + 5 }
      await store.upsertOpportunity(refreshed, ['0xa'])
      expect(await store.respellOpportunityChain(a.id, from, to)).toBe(true)
      expect(await store.getOpportunity(a.id)).toEqual({ ...refreshed, chainId: now, listing: to.listing })
      expect((await store.listOpportunities({ ecosystems: ['evm'], chainIds: [now], offset: 0, limit: 10 })).total).toBe(1)
      // Already respelled, or the listing changed meanwhile (an import): nothing is written.
      expect(await store.respellOpportunityChain(a.id, from, to)).toBe(false)
      expect(await store.respellOpportunityChain(a.id, { chainId: now, listing: a.listing }, { chainId: old, listing: a.listing })).toBe(false)
      expect((await store.getOpportunity(a.id))?.chainId).toBe(now)
    })

    test('opportunities: a page and its total agree while refreshes move TVLs across the filter', async () => {
      const chain = `5${Math.floor(Math.random() * 1e9)}`
      const rows = Array.from({ length: 12 }, () => opportunity({ chainId: chain, tvl: 0 }))
      for (const r of rows) await store.upsertOpportunity(r, [])
      const q = { ecosystems: ['evm'], chainIds: [chain], tvlGreaterThan: 100, offset: 0, limit: 50 }
      let stop = false
      // Refreshes committing all the while, each moving one row across tvlGreaterThan: a total counted apart from
      // the page (another statement, another snapshot) disagrees with it now and then.
      const refreshers = Array.from({ length: 2 }, async (_, w) => {
        for (let n = w; !stop; n += 2) {
          // Every pass over the rows flips them all: each write moves its row into or out of the filter.
          const r = rows[n % rows.length]!
          await store.setOpportunityChainFacts(r.id, { listing: r.listing, chainFacts: '{}', tvl: Math.floor(n / rows.length) % 2 ? 1000 : 0, refreshedAt: T0 + n })
        }
      })
      const disagreements: string[] = []
      try {
        for (let i = 0; i < 1000; i++) {
          const { rows: page, total } = await store.listOpportunities(q)
          if (page.length !== total) disagreements.push(`${page.length} rows, total ${total}`)
        }
      } finally {
        stop = true
        await Promise.all(refreshers)
      }
      expect(disagreements).toEqual([])
    })

    test('hasDepositsInto: deposits of that opportunity into that vault, or naming no vault (before migration 7)', async () => {
      const opportunityId = randomUUID()
      const base = { orgId: 'o', distributorId: 'd', ecosystem: 'evm', chainId: '1', wallet: 'w', opportunityId, token: 't', amount: '1', referralCode: null, txHash: null, createdAt: T0 }
      expect(await store.hasDepositsInto(opportunityId, '0xa')).toBe(false)
      await store.insertActions([{ ...base, id: randomUUID(), kind: 'withdraw', vault: '0xa' }, { ...base, id: randomUUID(), kind: 'deposit', vault: '0xb' }])
      expect([await store.hasDepositsInto(opportunityId, '0xa'), await store.hasDepositsInto(opportunityId, '0xb')]).toEqual([false, true])
      await store.insertActions([{ ...base, id: randomUUID(), kind: 'deposit', vault: null }])
      expect(await store.hasDepositsInto(opportunityId, '0xa')).toBe(true)
      expect(await store.hasDepositsInto(randomUUID(), '0xb')).toBe(false)
    })

    test("opportunitiesActedOn: each opportunity and vault of the wallet's actions once, any organization's, in its ecosystem only", async () => {
      const wallet = `w-${randomUUID()}`
      const [a, b] = [randomUUID(), randomUUID()]
      const base = { distributorId: 'd', ecosystem: 'evm', chainId: '1', wallet, token: 't', amount: '1', referralCode: null, txHash: null, vault: '0xa', createdAt: T0 }
      expect(await store.opportunitiesActedOn('evm', wallet)).toEqual([])
      await store.insertActions([
        { ...base, id: randomUUID(), orgId: 'o1', kind: 'deposit', opportunityId: a },
        { ...base, id: randomUUID(), orgId: 'o2', kind: 'withdraw', opportunityId: a },
        { ...base, id: randomUUID(), orgId: 'o2', kind: 'deposit', opportunityId: b },
        { ...base, id: randomUUID(), orgId: 'o1', kind: 'deposit', opportunityId: randomUUID(), ecosystem: 'ton' },
        { ...base, id: randomUUID(), orgId: 'o1', kind: 'deposit', opportunityId: randomUUID(), wallet: `${wallet}x` },
      ])
      expect((await store.opportunitiesActedOn('evm', wallet)).map((o) => o.opportunityId).sort()).toEqual([a, b].sort())
      expect(await store.opportunitiesActedOn('evm', wallet)).toContainEqual({ opportunityId: b, chainId: '1', vault: '0xa' })
    })

    test('settings: the first writer wins, concurrently too', async () => {
      const name = `s_${randomUUID()}`
      expect(await store.getSetting(name)).toBeUndefined()
      const values = await Promise.all(Array.from({ length: 10 }, (_, i) => store.putSettingIfAbsent(name, `v${i}`)))
      expect(new Set(values).size).toBe(1)
      expect(await store.getSetting(name)).toBe(values[0])
    })

    test('a verification is recorded once per built action and transaction, and one transaction per built action, concurrently too', async () => {
      const built = randomUUID()
      const wallet = `w-${built}`
      const action = { orgId: 'o', distributorId: 'd', ecosystem: 'evm', chainId: '1', wallet, opportunityId: null, token: null, amount: null, referralCode: null, createdAt: T0 }
      const [txHash, other] = [`0x${randomUUID()}`, `0x${randomUUID()}`]
      const verification = (over: { txHash?: string; verifies?: string } = {}) => ({ ...action, id: randomUUID(), kind: 'verify' as const, verifies: built, txHash, ...over })
      const verifications = () => store.listWalletActivity({ orgId: 'o', wallets: new Map([['evm', [wallet]]]), offset: 0, limit: 10 })
      expect(await store.recordVerification(verification())).toBe(true)
      // The same transaction again: still the action's, not a second row.
      expect(await store.recordVerification(verification())).toBe(true)
      // Another transaction carrying the same action's tag is not.
      expect(await store.recordVerification(verification({ txHash: other }))).toBe(false)
      expect((await verifications()).total).toBe(1)
      // Another action verified by the same transaction (a bundle of several wallets' deposits) is recorded too.
      const bundled = randomUUID()
      expect(await store.recordVerification(verification({ verifies: bundled }))).toBe(true)
      expect(await store.recordVerification(verification({ verifies: bundled }))).toBe(true)
      expect((await verifications()).total).toBe(2)

      // Two transactions of one action at once: exactly one is the action's.
      const raced = randomUUID()
      const results = await Promise.all([`0x${randomUUID()}`, `0x${randomUUID()}`, `0x${randomUUID()}`].map((h) => store.recordVerification(verification({ verifies: raced, txHash: h }))))
      expect(results.filter(Boolean)).toHaveLength(1)
      // Recorded before verifications named their action: that row still stands for its transaction.
      const legacy = `0x${randomUUID()}`
      await store.insertAction({ ...verification({ txHash: legacy }), verifies: null })
      expect(await store.recordVerification(verification({ verifies: randomUUID(), txHash: legacy }))).toBe(true)
      expect((await verifications()).total).toBe(4)
    })

    test('batches of actions are stored whole, every column, whatever their sizes and in any order of sizes', async () => {
      for (const size of [3, 1, 3, 17, 1]) {
        const rows = Array.from({ length: size }, (_, i) => ({
          id: randomUUID(),
          orgId: 'o',
          distributorId: `d${i}`,
          kind: i % 2 ? ('withdraw' as const) : ('deposit' as const),
          ecosystem: 'evm',
          chainId: String(i),
          wallet: `w${size}-${i}`,
          opportunityId: i % 3 ? `op${i}` : null,
          token: `t${i}`,
          amount: `${i}${size}`,
          referralCode: i === 0 ? 'ref' : null,
          txHash: null,
          verifies: i % 4 ? null : `${randomUUID()}`,
          vault: i % 2 ? `v${i}` : null,
          createdAt: T0 + i,
        }))
        await store.insertActions(rows)
        for (const row of rows) expect(await store.getAction(row.id)).toEqual(row)
      }
      // A batch with a duplicate id fails whole: none of its rows is stored.
      const dup = randomUUID()
      const base = { orgId: 'o', distributorId: 'd', kind: 'deposit' as const, ecosystem: 'evm', chainId: '1', wallet: 'w', opportunityId: null, token: null, amount: null, referralCode: null, txHash: null, createdAt: T0 }
      const fresh = randomUUID()
      await expect(store.insertActions([{ ...base, id: fresh }, { ...base, id: dup }, { ...base, id: dup }])).rejects.toThrow()
      expect(await store.getAction(fresh)).toBeUndefined()
    })

    test('actions read together: those that exist, whatever the number of ids (past a statement\'s parameters)', async () => {
      const base = { orgId: 'o', distributorId: 'd', kind: 'deposit' as const, ecosystem: 'evm', chainId: '1', wallet: 'w', opportunityId: null, token: null, amount: null, referralCode: null, txHash: null, createdAt: T0 }
      const stored = Array.from({ length: 3 }, () => ({ ...base, id: randomUUID() }))
      await store.insertActions(stored)
      // 1,200 ids that name nothing around them: more than one statement takes.
      const ids = [...Array.from({ length: 600 }, () => randomUUID()), ...stored.map((a) => a.id), ...Array.from({ length: 600 }, () => randomUUID())]
      const found = await store.getActions(ids)
      expect(found.map((a) => a.id).sort()).toEqual(stored.map((a) => a.id).sort())
      expect(await store.getActions([])).toEqual([])
    })

    streamStoreTests(() => store)
    idempotencyStoreTests(() => store)
  })
}
