import { expect, test } from 'bun:test'
import { tvlUsd } from './chain.ts'

test('TVL is total assets in whole tokens times the catalog price, to the cent', () => {
  expect(tvlUsd(1_234_567_891n, 6, 1)).toBe(1234.57)
  expect(tvlUsd(0n, 18, 3000)).toBe(0)
  expect(tvlUsd(15n * 10n ** 17n, 18, 2000)).toBe(3000)
  expect(tvlUsd(1n, 6, 1)).toBe(0)
  expect(tvlUsd(5n, 0, 0.5)).toBe(2.5)
  // A uint256-sized balance keeps its magnitude instead of overflowing to Infinity or losing the exponent.
  expect(tvlUsd(10n ** 70n, 18, 1)).toBeCloseTo(1e52, -40)
})
