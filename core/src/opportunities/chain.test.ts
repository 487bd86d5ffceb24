import { expect, test } from 'bun:test'
import { disagreements, tvlUsd } from './chain.ts'
import type { Listing } from './schema.ts'

test('TVL is total assets in whole tokens times the catalog price, to the cent', () => {
  expect(tvlUsd(1_234_567_891n, 6, 1)).toBe(1234.57)
  expect(tvlUsd(0n, 18, 3000)).toBe(0)
  expect(tvlUsd(15n * 10n ** 17n, 18, 2000)).toBe(3000)
  expect(tvlUsd(1n, 6, 1)).toBe(0)
  expect(tvlUsd(5n, 0, 0.5)).toBe(2.5)
  // A uint256-sized balance keeps its magnitude instead of overflowing to Infinity or losing the exponent.
  expect(tvlUsd(10n ** 70n, 18, 1)).toBeCloseTo(1e52, -40)
})

test('half-cents round up, the price read as the decimal it is written as (no binary fraction below it)', () => {
  // Floating-point gave 1 and 2.68, 1.01 and 0.28 here: the binary values of 1.005, 0.285 fall either side.
  expect(tvlUsd(1_005_000n, 6, 1)).toBe(1.01)
  expect(tvlUsd(2_675_000n, 6, 1)).toBe(2.68)
  expect(tvlUsd(1_015_000n, 6, 1)).toBe(1.02)
  expect(tvlUsd(1n, 0, 0.285)).toBe(0.29)
  expect(tvlUsd(10n ** 24n + 5n * 10n ** 15n, 18, 1)).toBe(1_000_000.01)
  expect(tvlUsd(1_004_999n, 6, 1)).toBe(1)
  // Prices in exponent form: 1.5e-7 USD a token, and a large one.
  expect(tvlUsd(10n ** 9n, 0, 1.5e-7)).toBe(150)
  expect(tvlUsd(2n, 0, 1e21)).toBe(2e21)
})

test("the receipt token's decimals must match the chain's where both say; where the chain does not, the file stands", () => {
  const listing = { baseToken: { symbol: 'USDC' }, receiptToken: { symbol: 'mUSDC', decimals: 6 }, depositTokens: [] } as unknown as Listing
  const facts = { baseToken: '0xa', receiptToken: '0xb', decimals: 6, totalAssets: '0' }
  expect(disagreements(listing, { ...facts, receiptDecimals: 18 })).toEqual(['receiptToken.decimals: the file says 6, the chain says 18'])
  expect(disagreements(listing, { ...facts, receiptDecimals: 6 })).toEqual([])
  expect(disagreements(listing, facts)).toEqual([])
})

test("a deposit token that is the vault's asset must have the chain's decimals; other tokens are the file's", () => {
  const asset = { address: '0xa', symbol: 'USDC', chainId: '1' }
  const listing = { baseToken: { symbol: 'USDC' }, receiptToken: { symbol: 'mUSDC' }, depositTokens: [{ ...asset, decimals: 6 }, { ...asset, address: '0xc', decimals: 18 }, { ...asset, decimals: 18 }] } as unknown as Listing
  const facts = { baseToken: '0xa', receiptToken: '0xb', decimals: 6, totalAssets: '0' }
  expect(disagreements(listing, facts)).toEqual(["depositTokens[2].decimals: the file says 18 for the vault's asset 0xa, the chain says 6"])
})
