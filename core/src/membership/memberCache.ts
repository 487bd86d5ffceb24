/**
 * Membership answers kept in memory, in front of the store's point read (the largest part of a
 * membership check). Members are never removed, so a "member" answer is kept for good. A "not a
 * member" answer is kept for `negativeTtlMs` only: another server process may register the wallet
 * meanwhile. This process's own registrations replace it at once, so a single process (the embedded
 * default) always answers exactly; across processes a "no" is at most `negativeTtlMs` old.
 */
import type { Clock } from '../clock.ts'
import type { Store } from '../store/store.ts'

export interface MemberCache {
  /**
   * Whether the wallet is a member. `fresh` ignores a remembered "no" (a gate that must see a wallet
   * registered a moment ago through another process); a remembered "yes" is always current.
   */
  isMember(ecosystem: string, address: string, options?: { fresh?: boolean }): Promise<boolean>
  /** The wallet was registered (by this process, or found registered): a member from now on. */
  registered(ecosystem: string, address: string): void
}

// Entries before the map is emptied: bounds memory under a flood of distinct wallets.
const MAX_ENTRIES = 100_000
const MEMBER = Number.POSITIVE_INFINITY

export function createMemberCache(deps: { store: Store; clock: Clock; negativeTtlMs: number }): MemberCache {
  // Keyed by ecosystem and canonical address; the value is when the answer stops counting.
  const until = new Map<string, number>()
  const remember = (key: string, value: number) => {
    if (until.size >= MAX_ENTRIES) until.clear()
    until.set(key, value)
  }
  return {
    async isMember(ecosystem, address, options) {
      const key = `${ecosystem}:${address}`
      const known = until.get(key)
      if (known === MEMBER) return true
      const now = deps.clock.now()
      // Further from its time than the TTL: the wall clock stepped back, and a registration must not wait out the step.
      if (known !== undefined && known > now && known <= now + deps.negativeTtlMs && !options?.fresh) return false
      const member = (await deps.store.getMember(ecosystem, address)) !== undefined
      if (member) remember(key, MEMBER)
      else if (deps.negativeTtlMs > 0) remember(key, now + deps.negativeTtlMs)
      return member
    },
    registered(ecosystem, address) {
      remember(`${ecosystem}:${address}`, MEMBER)
    },
  }
}
