/**
 * A Solana address is the base58 spelling of a 32-byte key. It is case-sensitive, so the canonical
 * form is the input itself once it is proven to round-trip; lowercasing would name another key.
 *
 * Parsing does not ask whether the key is on the ed25519 curve: program-derived addresses are
 * deliberately off-curve and are still addresses (token owners, vaults). Whether a key can sign is
 * the signature check's question (signIn.ts).
 */
import { InvalidAddressError, quoted } from '@earn/core'
import { getBase58Decoder, getBase58Encoder } from '@solana/kit'

const BASE58 = /^[1-9A-HJ-NP-Za-km-z]+$/
/** Base58 of 32 bytes never needs more than 44 characters; the slack only sharpens the error. */
const MAX_DECODED_LENGTH = 90

export type ParseAddressResult = { ok: true; address: string; bytes: Uint8Array } | { ok: false; reason: string }

/** The reason an input is not a Solana address, as data, with the decoded key when it is one. */
export function parseAddressBytes(input: string): ParseAddressResult {
  if (typeof input !== 'string' || input.length === 0) return { ok: false, reason: 'it is empty' }
  if (input.trim() !== input) return { ok: false, reason: 'it has leading or trailing whitespace' }
  if (!BASE58.test(input)) {
    const bad = [...input].find((c) => !BASE58.test(c))
    return {
      ok: false,
      reason: `it contains "${quoted(bad!)}", which is not in the base58 alphabet (0, O, I and l are never used)`,
    }
  }
  if (input.length > MAX_DECODED_LENGTH)
    return { ok: false, reason: `it is ${input.length} characters long; a Solana address has 32 to 44` }
  // kit's naming is backwards from intuition: the base58 *encoder* turns a string into bytes.
  const bytes = new Uint8Array(getBase58Encoder().encode(input))
  if (bytes.length !== 32)
    return { ok: false, reason: `it decodes to ${bytes.length} byte${bytes.length === 1 ? '' : 's'}; a Solana address is a 32-byte key` }
  if (getBase58Decoder().decode(bytes) !== input)
    return { ok: false, reason: 'it is not the canonical base58 spelling of its key' }
  return { ok: true, address: input, bytes }
}

export function isValidAddress(input: string): boolean {
  return parseAddressBytes(input).ok
}

export function parseAddress(input: string, field = 'address'): string {
  const r = parseAddressBytes(input)
  if (!r.ok) throw new InvalidAddressError('solana', r.reason, field)
  return r.address
}

/** The canonical form is already what users and explorers show. */
export function formatAddress(canonical: string): string {
  return canonical
}
