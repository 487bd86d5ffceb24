/**
 * Attribution on EVM rides in calldata: the tag's ASCII bytes are appended after the ABI-encoded call. The
 * Solidity ABI decoder reads only the arguments it expects and ignores trailing bytes, so the vault behaves
 * exactly as without the tag, while anyone reading the transaction finds it at the end.
 */
import { ApiError, TAG_MAC_HEX_LENGTH } from '@earn/core'
import { bytesToString, hexToBytes, stringToBytes, type Hex } from 'viem'

export const TAG_PREFIX = 'earn:v1:'

/** Printable ASCII without spaces: the tag's alphabet, so a tag never needs escaping wherever it is shown. */
const TAG_SHAPE = /^earn:v1:[\x21-\x7e]+$/

const PREFIX_BYTES = stringToBytes(TAG_PREFIX)

/** The call with the tag appended. The tag comes from the server, so a malformed one is our bug, not the caller's. */
export function appendTag(calldata: Hex, tag: string): Hex {
  if (!TAG_SHAPE.test(tag)) throw new ApiError('INTERNAL', 'attribution tag is malformed', { tag })
  // The shape admits only ASCII, whose bytes are its UTF-8 bytes, so the one-step ASCII encoding is exact.
  return `${calldata}${Buffer.from(tag, 'ascii').toString('hex')}`
}

/**
 * The tag a transaction's input carries, or null. A direct call carries it at the very end: the first `earn:v1:`
 * from which every remaining byte is tag alphabet. ABI words before it are mostly unprintable, so the tag cannot be
 * confused with an argument.
 *
 * A contract wallet (a Safe's `execTransaction`, an ERC-4337 `handleOps`, an EIP-7702 batch) carries the built call
 * as a `bytes` argument instead, which the ABI pads with zero bytes and may follow with more arguments. Only when the
 * input has no tag at its end, the first `earn:v1:` run that a zero byte ends is the tag.
 *
 * A wallet may also append bytes of its own after the call (viem's `dataSuffix`, ERC-8021 builder codes), which the
 * vault ignores as it ignores the tag. Only when neither rule finds a tag, the input's first run that begins with a
 * whole tag (`earn:v1:<id>:<id>:<32 hex>`) yields that tag. In every case a run that begins with a whole tag yields
 * the tag alone: bytes after its MAC are not part of it (they cannot make a tag verify that would not; a tag
 * without a whole MAC is returned as found, and its MAC check refuses it).
 *
 * Each run of tag alphabet is searched once for the prefix: linear in the input, whatever a sender puts in it
 * (testing every prefix found against the rest of the input was quadratic, and calldata is the sender's to choose).
 */
export function findTag(input: Hex): string | null {
  const bytes = hexToBytes(input)
  let nested: string | null = null
  let suffixed: string | null = null
  for (let end = bytes.length; end > 0; ) {
    let start = end
    while (start > 0 && isTagByte(bytes[start - 1]!)) start--
    const tag = tagIn(bytes, start, end)
    if (tag !== null) {
      const whole = WHOLE_TAG.exec(tag)?.[0]
      if (end === bytes.length) return whole ?? tag
      // Runs are visited from the end, so the last one kept is the input's first.
      if (bytes[end] === 0) nested = whole ?? tag
      if (whole) suffixed = whole
    }
    end = start === end ? end - 1 : start
  }
  return nested ?? suffixed
}

/** A whole tag at the start of a run: both ids (no ':' in either) and the MAC's 32 hex digits, as core makes them. */
const WHOLE_TAG = new RegExp(`^${TAG_PREFIX}[^:]+:[^:]+:[0-9a-f]{${TAG_MAC_HEX_LENGTH}}`)

/** The tag in the run `bytes[start, end)`: from its first prefix to the run's end, or null. */
function tagIn(bytes: Uint8Array, start: number, end: number): string | null {
  const at = indexOf(bytes, PREFIX_BYTES, start, end)
  // The prefix alone is no tag: the alphabet needs at least one byte after it.
  return at < 0 || end - at <= PREFIX_BYTES.length ? null : bytesToString(bytes.subarray(at, end))
}

/** Printable ASCII without space, as `TAG_SHAPE` admits. */
const isTagByte = (b: number) => b >= 0x21 && b <= 0x7e

function indexOf(haystack: Uint8Array, needle: Uint8Array, from: number, to: number): number {
  outer: for (let i = from; i <= to - needle.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer
    return i
  }
  return -1
}
