import { describe, expect, test } from 'bun:test'
import { ApiError, InvalidAddressError } from '@earn/core'
import type { Address } from 'viem'
import { format, isValid, parse } from './address.ts'

// The EIP-55 test vector from the EIP itself.
const CHECKSUMMED: Address = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
const LOWER = CHECKSUMMED.toLowerCase() as Address
const UPPER = `0x${CHECKSUMMED.slice(2).toUpperCase()}`

function rejection(input: string): InvalidAddressError {
  try {
    parse(input)
  } catch (e) {
    if (e instanceof InvalidAddressError) return e
    throw e
  }
  throw new Error(`parse(${input}) did not throw`)
}

describe('address.parse', () => {
  test('checksummed, lowercase and uppercase forms give one lowercase canonical address', () => {
    expect(parse(CHECKSUMMED)).toBe(LOWER)
    expect(parse(LOWER)).toBe(LOWER)
    expect(parse(UPPER)).toBe(LOWER)
    expect(parse(parse(CHECKSUMMED))).toBe(LOWER)
  })

  test('a mixed-case address with a wrong checksum is refused, not silently re-checksummed', () => {
    const typo = CHECKSUMMED.replace('aAeb', 'aAEb')
    expect(typo).not.toBe(CHECKSUMMED)
    expect(isValid(typo)).toBe(false)
    const e = rejection(typo)
    expect(e).toBeInstanceOf(ApiError)
    expect(e.status).toBe(400)
    expect(e.code).toBe('INVALID_ARGUMENT')
    expect(e.message).toContain('EIP-55 checksum')
    expect(e.context).toEqual({ address: expect.stringContaining('mistyped') })
    // Verdicts are remembered: asked again, each form keeps its own.
    expect(isValid(typo)).toBe(false)
    expect(parse(CHECKSUMMED)).toBe(LOWER)
    expect(() => parse(typo)).toThrow('EIP-55 checksum')
  })

  test.each([
    ['', 'must start with 0x'],
    ['5aaeb6053f3e94c9b9a09f33669435e7ef1beaed', 'must start with 0x'],
    ['0X5AAEB6053F3E94C9B9A09F33669435E7EF1BEAED', 'must start with 0x'],
    ['0x5aaeb6053f3e94c9b9a09f33669435e7ef1beae', 'has 39 hexadecimal characters'],
    ['0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed00', 'has 42 hexadecimal characters'],
    ['0xzaaeb6053f3e94c9b9a09f33669435e7ef1beaed', 'not hexadecimal'],
    [' 0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed', 'must start with 0x'],
    ['vitalik.eth', 'must start with 0x'],
    ['So11111111111111111111111111111111111111112', 'must start with 0x'],
  ])('refuses %p with a reason (%s)', (input, reason) => {
    expect(isValid(input)).toBe(false)
    const e = rejection(input)
    expect(e.status).toBe(400)
    expect(e.message).toStartWith('address is not a valid EVM address: ')
    expect(e.message).toContain(reason)
  })

  test('names the request field it was given', () => {
    try {
      parse('0x12', 'token')
      throw new Error('unreachable')
    } catch (e) {
      expect((e as ApiError).context).toEqual({ token: expect.stringContaining('has 2 hexadecimal characters') })
    }
  })
})

describe('address.isValid', () => {
  test('accepts every documented form', () => {
    for (const form of [CHECKSUMMED, LOWER, UPPER]) expect(isValid(form)).toBe(true)
  })

  test('never throws on non-string input', () => {
    expect(isValid(undefined as unknown as string)).toBe(false)
    expect(isValid(42 as unknown as string)).toBe(false)
  })
})

describe('address.format', () => {
  test('gives the EIP-55 form of a canonical address, which parses back to it', () => {
    expect(format(LOWER)).toBe(CHECKSUMMED)
    expect(parse(format(LOWER))).toBe(LOWER)
  })

  test('refuses what is not an address', () => {
    expect(() => format('0x1234')).toThrow(InvalidAddressError)
  })
})
