/**
 * Attribution tags: `earn:v1:<distributorId>:<actionId>:<mac>`, carried by a deposit transaction.
 * The MAC is the first 16 bytes (32 hex characters) of HMAC-SHA256 under ATTRIBUTION_SECRET over
 * `distributorId|actionId|wallet|chainId`, so a tag copied into another wallet's transaction, or
 * onto another chain, or edited to name another distributor, no longer verifies.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'

export const TAG_PREFIX = 'earn:v1:'
/** The word after the prefix that marks a stream funding tag (`earn:v1:stream:<streamId>:<mac>`). */
export const STREAM_KIND = 'stream'
/** The MAC's length in a tag: 16 bytes of the HMAC, in lowercase hex. */
export const TAG_MAC_HEX_LENGTH = 32
const MAC_HEX_LENGTH = TAG_MAC_HEX_LENGTH

export interface TagSubject {
  distributorId: string
  actionId: string
  /** Canonical wallet address. */
  wallet: string
  chainId: string
}

export interface ParsedTag {
  distributorId: string
  actionId: string
  mac: string
}

function mac(secret: string, s: TagSubject): string {
  // Bun's keyed hasher is HMAC, about 3x faster than node:crypto's createHmac; every build makes one.
  return new Bun.CryptoHasher('sha256', secret)
    .update(`${s.distributorId}|${s.actionId}|${s.wallet}|${s.chainId}`)
    .digest('hex')
    .slice(0, MAC_HEX_LENGTH)
}

export function attributionTag(secret: string, s: TagSubject): string {
  // The tag is split on ':', so its parts must not contain one (ids are UUIDs; this guards the invariant).
  if (s.distributorId.includes(':') || s.actionId.includes(':')) throw new Error('tag ids must not contain ":"')
  if (s.distributorId === STREAM_KIND) throw new Error(`"${STREAM_KIND}" names stream funding tags, not a distributor`)
  return `${TAG_PREFIX}${s.distributorId}:${s.actionId}:${mac(secret, s)}`
}

/** The tag's parts, or undefined when it is not a v1 tag of this service. */
export function parseTag(tag: string): ParsedTag | undefined {
  if (!tag.startsWith(TAG_PREFIX)) return undefined
  const parts = tag.slice(TAG_PREFIX.length).split(':')
  if (parts.length !== 3) return undefined
  const [distributorId, actionId, m] = parts as [string, string, string]
  // Stream funding tags share the prefix (streams/tag.ts) and the shape: `stream` where the distributor would be.
  if (distributorId === STREAM_KIND) return undefined
  if (!distributorId || !actionId || !new RegExp(`^[0-9a-f]{${MAC_HEX_LENGTH}}$`).test(m)) return undefined
  return { distributorId, actionId, mac: m }
}

/** Whether `tag` is the tag this secret makes for the wallet and chain; compares MACs in constant time. */
export function verifyTag(secret: string, tag: string, subject: Pick<TagSubject, 'wallet' | 'chainId'>): boolean {
  const parsed = parseTag(tag)
  if (!parsed) return false
  const expected = Buffer.from(mac(secret, { ...subject, distributorId: parsed.distributorId, actionId: parsed.actionId }), 'hex')
  return timingSafeEqual(expected, Buffer.from(parsed.mac, 'hex'))
}

export const ATTRIBUTION_SECRET_SETTING = 'attribution_secret'

export interface SecretStore {
  putSettingIfAbsent(name: string, value: string): Promise<string>
}

/**
 * The secret tags are made with: ATTRIBUTION_SECRET when configured; otherwise one generated on first
 * use and kept in the store, so tags stay verifiable across restarts and by every process sharing the
 * store (the first writer wins). Resolved once per source; a failed read is retried on the next call.
 */
export function attributionSecretSource(store: SecretStore, configured: string | undefined): () => Promise<string> {
  let secret: Promise<string> | undefined
  return () => {
    if (configured) return Promise.resolve(configured)
    secret ??= store.putSettingIfAbsent(ATTRIBUTION_SECRET_SETTING, randomBytes(32).toString('hex')).catch((e) => {
      secret = undefined
      throw e
    })
    return secret
  }
}
