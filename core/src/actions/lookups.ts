/**
 * The store reads every build makes before it reaches the chain (the opportunity, the distributor, the
 * membership). Catalog rows change only by an import or a refresh and distributors do not change: they are
 * remembered for `ttlMs`, which delays seeing an import by at most that. Misses are not remembered (an
 * opportunity may be imported the next moment). Membership goes through the shared member cache, asking
 * for a fresh answer: a wallet registered a moment ago through another process passes the gate. An opportunity is
 * remembered decoded, so its JSON columns are parsed once per read of the row, not once per build. Chain state
 * never passes through here: balances and allowances are read live by the plugin.
 */
import type { Clock } from '../clock.ts'
import { type CatalogOpportunity, decodeOpportunity } from '../opportunities/records.ts'
import type { Distributor } from '../store/schema.ts'
import type { Store } from '../store/store.ts'
import type { MemberCache } from '../membership/memberCache.ts'

export interface Lookups {
  /** Shared by the builds that ask while it is remembered: read it, never change it. */
  opportunity(id: string): Promise<CatalogOpportunity | undefined>
  distributor(id: string): Promise<Distributor | undefined>
  isMember(ecosystem: string, address: string): Promise<boolean>
}

// Entries per map before it is emptied: bounds memory under a flood of distinct wallets.
const MAX_ENTRIES = 50_000

function remembered<T>(clock: Clock, ttlMs: number, load: (key: string) => Promise<T | undefined>) {
  const entries = new Map<string, { value: T; until: number }>()
  return async (key: string): Promise<T | undefined> => {
    const now = clock.now()
    const hit = entries.get(key)
    // Further from its time than the TTL: the wall clock stepped back, and a delisting must not wait out the step.
    if (hit && hit.until > now && hit.until <= now + ttlMs) return hit.value
    const value = await load(key)
    if (value === undefined) {
      entries.delete(key)
      return undefined
    }
    if (entries.size >= MAX_ENTRIES) entries.clear()
    entries.set(key, { value, until: now + ttlMs })
    return value
  }
}

const loadOpportunity = async (store: Store, id: string) => {
  const row = await store.getOpportunity(id)
  return row && decodeOpportunity(row)
}

export function createLookups(deps: { store: Store; clock: Clock; ttlMs: number; members: MemberCache }): Lookups {
  const { store, clock, ttlMs, members } = deps
  return {
    opportunity: remembered(clock, ttlMs, (id) => loadOpportunity(store, id)),
    distributor: remembered(clock, ttlMs, (id) => store.getDistributor(id)),
    isMember: (ecosystem, address) => members.isMember(ecosystem, address, { fresh: true }),
  }
}

/** No memory at all: every lookup asks the store (for callers outside the hot path). */
export const storeLookups = (store: Store): Lookups => ({
  opportunity: (id) => loadOpportunity(store, id),
  distributor: (id) => store.getDistributor(id),
  isMember: async (ecosystem, address) => (await store.getMember(ecosystem, address)) !== undefined,
})
