/**
 * Verifying a presented API key. Outcomes a caller branches on are data; only a store failure throws.
 * Verified keys are cached by digest (never the plain key) for a few seconds, which bounds how late a
 * revocation is seen; unknown keys are not cached, so a key made by the CLI works at once.
 */
import type { Clock } from './clock.ts'
import { hashKey, type KeyKind, keyKind } from './keys.ts'
import type { KeyWithOrganization, Store } from './store/store.ts'

export type VerifyKeyResult =
  | { code: 'VALID'; kind: KeyKind; record: KeyWithOrganization }
  | { code: 'MISSING' }
  | { code: 'MALFORMED' }
  | { code: 'NOT_FOUND' }
  | { code: 'REVOKED' }

export interface KeyVerifier {
  verify(presented: string | null | undefined): Promise<VerifyKeyResult>
}

const MAX_CACHED = 10_000
const KEY_SHAPE = /^[ps]k_live_[1-9A-HJ-NP-Za-km-z]+$/

export function createKeyVerifier(deps: { store: Store; clock: Clock; cacheMs: number }): KeyVerifier {
  const cache = new Map<string, { record: KeyWithOrganization; until: number }>()
  return {
    async verify(presented) {
      if (!presented) return { code: 'MISSING' }
      const kind = keyKind(presented)
      // Keys are the prefix and base58: anything else (two headers joined by a comma, a pasted space) is not one.
      if (!kind || presented.length > 128 || !KEY_SHAPE.test(presented)) return { code: 'MALFORMED' }
      const hash = hashKey(presented)
      const now = deps.clock.now()
      let record = cache.get(hash)
      // Past its time, or further from it than the cache keeps anything: the wall clock stepped back (NTP, a VM
      // resumed), and a revoked key must not keep working for the size of the step.
      if (!record || record.until <= now || record.until > now + deps.cacheMs) {
        const found = await deps.store.findKeyByHash(hash)
        if (!found) {
          cache.delete(hash)
          return { code: 'NOT_FOUND' }
        }
        if (cache.size >= MAX_CACHED) cache.clear()
        record = { record: found, until: now + deps.cacheMs }
        if (deps.cacheMs > 0) cache.set(hash, record)
      }
      if (record.record.key.revokedAt !== null) return { code: 'REVOKED' }
      // The stored kind is authoritative; a prefix that disagrees with it is not this key.
      if (record.record.key.kind !== kind) return { code: 'NOT_FOUND' }
      return { code: 'VALID', kind, record: record.record }
    },
  }
}
