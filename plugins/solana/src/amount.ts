/**
 * Amounts on Solana are u64 smallest units; the API gives them as bigints already parsed.
 */
import { InvalidArgumentError } from '@earn/core'

const U64_MAX = 2n ** 64n - 1n
export const SOL_DECIMALS = 9

/** The token program's encoder would throw a RangeError past u64; a 400 names the field instead. */
export function assertU64Amount(amount: bigint): bigint {
  if (amount <= 0n || amount > U64_MAX)
    throw new InvalidArgumentError('amount must be a positive integer that fits in 64 bits', {
      amount: 'must be between 1 and 18446744073709551615 smallest units',
    })
  return amount
}

/** `1500000` with 6 decimals is `1.5`: for descriptions a user reads in a wallet prompt. */
export function formatUnits(amount: bigint, decimals: number): string {
  const digits = amount.toString().padStart(decimals + 1, '0')
  if (decimals === 0) return digits
  const fraction = digits.slice(-decimals).replace(/0+$/, '')
  return fraction ? `${digits.slice(0, -decimals)}.${fraction}` : digits.slice(0, -decimals)
}
