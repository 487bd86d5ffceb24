import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { issueKey, revokeKey } from '@earn/core'
import { createMemoryMeter } from '@earn/core/metering/memory'
import { createHarness, expectEnvelope, type Harness } from '../harness.ts'

const addr = '0x000000000000000000000000000000000000dEaD'
let h: Harness
beforeAll(async () => {
  h = await createHarness()
})
afterAll(() => h.close())

describe('API keys', () => {
  test('a missing key is 401 with the envelope', async () => {
    const r = await h.get(`/v2/membership/?address=${addr}`, { key: null })
    expect(r.status).toBe(401)
    expect(r.body).toEqual({ code: 401, status: 'UNAUTHORIZED', error: expect.stringContaining('X-API-Key'), context: {} })
  })

  test('a key sent twice (joined by a comma), or too long, is named as malformed, not as unknown', async () => {
    const malformed = [`${h.org.secretKey}, ${h.org.secretKey}`, h.org.secretKey + '1'.repeat(128), `${h.org.secretKey}0`, 'pk_live_0OIl']
    for (const key of malformed) {
      const r = await h.get(`/v2/membership/?address=${addr}`, { key })
      expectEnvelope(r.body, 401, 'UNAUTHORIZED')
      expect(r.body.error).toContain('sent in one X-API-Key header')
    }
  })

  test('unknown, malformed and revoked keys are 401', async () => {
    for (const key of ['sk_live_' + 'x'.repeat(44), 'not-a-key', 'pk_live_']) {
      const r = await h.get(`/v2/membership/?address=${addr}`, { key })
      expect(r.status).toBe(401)
      expectEnvelope(r.body, 401, 'UNAUTHORIZED')
    }
    const { key, keyId } = await issueKey(h.deps, h.org.orgId, 'secret')
    expect((await h.get(`/v2/membership/?address=${addr}`, { key })).status).toBe(200)
    await h.store.revokeKey(keyId, Date.now())
    // The harness caches verified keys for KEY_CACHE_SECONDS (2 s by default); revocation shows within it.
    await Bun.sleep(2100)
    const r = await h.get(`/v2/membership/?address=${addr}`, { key })
    expect(r.status).toBe(401)
    expect(r.body.error).toContain('revoked')
  })

  test('a publishable key reads and asks for agreements, but cannot create', async () => {
    const pk = h.org.publishableKey
    expect((await h.get(`/v2/membership/?address=${addr}`, { key: pk })).status).toBe(200)
    const agreement = await h.post('/v2/membership/agreement', { address: addr, walletEcosystem: 'evm', url: 'https://app.example.com' }, { key: pk })
    expect(agreement.status).toBe(200)
    const create = await h.post(
      '/v2/membership/',
      { address: addr, walletEcosystem: 'evm', signature: '0x00', nonce: agreement.body.nonce },
      { key: pk },
    )
    expect(create.status).toBe(401)
    expect(create.body).toMatchObject({ code: 401, status: 'UNAUTHORIZED', error: expect.stringContaining('sk_live_') })
  })

  test('a secret key may call publishable endpoints too', async () => {
    expect((await h.get(`/v2/membership/?address=${addr}`, { key: h.org.secretKey })).status).toBe(200)
  })

  test('a key of one kind presented with the other prefix is not accepted', async () => {
    const swapped = 'pk_live_' + h.org.secretKey.slice('sk_live_'.length)
    expect((await h.get(`/v2/membership/?address=${addr}`, { key: swapped })).status).toBe(401)
  })

  test('a request without a valid key is 401 even when its body is malformed', async () => {
    const r = await h.request('POST', '/v2/membership/agreement', { key: null, rawBody: '{not json' })
    expect(r.status).toBe(401)
  })
})

describe('a key revoked while its request body is still arriving', () => {
  test('is refused (401, nothing charged) once the body is in, as any later request on it', async () => {
    const memory = createMemoryMeter()
    // Charges only: a body sent without a length has its key's budget looked at first (a cost-0 admit, parse.ts).
    const admitted: string[] = []
    const meter = { ...memory, kind: memory.kind, ping: () => memory.ping(), close: () => memory.close(), admit: (p: Parameters<typeof memory.admit>[0]) => (p.cost > 0 && admitted.push(p.keyId), memory.admit(p)) }
    const h = await createHarness({ env: { KEY_CACHE_SECONDS: '0' }, meter })
    try {
      const { key } = await issueKey({ store: h.store, clock: h.deps.clock }, h.org.orgId, 'secret', { hourlyBudget: null, monthlyBudget: null })
      const before = await h.post('/v2/streams/00000000-0000-4000-8000-000000000000/pause', {}, { key })
      expect(before.status).toBe(404)
      expect(admitted).toHaveLength(1)
      let sent = false
      // The body's first chunk is asked for after the headers were taken: the key is revoked then, the body sent after.
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          if (sent) return controller.close()
          sent = true
          await revokeKey({ store: h.store, clock: h.deps.clock }, { key })
          controller.enqueue(new TextEncoder().encode('{}'))
        },
      })
      const request = new Request('http://localhost/v2/streams/00000000-0000-4000-8000-000000000000/pause', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body,
        // @ts-expect-error: Bun accepts the fetch spec's duplex option for streamed bodies
        duplex: 'half',
      })
      const r = await h.app.handle(request)
      expect(r.status).toBe(401)
      expectEnvelope((await r.json()) as Record<string, unknown>, 401, 'UNAUTHORIZED')
      expect(r.headers.get('x-ratelimit-used')).toBeNull()
      // Nothing was metered for it.
      expect(admitted).toHaveLength(1)
    } finally {
      await h.close()
    }
  })
})
