import { describe, expect, test } from 'bun:test'
import { bytesToHex, concatHex, encodeFunctionData, erc4626Abi, stringToHex, type Hex } from 'viem'
import { appendTag, findTag } from './tag.ts'

const TAG = 'earn:v1:dist-42:0b8f6c1e-2a8e-4b43-9a39-2d6b0c6f1a77:3f9a0c1b2d4e5f60'
const deposit = encodeFunctionData({ abi: erc4626Abi, functionName: 'deposit', args: [10n ** 6n, '0x70997970c51812dc3a010c7d01b50e0d17dc79c8'] })

describe('appendTag / findTag', () => {
  test('the tag rides after the ABI call and reads back exactly', () => {
    const data = appendTag(deposit, TAG)
    expect(data.startsWith(deposit)).toBe(true)
    expect(data).toBe(concatHex([deposit, stringToHex(TAG)]))
    expect(findTag(data)).toBe(TAG)
  })

  test('an argument word that happens to end in printable bytes is not taken into the tag', () => {
    // The receiver's last bytes spell "ABC", printable like the tag's own alphabet.
    const call = encodeFunctionData({ abi: erc4626Abi, functionName: 'deposit', args: [1n, '0x0000000000000000000000000000000000414243'] })
    expect(findTag(appendTag(call, TAG))).toBe(TAG)
  })

  test('no tag, a tag followed by binary, a bare prefix or a tag with a space is none', () => {
    const cases: Hex[] = [
      deposit,
      '0x',
      concatHex([deposit, stringToHex(TAG), '0x00ff']),
      concatHex([deposit, stringToHex('earn:v1:')]),
      concatHex([deposit, stringToHex('earn:v1:a b')]),
      concatHex([deposit, stringToHex('earn:v2:x')]),
    ]
    for (const data of cases) expect(findTag(data)).toBeNull()
  })

  test('whatever follows a tag is kept: an appended forgery changes the tag, so its MAC fails', () => {
    expect(findTag(concatHex([appendTag(deposit, TAG), stringToHex(':x')]))).toBe(`${TAG}:x`)
    expect(findTag(concatHex([appendTag(deposit, TAG), stringToHex('earn:v1:evil')]))).toBe(`${TAG}earn:v1:evil`)
  })

  test('agrees with the rule as written (the first prefix from which every byte is tag alphabet) on mixed inputs', () => {
    // The rule, tried at every prefix: what findTag must answer, by a different route.
    const byRule = (bytes: Uint8Array): string | null => {
      const text = Buffer.from(bytes).toString('latin1')
      for (let i = text.indexOf('earn:v1:'); i >= 0; i = text.indexOf('earn:v1:', i + 1))
        if (/^earn:v1:[\x21-\x7e]+$/.test(text.slice(i))) return text.slice(i)
      return null
    }
    const pieces = [[...Buffer.from('earn:v1:')], [...Buffer.from('ab')], [0x20], [0x00], [0xff], [...Buffer.from(':')], [...Buffer.from('earn:v')]]
    let seed = 7
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31)
    for (let n = 0; n < 2000; n++) {
      const bytes = Uint8Array.from(Array.from({ length: next() % 12 }, () => pieces[next() % pieces.length]!).flat())
      expect(findTag(bytesToHex(bytes)), Buffer.from(bytes).toString('latin1')).toBe(byRule(bytes))
    }
  })

  test('a sender filling calldata with prefixes gets an answer at once: the search is linear', () => {
    // 1 MiB of prefixes: the search that tested every prefix against the rest took minutes on this much.
    const prefixes = 'earn:v1:'.repeat(128 * 1024)
    expect(findTag(concatHex([stringToHex(prefixes), '0x00']))).toBeNull()
    expect(findTag(concatHex([deposit, stringToHex(prefixes)]))).toBe(prefixes)
  })

  test('a tag outside the tag alphabet is refused before any wallet sees it', () => {
    for (const bad of ['', 'earn:v1:', 'turtle:v1:x', 'earn:v1:é', 'earn:v1:a\nb']) expect(() => appendTag(deposit, bad)).toThrow(/malformed/)
  })
})
