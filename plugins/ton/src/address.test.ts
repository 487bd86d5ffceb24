import { describe, expect, test } from 'bun:test'
import { InvalidAddressError } from '@earn/core'
import { Address, crc16 } from '@ton/core'
import { formatTonAddress, isValidTonAddress, parseTonAddress } from './address.ts'

// A hash whose bounceable form has at least two url-safe characters, so the two base64 alphabets
// really differ and one form can mix them.
function addressWithUrlSafeChars(): Address {
  for (let i = 0; ; i++) {
    const a = new Address(0, Buffer.alloc(32, i))
    if ((a.toString({ urlSafe: true, bounceable: true }).match(/[-_]/g) ?? []).length >= 2) return a
  }
}

const wallet = addressWithUrlSafeChars()
const raw = wallet.toRawString()
const hex = raw.slice(2)

const forms = {
  'raw lowercase': `0:${hex}`,
  'raw uppercase': `0:${hex.toUpperCase()}`,
  'raw mixed case': `0:${hex.slice(0, 32).toUpperCase()}${hex.slice(32)}`,
  'EQ bounceable base64url': wallet.toString({ bounceable: true, urlSafe: true }),
  'EQ bounceable base64': wallet.toString({ bounceable: true, urlSafe: false }),
  'UQ non-bounceable base64url': wallet.toString({ bounceable: false, urlSafe: true }),
  'UQ non-bounceable base64': wallet.toString({ bounceable: false, urlSafe: false }),
  'kQ testnet bounceable': wallet.toString({ bounceable: true, testOnly: true }),
  '0Q testnet non-bounceable': wallet.toString({ bounceable: false, testOnly: true }),
}

describe('TON address', () => {
  test('the fixture really exercises both alphabets and all four flag prefixes', () => {
    expect(forms['EQ bounceable base64url']).toStartWith('EQ')
    expect(forms['UQ non-bounceable base64url']).toStartWith('UQ')
    expect(forms['kQ testnet bounceable']).toStartWith('kQ')
    expect(forms['0Q testnet non-bounceable']).toStartWith('0Q')
    const all = Object.values(forms).join('')
    expect(all).toMatch(/[-_]/)
    expect(all).toMatch(/[+/]/)
  })

  for (const [name, form] of Object.entries(forms)) {
    test(`${name} parses to the one raw form`, () => {
      expect(isValidTonAddress(form)).toBe(true)
      expect(parseTonAddress(form)).toBe(raw)
    })
  }

  test('canonical form is 0:<64 lowercase hex> and parse is idempotent', () => {
    expect(raw).toMatch(/^0:[0-9a-f]{64}$/)
    expect(parseTonAddress(raw)).toBe(raw)
  })

  test('format gives the non-bounceable UQ form, which parses back', () => {
    const shown = formatTonAddress(raw)
    expect(shown).toBe(forms['UQ non-bounceable base64url'])
    expect(shown).toStartWith('UQ')
    expect(parseTonAddress(shown)).toBe(raw)
  })

  test('a masterchain (-1) address is rejected in raw and friendly form', () => {
    const master = new Address(-1, wallet.hash)
    for (const form of [master.toRawString(), master.toString(), master.toString({ bounceable: false })]) {
      expect(isValidTonAddress(form)).toBe(false)
      expect(() => parseTonAddress(form)).toThrow('workchain -1 is not supported; use a basechain (workchain 0) address')
    }
  })

  test('a friendly address with a broken checksum is rejected', () => {
    const good = forms['UQ non-bounceable base64url']
    const bad = good.slice(0, -1) + (good.endsWith('A') ? 'B' : 'A')
    expect(isValidTonAddress(bad)).toBe(false)
    let thrown: unknown
    try {
      parseTonAddress(bad)
    } catch (e) {
      thrown = e
    }
    expect(thrown).toBeInstanceOf(InvalidAddressError)
    const error = thrown as InvalidAddressError
    expect(error.status).toBe(400)
    expect(error.message).toBe(
      'address is not a valid TON address: the checksum does not match: the address was mistyped or truncated',
    )
    expect(error.context).toEqual({ address: 'the checksum does not match: the address was mistyped or truncated' })
  })

  test('an unknown flags byte with a valid checksum is rejected', () => {
    const body = Buffer.concat([Buffer.from([0x22, 0x00]), wallet.hash])
    const forged = Buffer.concat([body, crc16(body)]).toString('base64url')
    expect(forged).toHaveLength(48)
    expect(() => parseTonAddress(forged)).toThrow('the first byte is not a known address flag')
  })

  test('one changed hash character in a friendly form breaks the checksum', () => {
    const good = forms['EQ bounceable base64url']
    const i = 20
    const bad = good.slice(0, i) + (good[i] === 'x' ? 'y' : 'x') + good.slice(i + 1)
    expect(() => parseTonAddress(bad)).toThrow('checksum does not match')
  })

  test('garbage is rejected with a reason, never a crash', () => {
    const garbage = [
      '',
      'hello',
      `0:${hex.slice(1)}`, // 63 digits
      `0:${hex}0`, // 65 digits
      `0:${hex.slice(0, 63)}g`, // Buffer's hex decoder would silently drop this digit
      `00:${hex}`,
      ` 0:${hex}`,
      `${forms['EQ bounceable base64url']} `,
      forms['EQ bounceable base64url'].slice(1),
      `0x${hex}`,
      'EQ' + '!'.repeat(46),
    ]
    for (const input of garbage) {
      expect(isValidTonAddress(input)).toBe(false)
      expect(() => parseTonAddress(input)).toThrow(InvalidAddressError)
    }
  })

  test('an address mixing the two base64 alphabets is rejected', () => {
    const url = forms['EQ bounceable base64url']
    const mixed = url.replace(/[-_]/, (c) => (c === '-' ? '+' : '/'))
    expect(mixed).toMatch(/[-_]/)
    expect(mixed).toMatch(/[+/]/)
    expect(() => parseTonAddress(mixed)).toThrow('mixes the base64 and base64url alphabets')
  })

  test('the error names the field it was given', () => {
    try {
      parseTonAddress('nope', 'owner')
      throw new Error('unreachable')
    } catch (e) {
      expect(e).toBeInstanceOf(InvalidAddressError)
      expect((e as InvalidAddressError).context).toHaveProperty('owner')
    }
  })
})
