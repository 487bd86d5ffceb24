import { describe, expect, test } from 'bun:test'
import { streamFee, UINT256_MAX } from './fees.ts'

const standard = { type: 'token', tier: 'standard' } as const

describe('streamFee', () => {
  test('1.5 % of the net budget, exactly, when it divides', () => {
    expect(streamFee(10_000n, standard)).toBe(150n)
    expect(streamFee(1_000_000_000n, standard)).toBe(15_000_000n)
  })

  test('rounds a fractional unit up', () => {
    expect(streamFee(1n, standard)).toBe(1n) // 0.015 -> 1
    expect(streamFee(66n, standard)).toBe(1n) // 0.99 -> 1
    expect(streamFee(67n, standard)).toBe(2n) // 1.005 -> 2
    expect(streamFee(10_001n, standard)).toBe(151n) // 150.015 -> 151
    expect(streamFee(0n, standard)).toBe(0n)
  })

  test('the largest uint256 budget keeps every digit', () => {
    const fee = streamFee(UINT256_MAX, standard)
    // ceil(x * 150 / 10000) checked against the defining inequality rather than a restated formula.
    expect(fee * 10_000n >= UINT256_MAX * 150n).toBe(true)
    expect((fee - 1n) * 10_000n < UINT256_MAX * 150n).toBe(true)
    expect(fee > 2n ** 249n).toBe(true) // no precision lost to a float anywhere
  })

  test('premium organizations and point streams pay nothing', () => {
    expect(streamFee(1_000_000n, { type: 'token', tier: 'premium' })).toBe(0n)
    expect(streamFee(1_000_000n, { type: 'point', tier: 'standard' })).toBe(0n)
  })

  test('a negative budget is refused', () => {
    expect(() => streamFee(-1n, standard)).toThrow(RangeError)
  })
})
