import { describe, expect, test } from 'bun:test'
import { InvalidArgumentError } from '@earn/core'
import type { Address } from '@solana/kit'
import { LEGACY_MEMO_PROGRAM_ADDRESS_V1, LEGACY_MEMO_PROGRAM_ADDRESS_V3, MEMO_PROGRAM_ADDRESS } from '@solana-program/memo'
import { TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { formatUnits } from './amount.ts'
import { findTag, tagInstruction } from './tag.ts'

const text = (s: string) => new TextEncoder().encode(s)

describe('tag memos', () => {
  test('the tag is the memo instruction data, for Memo v3 (which token programs read before a transfer), with no signer accounts', () => {
    const ix = tagInstruction('earn:v1:a:b:c')
    expect(ix.programAddress).toBe(LEGACY_MEMO_PROGRAM_ADDRESS_V3)
    expect(new TextDecoder().decode(ix.data as Uint8Array)).toBe('earn:v1:a:b:c')
    expect(ix.accounts ?? []).toEqual([])
  })

  test('refuses what is not an attribution tag', () => {
    for (const bad of ['', 'earn:v2:a', 'earn:v1:é', 'earn:v1:line\nbreak', `earn:v1:${'a'.repeat(260)}`])
      expect(() => tagInstruction(bad)).toThrow(InvalidArgumentError)
  })

  test('finds the first attribution memo under any Memo program, ignoring other programs and memos', () => {
    const ixs = [
      { programAddress: TOKEN_PROGRAM_ADDRESS, data: text('earn:v1:not-a-memo') },
      { programAddress: MEMO_PROGRAM_ADDRESS, data: text('hello') },
      { programAddress: MEMO_PROGRAM_ADDRESS },
      { programAddress: LEGACY_MEMO_PROGRAM_ADDRESS_V1, data: text('earn:v1:first') },
      { programAddress: MEMO_PROGRAM_ADDRESS, data: text('earn:v1:second') },
    ]
    expect(findTag(ixs)).toBe('earn:v1:first')
    expect(findTag(ixs.slice(0, 3))).toBeNull()
    expect(findTag([{ programAddress: 'Memo1111111111111111111111111111111111111111' as Address, data: text('earn:v1:x') }])).toBeNull()
  })
})

test('formatUnits', () => {
  expect(formatUnits(1_500_000n, 6)).toBe('1.5')
  expect(formatUnits(1n, 6)).toBe('0.000001')
  expect(formatUnits(2_000_000n, 6)).toBe('2')
  expect(formatUnits(0n, 9)).toBe('0')
  expect(formatUnits(42n, 0)).toBe('42')
})
