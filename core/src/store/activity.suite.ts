/** The activity queries, run against every engine: see activity.test.ts (SQLite) and test/activity/store.postgres.test.ts. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import type { ActivityRow } from './activity.ts'
import type { NewAction } from './schema.ts'
import type { Store } from './store.ts'

const T0 = 1_760_000_000_000

export function runActivityStoreSuite(name: string, make: () => Promise<{ store: Store; cleanup(): Promise<void> }>) {
  describe(`activity store: ${name}`, () => {
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

    const wallet = () => '0x' + randomUUID().replaceAll('-', '').padEnd(40, '0')
    const action = (over: Partial<NewAction> & Pick<NewAction, 'orgId' | 'wallet' | 'createdAt'>): NewAction => ({
      id: randomUUID(),
      distributorId: 'dist-a',
      kind: 'deposit',
      ecosystem: 'evm',
      chainId: '1',
      opportunityId: '36c2d744-8ad8-4079-93d2-13c31baa189f',
      token: '0x' + '11'.repeat(20),
      amount: '1000',
      referralCode: null,
      txHash: null,
      ...over,
    })
    async function signup(p: { orgId: string; distributorId: string | null; address: string; createdAt: number; ecosystem?: string }) {
      const nonce = randomUUID()
      const ecosystem = p.ecosystem ?? 'evm'
      await store.insertNonce({
        nonce,
        orgId: p.orgId,
        ecosystem,
        address: p.address,
        message: 'm',
        chainId: '1',
        domain: 'd',
        uri: 'https://d',
        issuedAt: T0,
        expiresAt: T0 + 60_000,
        consumedAt: null,
      })
      const r = await store.createMemberWithNonce(nonce, { ecosystem, address: p.address, orgId: p.orgId, distributorId: p.distributorId, chainId: '1', createdAt: p.createdAt }, T0)
      expect(r.ok).toBe(true)
    }
    const ids = (rows: ActivityRow[]) => rows.map((r) => r.id)

    test("wallet activity: the organization's actions of those wallets, newest first, counted and paged", async () => {
      const org = `org_${randomUUID()}`
      const [a, b, c] = [wallet(), wallet(), wallet()]
      const mine = [
        action({ orgId: org, wallet: a, createdAt: T0 + 1 }),
        action({ orgId: org, wallet: b, createdAt: T0 + 3, kind: 'withdraw' }),
        action({ orgId: org, wallet: a, createdAt: T0 + 2, kind: 'verify', txHash: '0xfeed' }),
        action({ orgId: org, wallet: a, createdAt: T0 + 4, token: 'native', amount: String(2n ** 255n) }),
      ]
      await store.insertActions([
        ...mine,
        // Not shown: another wallet, another organization's action on the same wallet, the same string in another ecosystem.
        action({ orgId: org, wallet: c, createdAt: T0 + 5 }),
        action({ orgId: `org_${randomUUID()}`, wallet: a, createdAt: T0 + 6 }),
        action({ orgId: org, wallet: a, ecosystem: 'ton', createdAt: T0 + 7 }),
        // A kind activity does not show.
        action({ orgId: org, wallet: a, kind: 'signup', createdAt: T0 + 8 }),
      ])
      const wallets = new Map([['evm', [a, b]]])
      const all = await store.listWalletActivity({ orgId: org, wallets, offset: 0, limit: 10 })
      expect(all.total).toBe(4)
      expect(ids(all.rows)).toEqual([mine[3]!.id, mine[1]!.id, mine[2]!.id, mine[0]!.id])
      expect(all.rows[0]).toEqual({
        id: mine[3]!.id,
        type: 'deposit',
        ecosystem: 'evm',
        wallet: a,
        chainId: '1',
        opportunityId: '36c2d744-8ad8-4079-93d2-13c31baa189f',
        distributorId: 'dist-a',
        token: 'native',
        amount: String(2n ** 255n),
        txHash: null,
        createdAt: T0 + 4,
      })
      expect(all.rows[2]).toMatchObject({ type: 'verify', txHash: '0xfeed' })

      const second = await store.listWalletActivity({ orgId: org, wallets, offset: 2, limit: 2 })
      expect(second.total).toBe(4)
      expect(ids(second.rows)).toEqual([mine[2]!.id, mine[0]!.id])
      expect(await store.listWalletActivity({ orgId: org, wallets: new Map([['evm', []]]), offset: 0, limit: 10 })).toEqual({ rows: [], total: 0 })
      // Several ecosystems at once.
      const both = await store.listWalletActivity({ orgId: org, wallets: new Map([['evm', [b]], ['ton', [a]]]), offset: 0, limit: 10 })
      expect(both.rows.map((r) => [r.ecosystem, r.wallet])).toEqual([['ton', a], ['evm', b]])
    })

    test('actions recorded in the same millisecond page without overlap or gap', async () => {
      const org = `org_${randomUUID()}`
      const w = wallet()
      const rows = Array.from({ length: 7 }, () => action({ orgId: org, wallet: w, createdAt: T0 }))
      await store.insertActions(rows)
      const seen: string[] = []
      for (let offset = 0; offset < 7; offset += 3)
        seen.push(...ids((await store.listWalletActivity({ orgId: org, wallets: new Map([['evm', [w]]]), offset, limit: 3 })).rows))
      expect(seen).toHaveLength(7)
      expect(new Set(seen).size).toBe(7)
      expect(seen).toEqual([...seen].sort().reverse())
    })

    test("distributor activity: its actions and signups merged newest first, paged across both", async () => {
      const org = `org_${randomUUID()}`
      const dist = `dist_${randomUUID()}`
      const [u1, u2] = [wallet(), wallet()]
      const acts = [
        action({ orgId: org, distributorId: dist, wallet: u1, createdAt: T0 + 20 }),
        action({ orgId: org, distributorId: dist, wallet: u2, createdAt: T0 + 40, kind: 'withdraw' }),
        action({ orgId: org, distributorId: dist, wallet: u1, createdAt: T0 + 50, opportunityId: 'a52e01aa-6e64-4a8a-8a85-4191c2a9de27' }),
      ]
      await store.insertActions([
        ...acts,
        action({ orgId: org, distributorId: `dist_${randomUUID()}`, wallet: u1, createdAt: T0 + 60 }),
        action({ orgId: org, distributorId: dist, wallet: u1, kind: 'signup', createdAt: T0 + 70 }),
      ])
      await signup({ orgId: org, distributorId: dist, address: u1, createdAt: T0 + 10 })
      await signup({ orgId: org, distributorId: dist, address: u2, createdAt: T0 + 30 })
      // Not this distributor's signups.
      await signup({ orgId: org, distributorId: null, address: wallet(), createdAt: T0 + 35 })
      await signup({ orgId: org, distributorId: `dist_${randomUUID()}`, address: wallet(), createdAt: T0 + 36 })

      const page = (offset: number, limit: number, opportunityId?: string) =>
        store.listDistributorActivity({ orgId: org, distributorId: dist, offset, limit, ...(opportunityId ? { opportunityId } : {}) })
      const all = await page(0, 10)
      expect(all.total).toBe(5)
      expect(all.rows.map((r) => [r.type, r.createdAt - T0])).toEqual([
        ['deposit', 50],
        ['withdraw', 40],
        ['signup', 30],
        ['deposit', 20],
        ['signup', 10],
      ])
      expect(all.rows[2]).toEqual({
        id: `signup:evm:${u2}`,
        type: 'signup',
        ecosystem: 'evm',
        wallet: u2,
        chainId: '1',
        opportunityId: null,
        distributorId: dist,
        token: null,
        amount: null,
        txHash: null,
        createdAt: T0 + 30,
      })
      // Page 2 of 2 starts in the middle of the merge.
      const second = await page(2, 2)
      expect(second.total).toBe(5)
      expect(second.rows.map((r) => [r.type, r.createdAt - T0])).toEqual([['signup', 30], ['deposit', 20]])
      expect((await page(4, 2)).rows.map((r) => r.type)).toEqual(['signup'])

      // One opportunity: its actions only, no signups.
      const one = await page(0, 10, '36c2d744-8ad8-4079-93d2-13c31baa189f')
      expect(one.total).toBe(2)
      expect(ids(one.rows)).toEqual([acts[1]!.id, acts[0]!.id])
      expect(await page(0, 10, '00000000-0000-4000-8000-000000000000')).toEqual({ rows: [], total: 0 })
      // Another organization sees nothing under the same distributor id.
      expect(await store.listDistributorActivity({ orgId: `org_${randomUUID()}`, distributorId: dist, offset: 0, limit: 10 })).toEqual({ rows: [], total: 0 })
    })

    test('a page and its total agree while builds are recorded', async () => {
      const org = `org_${randomUUID()}`
      const dist = randomUUID()
      const w = wallet()
      let stop = false
      let n = 0
      // Builds committing all the while: a total counted apart from the page (another statement, another
      // snapshot) counts rows the page did not see now and then.
      const recorders = Array.from({ length: 2 }, async () => {
        while (!stop) await store.insertActions([action({ orgId: org, wallet: w, distributorId: dist, createdAt: T0 + ++n })])
      })
      const disagreements: string[] = []
      try {
        // Whole histories as one page (past the API's 100), so a page that missed a row shows: the table grows all the while.
        for (let i = 0; i < 150; i++) {
          const mine = await store.listWalletActivity({ orgId: org, wallets: new Map([['evm', [w]]]), offset: 0, limit: 100_000 })
          if (mine.rows.length !== mine.total) disagreements.push(`wallet: ${mine.rows.length} rows, total ${mine.total}`)
          const its = await store.listDistributorActivity({ orgId: org, distributorId: dist, offset: 0, limit: 100_000 })
          if (its.rows.length !== its.total) disagreements.push(`distributor: ${its.rows.length} rows, total ${its.total}`)
        }
      } finally {
        stop = true
        await Promise.all(recorders)
      }
      expect(disagreements).toEqual([])
      expect(n).toBeGreaterThan(0)
      // Past the end: no rows, and the total still counts them all.
      const past = await store.listWalletActivity({ orgId: org, wallets: new Map([['evm', [w]]]), offset: 100_000, limit: 10 })
      expect(past).toEqual({ rows: [], total: n })
      expect((await store.listDistributorActivity({ orgId: org, distributorId: dist, offset: 100_000, limit: 10 })).total).toBe(n)
    })
  })
}
