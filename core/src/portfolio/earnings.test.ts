import { describe, expect, test } from 'bun:test'
import { earningsOf, hasHistory } from './earnings.ts'

describe('earningsOf', () => {
  test('earned is the current value minus what went in net, exactly, beyond 2^53', () => {
    const deposited = 2n ** 200n + 12_345n
    expect(earningsOf({ deposited, withdrawn: 45n }, deposited + 1_000n)).toEqual({
      netDeposited: (deposited - 45n).toString(),
      currentValue: (deposited + 1_000n).toString(),
      earned: '1045',
    })
  })

  test('signs are kept: net negative after taking yield out, earned negative after a loss', () => {
    expect(earningsOf({ deposited: 100n, withdrawn: 130n }, 0n)).toEqual({ netDeposited: '-30', currentValue: '0', earned: '30' })
    expect(earningsOf({ deposited: 100n, withdrawn: 0n }, 90n)).toEqual({ netDeposited: '100', currentValue: '90', earned: '-10' })
  })

  test('without flows neither figure is known: null, not zero', () => {
    expect(earningsOf(null, 77n)).toEqual({ netDeposited: null, currentValue: '77', earned: null })
  })
})

describe('hasHistory', () => {
  test('a position now, or deposits or withdrawals in the past', () => {
    expect(hasHistory(null, 1n)).toBe(true)
    expect(hasHistory({ deposited: 0n, withdrawn: 0n }, 0n)).toBe(false)
    expect(hasHistory({ deposited: 5n, withdrawn: 5n }, 0n)).toBe(true)
    expect(hasHistory(null, 0n)).toBe(false)
  })
})
