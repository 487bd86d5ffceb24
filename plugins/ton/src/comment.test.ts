import { describe, expect, test } from 'bun:test'
import { beginCell } from '@ton/core'
import { commentCell, readComment } from './comment.ts'

describe('text comments', () => {
  test('round-trip, including text longer than one cell and non-ASCII text', () => {
    for (const text of ['', 'earn:v1:a:b:c', 'x'.repeat(500), 'déposé ✓']) expect(readComment(commentCell(text))).toBe(text)
  })

  test('an attribution tag fits one cell', () => {
    const tag = `earn:v1:${'d'.repeat(36)}:${'a'.repeat(36)}:${'m'.repeat(22)}`
    expect(commentCell(tag).refs).toHaveLength(0)
  })

  test('reads from a slice without moving it', () => {
    const s = commentCell('hi').beginParse()
    expect(readComment(s)).toBe('hi')
    expect(s.remainingBits).toBe(32 + 16)
  })

  test('anything that is not a comment is null, never a throw', () => {
    expect(readComment(beginCell().endCell())).toBeNull()
    expect(readComment(beginCell().storeUint(1, 32).storeStringTail('x').endCell())).toBeNull()
    expect(readComment(beginCell().storeUint(0, 32).storeUint(1, 3).endCell())).toBeNull() // not whole bytes
    expect(readComment(beginCell().storeUint(0, 32).storeBuffer(Buffer.from([0xff, 0xfe])).endCell())).toBeNull() // not UTF-8
  })
})
