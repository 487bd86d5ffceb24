import { describe, expect, test } from 'bun:test'
import { ConfigError, parseConfig } from '../config.ts'

describe('STREAM_TREASURIES', () => {
  test('chainId=address pairs, spaces allowed; unset or empty is none', () => {
    expect(parseConfig({}).streamTreasuries).toEqual({})
    expect(parseConfig({ STREAM_TREASURIES: '' }).streamTreasuries).toEqual({})
    expect(parseConfig({ STREAM_TREASURIES: ' 1=0xabc , localnet = Abc123,' }).streamTreasuries).toEqual({ '1': '0xabc', localnet: 'Abc123' })
  })

  test('a malformed entry or a chain named twice stops the start, naming the variable', () => {
    for (const bad of ['1', '=0xabc', '1=', '1=0xabc,1=0xdef'])
      expect(() => parseConfig({ STREAM_TREASURIES: bad })).toThrow(ConfigError)
    expect(() => parseConfig({ STREAM_TREASURIES: '1' })).toThrow(/^STREAM_TREASURIES: /)
  })

  test("keys named like an object's prototype are plain keys (a chain no ecosystem owns), and named twice is refused", () => {
    const treasuries = parseConfig({ STREAM_TREASURIES: 'constructor=a,__proto__=b,1=0xabc' }).streamTreasuries
    expect(Object.entries(treasuries).sort()).toEqual([
      ['1', '0xabc'],
      ['__proto__', 'b'],
      ['constructor', 'a'],
    ])
    expect(() => parseConfig({ STREAM_TREASURIES: 'toString=a,toString=b' })).toThrow('STREAM_TREASURIES: chain "toString" is named twice')
    expect(() => parseConfig({ STREAM_TREASURIES: 'toString=a' })).not.toThrow()
  })
})
