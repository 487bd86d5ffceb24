/** One suite, run against every engine (Hono's routers pattern): see sqlite.test.ts, postgres.test.ts. */
import { describe, expect, test, beforeAll, afterAll } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { hashKey } from '../keys.ts'
import type { Member, NonceRecord } from './schema.ts'
import type { Store } from './store.ts'

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
      await store.createOrganization(o)
      expect(await store.getOrganization(o.id)).toEqual(o)
      const hash = hashKey(`sk_live_${randomUUID()}`)
      await store.insertKey({ id: `key_${randomUUID()}`, orgId: o.id, kind: 'secret', hash, start: 'sk_live_abcd', hourlyBudget: null, monthlyBudget: 7, createdAt: T0, revokedAt: null })
      const found = await store.findKeyByHash(hash)
      expect(found?.organization.id).toBe(o.id)
      expect(found?.key.monthlyBudget).toBe(7)
      expect(found?.key.kind).toBe('secret')
      expect(await store.findKeyByHash(hashKey('sk_live_other'))).toBeUndefined()
      expect(await store.revokeKey(found!.key.id, T0 + 5)).toBe(true)
      expect(await store.revokeKey(found!.key.id, T0 + 6)).toBe(false)
      expect((await store.findKeyByHash(hash))?.key.revokedAt).toBe(T0 + 5)
      expect(await store.setKeyBudgets(found!.key.id, { hourlyBudget: 42 })).toBe(true)
      expect((await store.getKey(found!.key.id))?.hourlyBudget).toBe(42)
      const d = { id: randomUUID(), orgId: o.id, name: 'D', createdAt: T0 }
      await store.createDistributor(d)
      expect(await store.getDistributor(d.id)).toEqual(d)
      expect((await store.listDistributors(o.id)).map((x) => x.id)).toEqual([d.id])
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
  })
}
