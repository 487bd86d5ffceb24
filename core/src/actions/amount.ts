import { InvalidAmountError } from './errors.ts'

const MAX_UINT256 = 2n ** 256n - 1n

/** A smallest-units amount: base-10 digits only, greater than 0, at most a uint256. */
export function parseAmount(raw: string): bigint {
  if (!/^\d+$/.test(raw)) throw new InvalidAmountError('must be a base-10 integer string of smallest units, such as "1000000"')
  const amount = BigInt(raw)
  if (amount === 0n) throw new InvalidAmountError('must be greater than 0')
  if (amount > MAX_UINT256) throw new InvalidAmountError('does not fit in 256 bits')
  return amount
}
