import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createStore } from '@earn/core'
import { randomUUID } from 'node:crypto'
import { HttpRequestError } from 'viem'
import { localCatalog } from '../actions/localChain.ts'
import { createHarness, expectEnvelope, type Harness } from '../harness.ts'

let h: Harness
beforeAll(async () => {
  h = await createHarness()
})
afterAll(() => h.close())

const agreementBody = { address: '0x000000000000000000000000000000000000dEaD', walletEcosystem: 'evm', url: 'https://app.example.com' }

describe('the error envelope', () => {
  test('a schema failure is 400 with context keyed by field name', async () => {
    const r = await h.post('/v2/membership/agreement', { walletEcosystem: 'evm', url: 5 })
    expect(r.status).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(Object.keys(r.body.context).sort()).toEqual(['address', 'url'])
    // Missing is said as such, not as a value of the wrong type.
    expect(r.body.context.address).toBe('is required')
    expect(r.body.context.url).not.toBe('is required')
  })

  test('a body that is no JSON object is 400 naming body, whatever else it is', async () => {
    for (const [raw, sent] of [['null', 'null'], ['[]', 'an array'], ['[{"address":"0x0"}]', 'an array'], ['true', 'a boolean'], ['5', 'a number'], ['"x"', 'a string']]) {
      const r = await h.request('POST', '/v2/membership/agreement', { rawBody: raw! })
      expect(r.status, raw).toBe(400)
      expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
      expect(r.body.context).toEqual({ body: `is ${sent}; must be a JSON object` })
    }
  })

  test('a value outside a set of literals is 400 naming the values allowed', async () => {
    const r = await h.post('/v2/streams', { type: 'bogus' })
    expect(r.status).toBe(400)
    expect(r.body.context.type).toBe('must be one of "token", "point"')
  })

  test('a missing query parameter is 400 naming it', async () => {
    const r = await h.get('/v2/membership/')
    expect(r.status).toBe(400)
    expect(r.body.context).toHaveProperty('address')
  })

  test('a string too short or too long is said in words, empty as empty', async () => {
    const empty = await h.get('/v2/actions/verify?chainId=31337&txHash=')
    expect(empty.status).toBe(400)
    expect(empty.body.context).toEqual({ txHash: 'must not be empty' })
    const long = await h.post('/v2/membership/agreement', { address: '0x' + 'a'.repeat(300), walletEcosystem: 'evm', url: 'https://app.example/earn' })
    expect(long.status).toBe(400)
    expect(long.body.context).toEqual({ address: 'must be at most 200 characters' })
  })

  test('a path segment that does not percent-decode is 400 saying so', async () => {
    const r = await h.get('/v2/opportunities/%zz')
    expect(r.status).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(r.body.context).toEqual({ opportunityId: 'is not valid percent-encoding' })
  })

  test('a key pasted into a path, a query or a body is not repeated back whole', async () => {
    const key = h.org.secretKey
    const answers = [
      await h.get(`/v2/streams/${key}`),
      await h.get(`/zz/${key}`),
      await h.get(`/v2/opportunities/?chainIds=${key}`),
      await h.get(`/v2/streams?${key}=1`),
      await h.post('/v2/membership/agreement', { ...agreementBody, walletEcosystem: key }),
    ]
    for (const r of answers) {
      expect(r.status, r.text).toBeGreaterThanOrEqual(400)
      expect(r.text).not.toContain(key)
      expect(r.text).toContain('sk_live_…')
    }
  })

  test('malformed JSON is 400', async () => {
    const r = await h.request('POST', '/v2/membership/agreement', { rawBody: '{"address": ' })
    expect(r.status).toBe(400)
    expect(r.body).toEqual({ code: 400, status: 'INVALID_ARGUMENT', error: 'request body is not valid JSON', context: { body: 'malformed JSON' } })
  })

  test('a body over 64 KiB is refused with the envelope; one of 64 KiB is read (every body the API takes is under ~20 KiB)', async () => {
    const padded = (bytes: number) => {
      const body = JSON.stringify({ ...agreementBody, pad: '' })
      return JSON.stringify({ ...agreementBody, pad: 'x'.repeat(bytes - body.length) })
    }
    const r = await h.request('POST', '/v2/membership/agreement', { rawBody: padded(64 * 1024 + 1) })
    expect(r.status).toBe(413)
    expectEnvelope(r.body, 413, 'PAYLOAD_TOO_LARGE')
    expect(r.body.error).toBe('request body is larger than 65536 bytes')
    const read = await h.request('POST', '/v2/membership/agreement', { rawBody: padded(64 * 1024) })
    expect([read.status, typeof read.body.nonce]).toEqual([200, 'string'])
  })

  test('unknown routes and methods are 404 with the envelope', async () => {
    for (const [method, path] of [
      ['GET', '/v2/nothing-here'],
      ['DELETE', '/v2/membership/'],
      ['PUT', '/v2/membership/agreement'],
    ] as const) {
      const r = await h.request(method, path)
      expect(r.status).toBe(404)
      expectEnvelope(r.body, 404, 'NOT_FOUND')
      expect(r.body.error).toContain(method)
    }
  })

  test('an unsupported ecosystem and an invalid address are 400', async () => {
    const eco = await h.post('/v2/membership/agreement', { ...agreementBody, walletEcosystem: 'bitcoin' })
    expect(eco.status).toBe(400)
    expect(eco.body.context).toHaveProperty('walletEcosystem')
    const bad = await h.post('/v2/membership/agreement', { ...agreementBody, address: '0x1234' })
    expect(bad.status).toBe(400)
    expect(bad.body.context).toHaveProperty('address')
  })

  test("a client's long value is quoted cut in the answer, not sent back whole", async () => {
    const long = 'x'.repeat(60_000)
    const answers = [
      await h.get(`/nope/${long}`),
      await h.get(`/v2/opportunities/?chainIds=${long}`),
      await h.post('/v2/membership/agreement', { ...agreementBody, walletEcosystem: long }),
      await h.get(`/v2/membership/?address=0x000000000000000000000000000000000000dEaD&walletEcosystem=${long}`),
    ]
    for (const r of answers) {
      expect(r.status).toBeGreaterThanOrEqual(400)
      expect(r.text.length).toBeLessThan(2_000)
      expect(r.text).toMatch(/… \(600\d\d characters\)/)
    }
  })

  test('POST /v1/actions/attribute says it was removed', async () => {
    const r = await h.post('/v1/actions/attribute', {})
    expect(r.status).toBe(404)
    expect(r.body.status).toBe('NOT_FOUND')
    expect(r.body.error).toMatch(/removed.*automatic/)
    // A POST other than the agreement: a publishable key is refused it, as on every such route.
    const publishable = await h.post('/v1/actions/attribute', {}, { key: h.org.publishableKey })
    expectEnvelope(publishable.body, 401, 'UNAUTHORIZED')
    expect(publishable.body.error).toContain('secret key')
  })

  test('every response carries X-Request-Id, errors and public routes included', async () => {
    for (const r of [await h.get('/healthz', { key: null }), await h.get('/nope'), await h.get('/v2/membership/', { key: null })])
      expect(r.headers.get('x-request-id')).toMatch(/^[\w-]{8,}$/)
  })

  test('an unexpected exception is a 500 INTERNAL without internals, logged with the request id', async () => {
    const logged: Record<string, unknown>[] = []
    const store = createStore({ engine: 'sqlite', path: ':memory:' })
    const broken = await createHarness({
      store: { ...store, getMember: async () => Promise.reject(new Error('disk on fire at /var/secret/path')) },
      logger: { info() {}, error: (f) => logged.push(f) },
    })
    const r = await broken.get('/v2/membership/?address=0x000000000000000000000000000000000000dEaD')
    expect(r.status).toBe(500)
    expectEnvelope(r.body, 500, 'INTERNAL')
    expect(r.text).not.toContain('disk on fire')
    expect(r.text).not.toContain('/var/secret')
    const requestId = r.headers.get('x-request-id')!
    expect(r.body.error).toContain(requestId)
    expect(logged).toHaveLength(1)
    expect(logged[0]).toMatchObject({ requestId, error: expect.stringContaining('disk on fire') })
    await broken.close()
  })

  test("a chain client's error is logged without the RPC URL's path or the request body it carries", async () => {
    const logged: Record<string, unknown>[] = []
    const store = createStore({ engine: 'sqlite', path: ':memory:' })
    // viem writes both into its messages: a provider key in the URL's path, a signature in an eth_call's data.
    const rpcError = new HttpRequestError({
      url: 'https://eth.example.com/v2/PROVIDERKEY123?apikey=QUERYKEY456',
      body: { method: 'eth_call', params: [{ data: '0x1626ba7esignaturebytes789' }] },
      status: 502,
    })
    const broken = await createHarness({
      store: { ...store, getMember: async () => Promise.reject(rpcError) },
      logger: { info() {}, error: (f) => logged.push(f) },
    })
    const r = await broken.get('/v2/membership/?address=0x000000000000000000000000000000000000dEaD')
    expect(r.status).toBe(500)
    const line = JSON.stringify(logged)
    expect(line).toContain('HTTP request failed')
    expect(line).toContain('https://eth.example.com')
    for (const secret of ['PROVIDERKEY123', 'QUERYKEY456', 'signaturebytes789']) expect(line).not.toContain(secret)
    expect(typeof logged[0]!.stack).toBe('string')
    await broken.close()
  })
})

describe('a response that fails its own schema', () => {
  test("is a 500 INTERNAL, logged: the server's fault, never the caller's 400", async () => {
    const logged: Record<string, unknown>[] = []
    const broken = await createHarness({ logger: { info() {}, error: (f) => logged.push(f) } })
    // A TVL no import can write now (the catalog bounds the price), as an older version could have stored it.
    const listing = { ...localCatalog().opportunities[0]!, id: randomUUID() }
    const facts = { baseToken: listing.baseToken.address!.toLowerCase(), receiptToken: listing.vaultAddress.toLowerCase(), decimals: 6, totalAssets: '1' }
    await broken.store.upsertOpportunity(
      { id: listing.id, ecosystem: 'evm', chainId: '31337', vaultAddress: listing.vaultAddress.toLowerCase(), listing: JSON.stringify(listing), chainFacts: JSON.stringify(facts), tvl: Infinity, refreshedAt: 1, refreshError: null, delistedAt: null, createdAt: 1, updatedAt: 1 },
      [facts.baseToken],
    )
    const r = await broken.get(`/v2/opportunities/${listing.id}`)
    expect(r.status, r.text).toBe(500)
    expectEnvelope(r.body, 500, 'INTERNAL')
    expect(logged).toHaveLength(1)
    await broken.close()
  })
})

describe('request log', () => {
  test('one line per request with method, route, status, duration and organization; never a key or body', async () => {
    const lines: string[] = []
    const logged = await createHarness({ env: { LOG_REQUESTS: '1' }, logger: { info: (f) => lines.push(JSON.stringify(f)), error: (f) => lines.push(JSON.stringify(f)) } })
    await logged.post('/v2/membership/agreement', { ...agreementBody, url: 'https://secret-body.example' })
    await logged.post('/v2/membership/', { ...agreementBody, signature: '0xdeadbeefsignature', nonce: 'n' })
    await logged.get('/nope')
    // An unrouted path: logged cut short, and a key pasted into it masked.
    await logged.get(`/v2/${logged.org.secretKey}/${'a'.repeat(5_000)}`)
    // A key with its underscore percent-encoded, and one sent as the request id (logged and sent back): masked, replaced.
    await logged.get(`/${logged.org.secretKey.replace('_', '%5F')}`)
    // Any other character percent-encoded, in the prefix or the key's body (an audit: each ended the match, and the
    // rest of the key went out whole, in the log and in the 404's answer).
    const body = logged.org.secretKey.slice('sk_live_'.length)
    const escaped = (c: string) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`
    // Encoded twice too (a proxy or an SDK encoding a path already encoded).
    const encoded = [
      `/s${escaped('k')}_live_${body}`,
      `/sk_live_${escaped(body[0]!)}${body.slice(1)}`,
      `/sk_live_${body.slice(0, 5)}${escaped(body[5]!).toLowerCase()}${body.slice(6)}`,
      `/sk%255Flive_${body}`,
    ]
    for (const path of encoded) expect((await logged.get(path)).text).not.toContain(body.slice(6))
    const asId = await logged.get('/v2/nothing', { headers: { 'x-request-id': logged.org.secretKey } })
    expect(asId.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    // An ordinary id is kept.
    expect((await logged.get('/v2/nothing', { headers: { 'x-request-id': 'trace-42' } })).headers.get('x-request-id')).toBe('trace-42')
    await Bun.sleep(20)
    expect(lines).toHaveLength(11)
    const first = JSON.parse(lines[0]!)
    expect(first).toMatchObject({ method: 'POST', route: '/v2/membership/agreement', status: 200, org: logged.org.orgId })
    expect(typeof first.durationMs).toBe('number')
    expect(JSON.parse(lines[1]!).status).toBe(400)
    expect(JSON.parse(lines[2]!)).toMatchObject({ route: '(no route)', path: '/nope', status: 404 })
    const long = JSON.parse(lines[3]!)
    expect(long.path).toStartWith('/v2/sk_live_…/aaa')
    expect(long.path).toMatch(/… \(50\d\d characters\)$/)
    expect(long.path.length).toBeLessThan(120)
    const all = lines.join('\n')
    // The key's body, after its prefix, in no line: an unmasked %5F path would hold it without the literal key.
    for (const secret of [body.slice(6), 'secret-body', 'deadbeefsignature']) expect(all).not.toContain(secret)
    expect(JSON.parse(lines[4]!).path).toBe('/sk%5Flive_…')
    expect(lines.slice(5, 9).map((l) => JSON.parse(l).path)).toEqual(['/s%6B_live_…', '/sk_live_…', '/sk_live_…', '/sk%255Flive_…'])
    await logged.close()
  })
})
