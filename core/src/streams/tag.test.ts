import { describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import { verifyTag } from '../attribution.ts'
import { parseStreamTag, streamTag, verifyStreamTag } from './tag.ts'

const secret = 'a-long-enough-test-secret'
const subject = { streamId: '5b0c1f2e-3d4a-4b5c-8d6e-7f8091a2b3c4', wallet: '0x' + 'ab'.repeat(20), chainId: '31337' }

describe('stream funding tags', () => {
  test('earn:v1:stream:<streamId>:<first 16 bytes of the HMAC over the labelled stream, wallet and chain>', () => {
    const tag = streamTag(secret, subject)
    const mac = createHmac('sha256', secret).update(`stream-funding|${subject.streamId}|${subject.wallet}|${subject.chainId}`).digest('hex').slice(0, 32)
    expect(tag).toBe(`earn:v1:stream:${subject.streamId}:${mac}`)
    expect(parseStreamTag(tag)).toEqual({ streamId: subject.streamId, mac })
  })

  test('verifies for its stream, wallet and chain only, and not under another secret', () => {
    const tag = streamTag(secret, subject)
    expect(verifyStreamTag(secret, tag, subject)).toBe(true)
    expect(verifyStreamTag(secret, tag, { ...subject, wallet: '0x' + 'cd'.repeat(20) })).toBe(false)
    expect(verifyStreamTag(secret, tag, { ...subject, chainId: '1' })).toBe(false)
    expect(verifyStreamTag(secret, tag, { ...subject, streamId: '00000000-0000-4000-8000-000000000000' })).toBe(false)
    expect(verifyStreamTag('another-secret-of-length', tag, subject)).toBe(false)
  })

  test('an edited MAC or stream id does not verify; what does not parse is refused', () => {
    const tag = streamTag(secret, subject)
    const flip = (s: string) => s.slice(0, -1) + (s.endsWith('0') ? '1' : '0')
    expect(verifyStreamTag(secret, flip(tag), subject)).toBe(false)
    const edited = tag.replace(subject.streamId, flip(subject.streamId))
    expect(verifyStreamTag(secret, edited, { ...subject, streamId: flip(subject.streamId) })).toBe(false)
    const mac = parseStreamTag(tag)!.mac
    for (const bad of ['', `earn:v1:${subject.streamId}:${mac}`, `earn:v1:stream:${subject.streamId}`, `earn:v1:stream::${mac}`, `earn:v1:stream:${subject.streamId}:${mac}:x`, `earn:v1:stream:${subject.streamId}:${mac.toUpperCase()}`, `earn:v1:stream:x\u0000y:${mac}`, `earn:v1:stream:not-a-stream-id:${mac}`])
      expect(parseStreamTag(bad)).toBeUndefined()
  })

  test('a funding tag is not an attribution tag that verifies', () => {
    const tag = streamTag(secret, subject)
    expect(verifyTag(secret, tag, subject)).toBe(false)
  })

  test('a stream id with a colon cannot make a tag', () => {
    expect(() => streamTag(secret, { ...subject, streamId: 'a:b' })).toThrow()
  })
})
