import { expect, test } from 'bun:test'
import { issueKey, revokeKey } from './admin.ts'
import { createKeyVerifier } from './auth.ts'
import { manualClock } from './clock.ts'
import { createStore } from './store/store.ts'

const T0 = Date.UTC(2026, 0, 5, 8, 20)

test('a revocation is seen within the cache time, though the wall clock steps back meanwhile', async () => {
  const store = createStore({ engine: 'sqlite', path: ':memory:' })
  await store.migrate(T0)
  const clock = manualClock(T0)
  await store.createOrganization({ id: 'org', name: 'o', tier: 'standard', hourlyBudget: 100, monthlyBudget: null, createdAt: T0 })
  const { key } = await issueKey({ store, clock }, 'org', 'secret')
  const keys = createKeyVerifier({ store, clock, cacheMs: 2000 })
  try {
    expect((await keys.verify(key)).code).toBe('VALID')
    await revokeKey({ store, clock }, { key })
    // Cached: the revocation is seen once the 2 s are up, not before.
    clock.advance(1999)
    expect((await keys.verify(key)).code).toBe('VALID')
    // NTP steps the clock back a minute: the cached record, now 61 s from its time, no longer counts.
    clock.set(T0 - 60_000)
    expect((await keys.verify(key)).code).toBe('REVOKED')
  } finally {
    await store.close()
  }
})
