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
 */
export function findTag(input: Hex): string | null {
  const bytes = hexToBytes(input)
  for (let start = indexOf(bytes, PREFIX_BYTES, 0); start >= 0; start = indexOf(bytes, PREFIX_BYTES, start + 1)) {
    const candidate = bytesToString(bytes.subarray(start))
    if (TAG_SHAPE.test(candidate)) return candidate
  }
  return null
}

function indexOf(haystack: Uint8Array, needle: Uint8Array, from: number): number {
  outer: for (let i = from; i <= haystack.length - needle.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer
    return i
  }
  return -1
}
