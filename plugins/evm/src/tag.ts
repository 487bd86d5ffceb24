/**
 * Attribution on EVM rides in calldata: the tag's ASCII bytes are appended after the ABI-encoded call. The
 * Solidity ABI decoder reads only the arguments it expects and ignores trailing bytes, so the vault behaves
 * exactly as without the tag, while anyone reading the transaction finds it at the end.
 */
import { ApiError } from '@earn/core'
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
 * The tag a transaction's input carries, or null. It is the first `earn:v1:` from which every remaining byte is
 * tag alphabet: ABI words before it are mostly unprintable, so the tag cannot be confused with an argument, and
 * whatever a sender appended after a real tag is returned with it (the server's MAC check then refuses it).
 *
 * Only a prefix inside the input's longest printable tail can start such a run, so that tail is found first and
 * searched once: linear in the input, whatever a sender puts in it (testing every prefix found against the rest
 * of the input was quadratic, and calldata is the sender's to choose).
 */
export function findTag(input: Hex): string | null {
  const bytes = hexToBytes(input)
  let tail = bytes.length
  while (tail > 0 && isTagByte(bytes[tail - 1]!)) tail--
  const start = indexOf(bytes, PREFIX_BYTES, tail)
  // The prefix alone is no tag: the alphabet needs at least one byte after it.
  if (start < 0 || bytes.length - start <= PREFIX_BYTES.length) return null
  return bytesToString(bytes.subarray(start))
}

/** Printable ASCII without space, as `TAG_SHAPE` admits. */
const isTagByte = (b: number) => b >= 0x21 && b <= 0x7e

function indexOf(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  outer: for (let i = from; i <= haystack.length - needle.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer
    return i
  }
  return -1
}
