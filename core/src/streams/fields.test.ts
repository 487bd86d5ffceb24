import { describe, expect, test } from 'bun:test'
import { UINT256_MAX } from '../fees.ts'
import { InvalidStreamFieldError } from './errors.ts'
import { parseBudget, parseInstant } from './fields.ts'

const refusal = (f: () => unknown) => {
  try {
    f()
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidStreamFieldError)
    return (e as InvalidStreamFieldError).context
  }
  throw new Error('expected a refusal')
}

describe('stream fields', () => {
  test('budgets: digits only, 1 to 2^256-1', () => {
    expect(parseBudget('1')).toBe(1n)
    expect(parseBudget(UINT256_MAX.toString())).toBe(UINT256_MAX)
    for (const bad of ['0', '1.5', '-1', '1e6', ' 1', '0x10', '', (UINT256_MAX + 1n).toString()]) expect(refusal(() => parseBudget(bad))).toHaveProperty('netBudget')
  })

  test('instants: ISO 8601 with an offset, or epoch seconds', () => {
    expect(parseInstant('2026-01-01T00:00:00Z', 'startTime')).toBe(Date.UTC(2026, 0, 1))
    expect(parseInstant('2026-01-01T05:30:00.5+05:30', 'startTime')).toBe(Date.UTC(2026, 0, 1, 0, 0, 0, 500))
    expect(parseInstant('2024-02-29T00:00Z', 'startTime')).toBe(Date.UTC(2024, 1, 29))
    expect(parseInstant(1_767_225_600, 'endTime')).toBe(Date.UTC(2026, 0, 1))
    for (const bad of ['9999-12-31T23:59:59-01:00', '1970-01-01T00:30:00+01:00'])
      expect(refusal(() => parseInstant(bad, 'endTime'))).toEqual({ endTime: 'must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z once its offset is applied' })
    for (const bad of ['2026-01-01', '2026-01-01T00:00:00', '2026-02-30T00:00:00Z', '2025-02-29T00:00:00Z', '2026-01-01T24:00:00Z', 'tomorrow', 1_767_225_600_000, -1, 1.5])
      expect(refusal(() => parseInstant(bad, 'endTime'))).toHaveProperty('endTime')
  })
})
