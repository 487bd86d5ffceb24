/**
 * TON addresses. One wallet has many spellings: raw `0:<hex>` in any case, and the 48-character
 * user-friendly form whose flags (bounceable, test-only) and alphabet (base64 or base64url) are only
 * presentation. Identity is the raw form with lowercase hex, so every spelling maps to one member.
 */
import { InvalidAddressError } from '@earn/core'
import { Address } from '@ton/core'

// Address.parse is lenient: its raw check is unanchored and Buffer's hex decoder drops bad digits,
// so the shape is checked here first and the library only decodes what already looks right.
const RAW = /^(0|-?[1-9]\d{0,9}):[0-9a-fA-F]{64}$/
const FRIENDLY = /^[A-Za-z0-9+/_-]{48}$/

export type AddressCheck = { ok: true; address: Address } | { ok: false; reason: string }

/** Decodes any accepted spelling of a basechain address; never throws. */
export function checkTonAddress(input: unknown): AddressCheck {
  if (typeof input !== 'string' || input.length === 0)
    return { ok: false, reason: 'expected a raw address 0:<64 hex digits> or a 48-character user-friendly address' }
  let address: Address
  if (RAW.test(input)) {
    address = Address.parseRaw(input)
  } else if (FRIENDLY.test(input)) {
    if (/[+/]/.test(input) && /[-_]/.test(input))
      return { ok: false, reason: 'mixes the base64 and base64url alphabets; copy the address again from the wallet' }
    try {
      address = Address.parseFriendly(input).address
    } catch (e) {
      // The library throws a bare string for an unknown flags byte, hence String(e).
      const text = e instanceof Error ? e.message : String(e)
      return {
        ok: false,
        reason: /checksum/i.test(text)
          ? 'the checksum does not match: the address was mistyped or truncated'
          : 'the first byte is not a known address flag (expected an EQ…, UQ…, kQ… or 0Q… address)',
      }
    }
  } else if (input.includes(':')) {
    return { ok: false, reason: 'a raw address is <workchain>:<64 hex digits>, e.g. 0:83df…' }
  } else {
    return {
      ok: false,
      reason: 'expected a raw address 0:<64 hex digits> or a 48-character user-friendly address (EQ…/UQ…)',
    }
  }
  // Earn's wallets and jettons live on the basechain; a masterchain (-1) address is a validator or
  // system contract, never a user's wallet.
  if (address.workChain !== 0)
    return { ok: false, reason: `workchain ${address.workChain} is not supported; use a basechain (workchain 0) address` }
  return { ok: true, address }
}

export function isValidTonAddress(input: string): boolean {
  return checkTonAddress(input).ok
}

/** Canonical `0:<64 lowercase hex>`, or throws InvalidAddressError naming `field`. */
export function parseTonAddress(input: string, field = 'address'): string {
  return toTonAddress(input, field).toRawString()
}

/** The decoded address, for code that talks to the chain. */
export function toTonAddress(input: string, field = 'address'): Address {
  const r = checkTonAddress(input)
  if (!r.ok) throw new InvalidAddressError('TON', r.reason, field)
  return r.address
}

/**
 * Members are wallets, and TEP-2 and the wallets themselves show wallets non-bounceable (`UQ…`):
 * a bounceable address tells senders to expect a deployed contract, so a transfer to a wallet that is
 * not yet deployed would bounce back. The test-only flag stays off; it does not change identity.
 */
export function formatTonAddress(canonical: string): string {
  return toTonAddress(canonical).toString({ bounceable: false, urlSafe: true, testOnly: false })
}

/**
 * Contracts (vaults, jetton masters) are shown bounceable (`EQ…`), as TEP-2 says for deployed contracts: TON sent
 * to one that fails, or is not there, comes back to its sender.
 */
export function formatTonContract(canonical: string): string {
  return toTonAddress(canonical).toString({ bounceable: true, urlSafe: true, testOnly: false })
}
