/**
 * Parsing what a stream request says into what core works with: budgets as bigints, instants as epoch
 * milliseconds, pages as numbers. What does not parse is a 400 naming the field.
 */
import { UINT256_MAX } from '../fees.ts'
import { InvalidStreamFieldError } from './errors.ts'

/** A smallest-units budget: base-10 digits only, greater than 0, at most a uint256. */
export function parseBudget(raw: string, field = 'netBudget'): bigint {
  if (!/^\d+$/.test(raw)) throw new InvalidStreamFieldError(field, 'must be a base-10 integer string of smallest units, such as "1000000"')
  const amount = BigInt(raw)
  if (amount === 0n) throw new InvalidStreamFieldError(field, 'must be greater than 0')
  if (amount > UINT256_MAX) throw new InvalidStreamFieldError(field, 'does not fit in 256 bits')
  return amount
}

// Year 9999's last second: keeps every instant printable as ISO 8601, and refuses milliseconds passed as seconds.
const MAX_EPOCH_SECONDS = 253_402_300_799
const ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/

/** ISO 8601 with an explicit offset (a local time would mean a different instant on every server), or epoch seconds. */
export function parseInstant(raw: string | number, field: string): number {
  if (typeof raw === 'number') {
    if (!Number.isSafeInteger(raw) || raw < 0 || raw > MAX_EPOCH_SECONDS)
      throw new InvalidStreamFieldError(field, `must be epoch seconds from 0 to ${MAX_EPOCH_SECONDS} (seconds, not milliseconds)`)
    return raw * 1000
  }
  const m = ISO.exec(raw)
  const invalid = () => new InvalidStreamFieldError(field, 'must be ISO 8601 with an offset, such as "2026-01-01T00:00:00Z", or epoch seconds')
  if (!m) throw invalid()
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map((p) => Number(p ?? 0)) as [number, number, number, number, number, number]
  // Date.parse rolls 30 February over into March; a date that does not exist is refused instead.
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate()
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59) throw invalid()
  const ms = Date.parse(raw)
  if (!Number.isFinite(ms)) throw invalid()
  // A well-formed time whose offset carries it outside the years 1970 to 9999 (UTC), which are what epoch seconds take.
  if (ms < 0 || ms > MAX_EPOCH_SECONDS * 1000 + 999)
    throw new InvalidStreamFieldError(field, 'must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z once its offset is applied')
  return ms
}
