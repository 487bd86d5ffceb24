import { describe, expect, test } from 'bun:test'
import { bytesToHex, concatHex, encodeFunctionData, erc4626Abi, parseAbi, stringToHex, type Hex } from 'viem'
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
      concatHex([deposit, stringToHex(TAG), '0xff00']),
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

  test('agrees with the rule as written (a tag at the end, else the first run from a prefix that a zero byte ends) on mixed inputs', () => {
    // The rule, tried at every prefix: what findTag must answer, by a different route.
    const byRule = (bytes: Uint8Array): string | null => {
      const text = Buffer.from(bytes).toString('latin1')
      const prefixes: number[] = []
      for (let i = text.indexOf('earn:v1:'); i >= 0; i = text.indexOf('earn:v1:', i + 1)) prefixes.push(i)
      for (const i of prefixes) if (/^earn:v1:[\x21-\x7e]+$/.test(text.slice(i))) return text.slice(i)
      for (const i of prefixes) {
        const run = /^earn:v1:[\x21-\x7e]+/.exec(text.slice(i))
        // A prefix inside a run is no start: the run's own first prefix is.
        if (run && text[i + run[0].length] === '\0' && prefixes.every((p) => p >= i || /[^\x21-\x7e]/.test(text.slice(p, i)))) return run[0]
      }
      return null
    }
    const pieces = [[...Buffer.from('earn:v1:')], [...Buffer.from('ab')], [0x20], [0x00], [0xff], [...Buffer.from(':')], [...Buffer.from('earn:v')]]
    let seed = 7
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31)
    let nested = 0
    for (let n = 0; n < 4000; n++) {
      const bytes = Uint8Array.from(Array.from({ length: next() % 12 }, () => pieces[next() % pieces.length]!).flat())
      const found = findTag(bytesToHex(bytes))
      expect(found, Buffer.from(bytes).toString('latin1')).toBe(byRule(bytes))
      if (found !== null && !Buffer.from(bytes).toString('latin1').endsWith(found)) nested++
    }
    // The inputs reach both halves of the rule.
    expect(nested).toBeGreaterThan(50)
  })

  test('the built call inside a contract wallet call (its bytes argument, zero padded, more arguments after) yields the tag', () => {
    const walletAbi = parseAbi(['function execute(address to, uint256 value, bytes data)', 'function execTransaction(address to, uint256 value, bytes data, uint8 operation, bytes signatures)'])
    const vault = '0x5fbdb2315678afecb367f032d93f642f64180aa3'
    const inner = appendTag(deposit, TAG)
    const execute = encodeFunctionData({ abi: walletAbi, functionName: 'execute', args: [vault, 0n, inner] })
    const safe = encodeFunctionData({ abi: walletAbi, functionName: 'execTransaction', args: [vault, 0n, inner, 0, `0x${'ab'.repeat(65)}`] })
    // Twice nested, as an ERC-4337 account's call inside handleOps.
    const twice = encodeFunctionData({ abi: walletAbi, functionName: 'execTransaction', args: [vault, 0n, execute, 0, '0x'] })
    for (const data of [execute, safe, twice]) expect(findTag(data)).toBe(TAG)
    // A tag of a whole number of words has no padding: the next argument's word starts with zero bytes all the same.
    const wordTag = `earn:v1:${'x'.repeat(64 - 8 - (deposit.length - 2) / 2 % 32)}`
    expect((((deposit.length - 2) / 2 + wordTag.length) % 32)).toBe(0)
    expect(findTag(encodeFunctionData({ abi: walletAbi, functionName: 'execTransaction', args: [vault, 0n, appendTag(deposit, wordTag), 0, '0x01'] }))).toBe(wordTag)
    // A tag at the end of the input is the direct call's, and wins over one nested in its arguments.
    expect(findTag(appendTag(execute, `${TAG}0`))).toBe(`${TAG}0`)
    // Nested, a tag followed by anything but a zero byte is none.
    expect(findTag(concatHex([deposit, stringToHex(TAG), '0x0100']))).toBeNull()
  })

  test('a whole tag (both ids and a 32-digit MAC) is read without what the wallet appended after it', () => {
    const whole = `earn:v1:${crypto.randomUUID()}:${crypto.randomUUID()}:${'0123456789abcdef'.repeat(2)}`
    const built = appendTag(deposit, whole)
    const appended: Hex[] = [
      // ERC-8021 builder code: ASCII codes (starting with hex letters), length, schema id, marker.
      `${built}${stringToHex('bc_abc123').slice(2)}0900${'8021'.repeat(8)}`,
      concatHex([built, stringToHex(' junk')]),
      concatHex([built, stringToHex(':x')]),
      concatHex([built, '0xff00']),
      concatHex([built, stringToHex('beef')]),
    ]
    for (const data of appended) expect(findTag(data), data).toBe(whole)
    // A tag without a whole MAC is found as it stands at the end (its MAC check refuses it), and is none before binary.
    const short = whole.slice(0, -1)
    expect(findTag(appendTag(deposit, short))).toBe(short)
    expect(findTag(concatHex([appendTag(deposit, short), '0xff']))).toBeNull()
    // A zero-ended run still comes first, then the input's first whole tag: a later one does not replace it.
    const other = `${whole.slice(0, -32)}${'f'.repeat(32)}`
    expect(findTag(concatHex([stringToHex(whole), '0xff', stringToHex(other), '0xff']))).toBe(whole)
    expect(findTag(concatHex([stringToHex(other), '0xff', stringToHex(whole), '0x00']))).toBe(whole)
  })

  test('a sender filling calldata with prefixes gets an answer at once: the search is linear', () => {
    // 1 MiB of prefixes: the search that tested every prefix against the rest took minutes on this much.
    const prefixes = 'earn:v1:'.repeat(128 * 1024)
    // Compared as booleans: a failure must not print a megabyte.
    expect(findTag(concatHex([stringToHex(prefixes), '0xff'])) === null).toBe(true)
    expect(findTag(concatHex([stringToHex(prefixes), '0x00'])) === prefixes).toBe(true)
    expect(findTag(concatHex([deposit, stringToHex(prefixes)])) === prefixes).toBe(true)
  })

  test('a tag outside the tag alphabet is refused before any wallet sees it', () => {
    for (const bad of ['', 'earn:v1:', 'turtle:v1:x', 'earn:v1:é', 'earn:v1:a\nb']) expect(() => appendTag(deposit, bad)).toThrow(/malformed/)
  })
})
