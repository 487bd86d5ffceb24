/**
 * Funding tags: `earn:v1:stream:<streamId>:<mac>`, carried by the transfer that funds a token stream,
 * the way an attribution tag rides on a deposit. The MAC is the first 16 bytes (32 hex characters) of
 * HMAC-SHA256 under the attribution secret over `stream-funding|streamId|wallet|chainId`: a tag copied
 * into another wallet's transfer, or onto another chain, no longer verifies. The leading label keeps
 * the message apart from an attribution tag's `distributorId|actionId|wallet|chainId`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { STREAM_KIND, TAG_MAC_HEX_LENGTH, TAG_PREFIX } from '../attribution.ts'
import { UUID_PATTERN } from '../opportunities/schema.ts'

const STREAM_TAG_PREFIX = `${TAG_PREFIX}${STREAM_KIND}:`
const MAC_HEX_LENGTH = TAG_MAC_HEX_LENGTH
const MAC_SHAPE = new RegExp(`^[0-9a-f]{${MAC_HEX_LENGTH}}$`)
const STREAM_ID = new RegExp(UUID_PATTERN)

export interface StreamTagSubject {
  streamId: string
  /** Canonical address of the wallet that sends the funding transfer (the creator). */
  wallet: string
  chainId: string
}

function mac(secret: string, s: StreamTagSubject): string {
  return createHmac('sha256', secret)
    .update(`stream-funding|${s.streamId}|${s.wallet}|${s.chainId}`)
    .digest('hex')
    .slice(0, MAC_HEX_LENGTH)
}

export function streamTag(secret: string, s: StreamTagSubject): string {
  // The tag is split on ':'; stream ids are UUIDs, this guards the invariant.
  if (s.streamId.includes(':')) throw new Error('stream ids must not contain ":"')
  return `${STREAM_TAG_PREFIX}${s.streamId}:${mac(secret, s)}`
}

/**
 * The tag's parts, or undefined when it is not a funding tag of this service. Stream ids are UUIDs: a tag naming
 * anything else is no stream's, and is never looked up (a chain's memo or comment may hold a NUL, which
 * PostgreSQL text refuses: a confirm beside such a tag had answered 500).
 */
export function parseStreamTag(tag: string): { streamId: string; mac: string } | undefined {
  if (!tag.startsWith(STREAM_TAG_PREFIX)) return undefined
  const parts = tag.slice(STREAM_TAG_PREFIX.length).split(':')
  if (parts.length !== 2) return undefined
  const [streamId, m] = parts as [string, string]
  if (!STREAM_ID.test(streamId) || !MAC_SHAPE.test(m)) return undefined
  return { streamId, mac: m }
}

/** Whether `tag` is the funding tag this secret makes for the stream, wallet and chain; constant-time compare. */
export function verifyStreamTag(secret: string, tag: string, subject: StreamTagSubject): boolean {
  const parsed = parseStreamTag(tag)
  if (!parsed || parsed.streamId !== subject.streamId) return false
  return timingSafeEqual(Buffer.from(mac(secret, subject), 'hex'), Buffer.from(parsed.mac, 'hex'))
}
