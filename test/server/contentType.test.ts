/**
 * Media types are case-insensitive (RFC 9110 8.3.1): a JSON body is read as JSON whatever the case of its
 * Content-Type, and a `+json` type is JSON too. A body of another type is a 400 that says which type to send.
 */
import { beforeAll, expect, test } from 'bun:test'
import { createHarness, expectEnvelope, type Harness } from '../harness.ts'

let h: Harness
beforeAll(async () => {
  h = await createHarness()
})

const path = '/v2/actions/deposit/00000000-0000-4000-8000-000000000000'
const wallet = '0x' + '1'.repeat(40)
const send = (contentType: string | undefined) =>
  h.request('POST', path, {
    rawBody: JSON.stringify({ userAddress: wallet, tokenIn: 'native', amount: '1', distributorId: h.distributorId }),
    headers: contentType === undefined ? {} : { 'content-type': contentType },
  })

test('a JSON body is read whatever the case of its media type, with parameters, and as a +json type', async () => {
  for (const type of ['application/json', 'Application/JSON', 'APPLICATION/JSON; charset=UTF-8', ' application/json ;charset=utf-8', 'application/problem+json']) {
    const r = await send(type)
    // The body was read: the wallet it names is checked (and is no member), not the body's shape.
    expect(r.status, type).toBe(404)
    expect(r.body.context).toEqual({ userAddress: 'not a member' })
  }
})

test('a body of another media type is a 400 naming the type to send', async () => {
  for (const type of ['text/plain', 'application/jsonx', 'application/x-www-form-urlencoded', 'TEXT/PLAIN; charset=utf-8']) {
    const r = await send(type)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(r.body.error).toContain('content-type: application/json')
    expect(r.body.context).toEqual({ 'content-type': `is ${type.split(';')[0]!.toLowerCase()}; must be application/json` })
  }
})

test('so on an operation that takes no fields (pause): no body, or a JSON one, is taken; a form or text is refused', async () => {
  const pause = (p: { rawBody?: string; headers?: Record<string, string> }) => h.request('POST', `/v2/streams/${crypto.randomUUID()}/pause`, p)
  // Taken: the stream is then looked up (and is unknown).
  for (const p of [{}, { rawBody: '{}', headers: { 'content-type': 'application/json' } }]) expect((await pause(p)).status).toBe(404)
  for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
    const r = await pause({ rawBody: 'a=1', headers: { 'content-type': type } })
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(r.body.context).toEqual({ 'content-type': `is ${type}; must be application/json` })
  }
})
