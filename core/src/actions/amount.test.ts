import { expect, test } from 'bun:test'
import { parseAmount } from './amount.ts'
import { InvalidAmountError } from './errors.ts'

test('amounts are base-10 integer strings above 0 that fit in 256 bits', () => {
  expect(parseAmount('1')).toBe(1n)
  expect(parseAmount('007')).toBe(7n)
  expect(parseAmount((2n ** 256n - 1n).toString())).toBe(2n ** 256n - 1n)
  for (const bad of ['0', '00', '', '-1', '+1', '1.0', '1e3', '0x10', ' 1', '1 ', 'one', (2n ** 256n).toString()]) {
    expect(() => parseAmount(bad), bad).toThrow(InvalidAmountError)
  }
})
