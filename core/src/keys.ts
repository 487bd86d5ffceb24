/**
 * API keys: `pk_live_` (publishable) or `sk_live_` (secret) + base58 of 32 random bytes.
 * Only the SHA-256 digest is stored; the plain key exists once, in the answer to whoever made it.
 */
import { randomBytes } from 'node:crypto'

export const KEY_KINDS = ['publishable', 'secret'] as const
export type KeyKind = (typeof KEY_KINDS)[number]

const PREFIX: Record<KeyKind, string> = { publishable: 'pk_live_', secret: 'sk_live_' }
const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'

export function base58(bytes: Uint8Array): string {
  let n = 0n
  for (const b of bytes) n = (n << 8n) | BigInt(b)
  let out = ''
  while (n > 0n) {
    out = ALPHABET[Number(n % 58n)] + out
    n /= 58n
  }
  for (const b of bytes) {
    if (b !== 0) break
    out = '1' + out
  }
  return out
}

export function generateKey(kind: KeyKind): string {
  return PREFIX[kind] + base58(randomBytes(32))
}

export function hashKey(key: string): string {
  // Bun's one-shot SHA-256: every request hashes its key, and this is several times faster than node:crypto's.
  return Bun.SHA256.hash(key, 'hex')
}

/** The kind a presented key claims by its prefix, or undefined for anything else. */
export function keyKind(key: string): KeyKind | undefined {
  if (key.startsWith(PREFIX.secret)) return 'secret'
  if (key.startsWith(PREFIX.publishable)) return 'publishable'
  return undefined
}

/** A percent sign as sent, once or more encoded again (`%25`, `%2525`: a path a proxy or SDK encoded twice). */
const PERCENT = '%(?:25)*'
/** `c` as sent in a path: itself, or percent-encoded (either case of the letter, as KEY_LIKE matches both). */
const sent = (c: string) => `(?:${c}|${PERCENT}${c.toLowerCase().charCodeAt(0).toString(16)}|${PERCENT}${c.toUpperCase().charCodeAt(0).toString(16)})`

/**
 * Anything shaped like an API key, any of its characters percent-encoded too, once or more (a path as sent: audits'
 * `s%6B_live_…` and `sk%255Flive_…` went out whole), cut to its prefix: a client may paste a key into a path, a query
 * or a body, and neither a log line nor an error answer repeats it (SDKs and gateways log error bodies).
 */
const KEY_LIKE = new RegExp(`((?:${sent('p')}|${sent('s')})${[...'k_live_'].map(sent).join('')})(?:[1-9A-HJ-NP-Za-km-z]|${PERCENT}[0-9a-f]{2})+`, 'gi')
export const maskKeys = (text: string): string => text.replace(KEY_LIKE, '$1…')

/** A short, non-secret prefix kept for display ("which key is this?"). */
export const keyStart = (key: string) => key.slice(0, 12)

export const newId = (prefix: string) => `${prefix}_${base58(randomBytes(12))}`
