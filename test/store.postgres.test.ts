import { afterAll, describe, expect, test } from 'bun:test'
import { createStore } from '@earn/core'
import { runStoreSuite } from '@earn/core/store/store.suite'
import { randomUUID } from 'node:crypto'
import postgres from 'postgres'
import { DATABASE_URL, freshSchema, postgresAvailable } from './services.ts'

if (await postgresAvailable()) {
  runStoreSuite('postgres', async () => {
    const { schema, drop } = await freshSchema()
    return { store: createStore({ engine: 'postgres', url: DATABASE_URL, schema }), cleanup: drop }
  })

  describe('store: postgres, expired nonces', () => {
    const cleanups: (() => Promise<unknown>)[] = []
    afterAll(async () => {
      for (const c of cleanups.reverse()) await c()
    })

    test('a cleanup skips the rows another is deleting rather than waiting for them', async () => {
      const { schema, drop } = await freshSchema()
      const store = createStore({ engine: 'postgres', url: DATABASE_URL, schema })
      const other = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
      cleanups.push(drop, () => store.close(), () => other.end())
      await store.migrate(Date.now())
      const nonces = [1_000, 2_000, 3_000].map((expiresAt) => ({
        nonce: randomUUID(), orgId: 'org', ecosystem: 'evm', address: '0x0000000000000000000000000000000000000001', message: 'm',
        chainId: '1', domain: 'example.com', uri: 'https://example.com', issuedAt: 0, expiresAt, consumedAt: null,
      }))
      for (const n of nonces) await store.insertNonce(n)
      // Another agreement's cleanup holds the oldest row in its transaction.
      const released = Promise.withResolvers<void>()
      const holding = other.begin(async (trx) => {
        await trx.unsafe(`select nonce from ${schema}.nonces where nonce = $1 for update`, [nonces[0]!.nonce])
        await released.promise
      })
      await Bun.sleep(50)
      const started = performance.now()
      const deleted = await Promise.race([store.deleteExpiredNonces(10_000, 10), Bun.sleep(2_000).then(() => 'waited' as const)])
      released.resolve()
      await holding
      expect(deleted).toBe(2)
      expect(performance.now() - started).toBeLessThan(2_000)
      expect(await store.getNonce(nonces[0]!.nonce)).toBeDefined()
      expect(await store.getNonce(nonces[1]!.nonce)).toBeUndefined()
    })
  })
} else describe.skip('store: postgres (PostgreSQL not reachable)', () => {})
