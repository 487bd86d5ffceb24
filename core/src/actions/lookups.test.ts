import { expect, test } from 'bun:test'
import { manualClock } from '../clock.ts'
import { createStore } from '../store/store.ts'
import { createMemberCache } from '../membership/memberCache.ts'
import { createLookups } from './lookups.ts'

test('hits are remembered for the TTL, misses never; memberships by ecosystem and address', async () => {
  const store = createStore({ engine: 'sqlite', path: ':memory:' })
  await store.migrate(0)
  const clock = manualClock(1_000)
  const lookups = createLookups({ store, clock, ttlMs: 2000, members: createMemberCache({ store, clock, negativeTtlMs: 1000 }) })
  await store.createOrganization({ id: 'org', name: 'o', tier: 'standard', hourlyBudget: 1, monthlyBudget: null, createdAt: 0 })
  expect(await lookups.distributor('d1')).toBeUndefined()
  await store.createDistributor({ id: 'd1', orgId: 'org', name: 'first', createdAt: 0 })
  // The miss was not remembered: the new distributor is found at once.
  expect((await lookups.distributor('d1'))?.name).toBe('first')

  expect(await lookups.isMember('evm', '0xabc')).toBe(false)
  await store.insertNonce({ nonce: 'n', orgId: 'org', ecosystem: 'evm', address: '0xabc', message: 'm', chainId: '1', domain: 'd', uri: 'u', issuedAt: 0, expiresAt: 1e12, consumedAt: null })
  await store.createMemberWithNonce('n', { ecosystem: 'evm', address: '0xabc', orgId: 'org', distributorId: null, chainId: '1', createdAt: 0 }, 1)
  // A remembered "no" does not hold back the gate: the new member passes at once.
  expect(await lookups.isMember('evm', '0xabc')).toBe(true)
  expect(await lookups.isMember('solana', '0xabc')).toBe(false)

  const row = { id: 'o1', ecosystem: 'evm', chainId: '1', vaultAddress: '0x1', listing: '{"name":"a"}', chainFacts: null, tvl: 0, refreshedAt: null, refreshError: null, delistedAt: null, createdAt: 0, updatedAt: 0 }
  await store.upsertOpportunity(row, [])
  expect((await lookups.opportunity('o1'))?.listing.name).toBe('a')
  await store.upsertOpportunity({ ...row, listing: '{"name":"b"}' }, [])
  clock.advance(1999)
  expect((await lookups.opportunity('o1'))?.listing.name).toBe('a')
  clock.advance(1)
  expect((await lookups.opportunity('o1'))?.listing.name).toBe('b')
  // The wall clock stepped back a minute: the remembered entry is a minute further from its time than the TTL, and a
  // re-import is seen within the TTL all the same.
  await store.upsertOpportunity({ ...row, listing: '{"name":"c"}' }, [])
  clock.advance(-60_000)
  expect((await lookups.opportunity('o1'))?.listing.name).toBe('c')
  await store.close()
})
