/**
 * EVM addresses. Identity is the lowercase hex form, so one wallet is one member whatever case it arrives in;
 * responses show EIP-55. Mixed case is a checksum claim and must be right: a typo in a checksummed address is
 * caught here instead of registering a wallet nobody controls.
 */
import { InvalidAddressError } from '@earn/core'
import { getAddress, type Address } from 'viem'

const ECOSYSTEM = 'EVM'
/** Already canonical: the form every address takes after `parse`, so the usual input needs one test. */
const CANONICAL = /^0x[0-9a-f]{40}$/

/** Verdicts on inputs that are not canonical: a checksum check hashes, and one wallet is asked about again and again. */
const verdicts = new Map<string, string | undefined>()
const MAX_VERDICTS = 10_000

/** Why `input` is not an EVM address, or `undefined` when it is one. */
function problem(input: unknown): string | undefined {
  if (typeof input !== 'string') return 'expected a string'
  if (CANONICAL.test(input)) return undefined
  // Only an input of an address's length can need the hash; nothing else is worth remembering.
  if (input.length !== 42) return judge(input)
  if (verdicts.has(input)) return verdicts.get(input)
  const verdict = judge(input)
  if (verdicts.size >= MAX_VERDICTS) verdicts.clear()
  verdicts.set(input, verdict)
  return verdict
}

function judge(input: string): string | undefined {
  if (!input.startsWith('0x')) return 'must start with 0x followed by 40 hexadecimal characters'
  const body = input.slice(2)
  if (!/^[0-9a-fA-F]*$/.test(body)) return 'contains characters that are not hexadecimal (0-9, a-f)'
  if (body.length !== 40) return `has ${body.length} hexadecimal characters after 0x; an EVM address has 40`
  const lower = body.toLowerCase()
  // viem's getAddress would silently re-checksum a wrong mixed-case input, so compare with it instead.
  if (body !== lower && body !== body.toUpperCase() && getAddress(`0x${lower}`) !== input)
    return 'mixed-case address does not match its EIP-55 checksum, so a character is likely mistyped; check it against your wallet'
  return undefined
}

export function isValid(input: string): boolean {
  return problem(input) === undefined
}

/** Canonical form: `0x` + 40 lowercase hex characters. `field` names the request field in the error context. */
export function parse(input: string, field = 'address'): Address {
  const reason = problem(input)
  if (reason !== undefined) throw new InvalidAddressError(ECOSYSTEM, reason, field)
  return input.toLowerCase() as Address
}

/** EIP-55 checksum form, for responses and for messages a wallet shows its user. */
export function format(canonical: string): Address {
  return getAddress(parse(canonical))
}
