/**
 * Maps kept in least-recently-used order, for what a client remembers about caller-chosen things (a wallet's vault
 * history, a gas measure for a token a swap names): a Map keeps insertion order, so the first key is the one used
 * longest ago.
 */

/** A remembered value, made the most recently used. */
export function recall<K, V>(map: Map<K, V>, key: K): V | undefined {
  const value = map.get(key)
  if (value !== undefined) {
    map.delete(key)
    map.set(key, value)
  }
  return value
}

/**
 * Remembers `value` as the most recently used, forgetting the least recently used past `max`: a sweep of fresh
 * addresses (a browser key may ask any) then pushes out only the entries nobody asked for since, never them all.
 */
export function remember<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key)
  map.set(key, value)
  if (map.size > max) map.delete(map.keys().next().value as K)
}
