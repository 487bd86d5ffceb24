import { describe, expect, test } from 'bun:test'
import { concatHex, encodeFunctionData, erc4626Abi, stringToHex, type Hex } from 'viem'
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

  test('a tag outside the tag alphabet is refused before any wallet sees it', () => {
    for (const bad of ['', 'earn:v1:', 'turtle:v1:x', 'earn:v1:é', 'earn:v1:a\nb']) expect(() => appendTag(deposit, bad)).toThrow(/malformed/)
  })
})
