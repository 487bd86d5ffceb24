import { expect, test } from 'bun:test'
import { cutText, hasControlCharacter, quoted } from './errors.ts'
import { UnsupportedChainError } from './actions/errors.ts'

test('a long value is quoted cut at 80 characters with its length; a short one whole', () => {
  expect(quoted('short')).toBe('short')
  expect(quoted('a'.repeat(80))).toBe('a'.repeat(80))
  expect(quoted('a'.repeat(5000))).toBe(`${'a'.repeat(80)}… (5000 characters)`)
})

test('cuts count code points: a surrogate pair is never split, and its length counts it once', () => {
  const emoji = '😀'
  expect(quoted(`${'a'.repeat(79)}${emoji}x`)).toBe(`${'a'.repeat(79)}${emoji}… (81 characters)`)
  expect(cutText(`${emoji.repeat(3)}`, 2)).toBe(`${emoji.repeat(2)}…`)
  // 40 emoji are 80 UTF-16 units but 40 characters: not cut.
  expect(cutText(emoji.repeat(40), 40)).toBe(emoji.repeat(40))
  for (const cut of [quoted(`${'a'.repeat(79)}${emoji}`), cutText(`x${emoji}`, 1)]) expect(cut).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/)
})

test('one line of text: control characters, line separators and bidirectional overrides are refused; other scripts are not', () => {
  for (const text of ['a\nb', 'a\u0085b', 'a\u2028b', 'a\u2029b', 'abc\u202Egpj.exe', 'a\u2066b\u2069']) expect(hasControlCharacter(text), JSON.stringify(text)).toBe(true)
  for (const text of ['Acme', 'Café Olé', '東京', 'עברית', 'emoji 🚀']) expect(hasControlCharacter(text), text).toBe(false)
})

test('control, line-breaking and bidirectional characters come back escaped, counted as sent where cut', () => {
  expect(quoted('a\u202eb\nc\u0000d\u2028e\u2066f')).toBe('a\\u202eb\\u000ac\\u0000d\\u2028e\\u2066f')
  expect(quoted(`\u0007${'a'.repeat(100)}`)).toBe(`\\u0007${'a'.repeat(79)}… (101 characters)`)
  // Other text stays as written, accents and emoji included.
  expect(quoted('café 🙂')).toBe('café 🙂')
})

test("an unsupported chain id is shown escaped: it is the client's own value", () => {
  const e = new UnsupportedChainError('\u202e1\n2', ['evm', 'solana'])
  expect(e.message).toBe('chainId \\u202e1\\u000a2 is not a chain of any ecosystem this server loads (evm, solana)')
})
