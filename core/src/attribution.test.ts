import { describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { ATTRIBUTION_SECRET_SETTING, attributionSecretSource, attributionTag, parseTag, verifyTag } from './attribution.ts'
import { createStore } from './store/store.ts'

const secret = 'a-long-enough-test-secret'
const subject = { distributorId: '6f1c2d3e-aaaa-4bbb-8ccc-111122223333', actionId: '0e9d8c7b-dddd-4eee-9fff-444455556666', wallet: '0x' + 'ab'.repeat(20), chainId: '31337' }

describe('attribution tags', () => {
  test('the tag is earn:v1:<distributor>:<action>:<first 16 bytes of the HMAC over the four fields>', () => {
    const tag = attributionTag(secret, subject)
    const mac = createHmac('sha256', secret).update(`${subject.distributorId}|${subject.actionId}|${subject.wallet}|${subject.chainId}`).digest('hex').slice(0, 32)
    expect(tag).toBe(`earn:v1:${subject.distributorId}:${subject.actionId}:${mac}`)
    expect(parseTag(tag)).toEqual({ distributorId: subject.distributorId, actionId: subject.actionId, mac })
  })

  test('verifies for its wallet and chain only, and not under another secret', () => {
    const tag = attributionTag(secret, subject)
    expect(verifyTag(secret, tag, subject)).toBe(true)
    expect(verifyTag(secret, tag, { ...subject, wallet: '0x' + 'cd'.repeat(20) })).toBe(false)
    expect(verifyTag(secret, tag, { ...subject, chainId: '1' })).toBe(false)
    expect(verifyTag('another-secret-of-length', tag, subject)).toBe(false)
  })

  test('an edited distributor, action or MAC does not verify; a tag that does not parse is refused', () => {
    const tag = attributionTag(secret, subject)
    const [prefix, version, distributor, action, mac] = tag.split(':') as [string, string, string, string, string]
    const flip = (s: string) => s.slice(0, -1) + (s.endsWith('0') ? '1' : '0')
    for (const edited of [
      [prefix, version, flip(distributor), action, mac],
      [prefix, version, distributor, flip(action), mac],
      [prefix, version, distributor, action, flip(mac)],
    ])
      expect(verifyTag(secret, edited.join(':'), subject)).toBe(false)
    for (const bad of ['', 'earn:v2:a:b:' + mac, `earn:v1:${distributor}:${action}`, `earn:v1:${distributor}:${action}:${mac}:extra`, `earn:v1::${action}:${mac}`, `earn:v1:${distributor}:${action}:${mac.toUpperCase()}`])
      expect(parseTag(bad)).toBeUndefined()
    expect(verifyTag(secret, 'earn:v1:x', subject)).toBe(false)
  })

  test("a stream funding tag (earn:v1:stream:<stream>:<mac>) is not an action tag", () => {
    expect(parseTag(`earn:v1:stream:${subject.actionId}:${'ab'.repeat(16)}`)).toBeUndefined()
    expect(() => attributionTag(secret, { ...subject, distributorId: 'stream' })).toThrow()
  })

  test('ids with a colon cannot make a tag (it would not parse back)', () => {
    expect(() => attributionTag(secret, { ...subject, distributorId: 'a:b' })).toThrow()
  })
})

describe('the attribution secret', () => {
  test('a configured secret is used as is; none: one is generated once and kept in the store', async () => {
    const store = createStore({ engine: 'sqlite', path: ':memory:' })
    await store.migrate(0)
    expect(await attributionSecretSource(store, secret)()).toBe(secret)
    expect(await store.getSetting(ATTRIBUTION_SECRET_SETTING)).toBeUndefined()
    const first = await attributionSecretSource(store, undefined)()
    expect(first).toMatch(/^[0-9a-f]{64}$/)
    // A restart (a new source over the same store) finds the same secret, so old tags still verify.
    expect(await attributionSecretSource(store, undefined)()).toBe(first)
    expect(await store.getSetting(ATTRIBUTION_SECRET_SETTING)).toBe(first)
    await store.close()
  })
})
