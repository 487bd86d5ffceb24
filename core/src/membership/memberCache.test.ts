import { afterEach, expect, test } from 'bun:test'
import { manualClock } from '../clock.ts'
import { createStore, type Store } from '../store/store.ts'
import { createMemberCache } from './memberCache.ts'

let store: Store
afterEach(() => store.close())

async function register(address: string) {
  await store.insertNonce({ nonce: address, orgId: 'org', ecosystem: 'evm', address, message: 'm', chainId: '1', domain: 'd', uri: 'u', issuedAt: 0, expiresAt: 1e12, consumedAt: null })
  const r = await store.createMemberWithNonce(address, { ecosystem: 'evm', address, orgId: 'org', distributorId: null, chainId: '1', createdAt: 0 }, 1)
  expect(r.ok).toBe(true)
}

async function setUp(negativeTtlMs = 1000) {
  store = createStore({ engine: 'sqlite', path: ':memory:' })
  await store.migrate(0)
  await store.createOrganization({ id: 'org', name: 'o', tier: 'standard', hourlyBudget: 1, monthlyBudget: null, createdAt: 0 })
  const clock = manualClock(1_000)
  return { clock, members: createMemberCache({ store, clock, negativeTtlMs }) }
}

test('a "no" from the store is kept for the miss TTL only; another writer is seen after it', async () => {
  const { clock, members } = await setUp()
  expect(await members.isMember('evm', '0xa')).toBe(false)
  // Registered behind this cache's back, as another server process would.
  await register('0xa')
  clock.advance(999)
  expect(await members.isMember('evm', '0xa')).toBe(false)
  // A gate asking for a fresh answer sees it at once.
  expect(await members.isMember('evm', '0xa', { fresh: true })).toBe(true)
  // Membership is per ecosystem.
  expect(await members.isMember('solana', '0xa')).toBe(false)
})

test('a "no" expires at the TTL; a "yes" is kept; a registration replaces a "no" at once', async () => {
  const { clock, members } = await setUp()
  expect(await members.isMember('evm', '0xa')).toBe(false)
  await register('0xa')
  clock.advance(1000)
  expect(await members.isMember('evm', '0xa')).toBe(true)

  expect(await members.isMember('evm', '0xd')).toBe(false)
  members.registered('evm', '0xd')
  expect(await members.isMember('evm', '0xd')).toBe(true)
})

test('a miss TTL of 0 asks the store every time', async () => {
  const { members } = await setUp(0)
  expect(await members.isMember('evm', '0xa')).toBe(false)
  await register('0xa')
  expect(await members.isMember('evm', '0xa')).toBe(true)
})

test('a "no" no longer counts once the wall clock stepped back past its time: a registration is seen within the TTL', async () => {
  const { clock, members } = await setUp()
  expect(await members.isMember('evm', '0xb')).toBe(false)
  await register('0xb')
  clock.set(1_000 - 60_000)
  expect(await members.isMember('evm', '0xb')).toBe(true)
})
