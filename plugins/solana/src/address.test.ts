import { describe, expect, test } from 'bun:test'
import { ApiError, InvalidAddressError } from '@earn/core'
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { address, isOffCurveAddress } from '@solana/kit'
import { formatAddress, isValidAddress, parseAddress } from './address.ts'
import { newWallet, toBase58 } from './fixtures.ts'

const bytesOfLength = (n: number) => crypto.getRandomValues(new Uint8Array(n)).with(0, 0x80) // no leading '1'

function rejection(input: string, field?: string): InvalidAddressError {
  try {
    parseAddress(input, field)
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidAddressError)
    return e as InvalidAddressError
  }
  throw new Error(`parseAddress(${JSON.stringify(input)}) did not throw`)
}

describe('address', () => {
  test('a wallet key parses to itself, idempotently, and formats as itself', () => {
    const { address: a } = newWallet()
    expect(isValidAddress(a)).toBe(true)
    expect(parseAddress(a)).toBe(a)
    expect(parseAddress(parseAddress(a))).toBe(a)
    expect(formatAddress(a)).toBe(a)
  })

  test('off-curve program-derived addresses and the System Program are addresses', async () => {
    const [ata] = await findAssociatedTokenPda({
      owner: address(newWallet().address),
      mint: address(newWallet().address),
      tokenProgram: TOKEN_PROGRAM_ADDRESS,
    })
    expect(isOffCurveAddress(ata)).toBe(true)
    expect(parseAddress(ata)).toBe(ata)
    expect(parseAddress('11111111111111111111111111111111')).toBe('11111111111111111111111111111111')
  })

  test('addresses are case-sensitive: another casing is another key or no key', () => {
    const a = 'So11111111111111111111111111111111111111112'
    expect(parseAddress(a)).toBe(a)
    const lower = a.toLowerCase()
    if (isValidAddress(lower)) expect(parseAddress(lower)).not.toBe(a)
    else expect(rejection(lower).status).toBe(400)
  })

  test('rejects the empty string', () => {
    const e = rejection('')
    expect(e.status).toBe(400)
    expect(e.message).toBe('address is not a valid solana address: it is empty')
    expect(e.context).toEqual({ address: 'it is empty' })
  })

  test('rejects characters outside base58, naming the character', () => {
    const valid = newWallet().address
    for (const c of ['0', 'O', 'I', 'l', '-', '+']) {
      const bad = c + valid.slice(1)
      expect(isValidAddress(bad)).toBe(false)
      expect(rejection(bad).message).toContain(`"${c}"`)
    }
    expect(rejection('0x52908400098527886E0F7030069857D2E4169EE7').message).toContain('base58 alphabet')
    // Escaped: a bidi override or a line break shown as it is would reverse the message or forge a log line.
    expect(rejection(`\u202e${valid.slice(1)}`).message).toContain('it contains "\\u202e"')
    expect(rejection(`1\n${valid.slice(2)}`).message).toContain('it contains "\\u000a"')
  })

  test('rejects surrounding whitespace rather than guessing', () => {
    const a = newWallet().address
    expect(rejection(` ${a}`).message).toContain('whitespace')
    expect(rejection(`${a}\n`).message).toContain('whitespace')
  })

  test('rejects keys of 31 and 33 bytes, saying how many bytes they hold', () => {
    expect(rejection(toBase58(bytesOfLength(31))).message).toContain('decodes to 31 bytes; a Solana address is a 32-byte key')
    expect(rejection(toBase58(bytesOfLength(33))).message).toContain('decodes to 33 bytes')
    expect(rejection('z').message).toContain('decodes to 1 byte;')
  })

  test('rejects very long input by its length', () => {
    expect(rejection('2'.repeat(500)).message).toContain('500 characters long')
  })

  test('names the field it was asked about', () => {
    const e = rejection('', 'token')
    expect(e).toBeInstanceOf(ApiError)
    expect(e.context).toEqual({ token: 'it is empty' })
  })
})
