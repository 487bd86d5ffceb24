/**
 * JSON bodies the server cannot take as sent: nested past 16 levels, bytes that are not UTF-8, compressed, another
 * charset. Each is a 400 envelope saying what to send instead, after the key check (so with the metering headers),
 * before any handler runs. And query parameters the operation does not take.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { gzipSync } from 'node:zlib'
import { createHarness, expectEnvelope, type Harness } from '../harness.ts'

let h: Harness
beforeAll(async () => {
  h = await createHarness()
})
afterAll(() => h.close())

const AGREEMENT = '/v2/membership/agreement'
const fields = { address: '0x000000000000000000000000000000000000dEaD', walletEcosystem: 'evm', url: 'https://app.example.com' }
const nested = (levels: number, open: string, close: string, inner: string) => `${open.repeat(levels)}${inner}${close.repeat(levels)}`

describe('bodies nested past 16 levels', () => {
  test('are a 400 naming the body, answered at once, where a deep value in a checked field took seconds or a 500', async () => {
    const cases = [
      `{"address":${nested(10_000, '{"a":', '}', '1')},"walletEcosystem":"evm","url":"https://app.example.com"}`,
      `{"address":${nested(5_000, '[', ']', '')},"walletEcosystem":"evm","url":"https://app.example.com"}`,
      `{"unknownField":${nested(17, '[', ']', '1')},"address":"0x000000000000000000000000000000000000dEaD","walletEcosystem":"evm","url":"https://app.example.com"}`,
    ]
    for (const rawBody of cases) {
      const started = performance.now()
      const r = await h.request('POST', AGREEMENT, { rawBody })
      expect(performance.now() - started).toBeLessThan(1_000)
      expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
      expect([r.body.context, r.body.error]).toEqual([{ body: 'nests deeper than 16 levels' }, expect.stringContaining('nests deeper than 16 levels')])
      expect(r.headers.get('x-ratelimit-used')).toMatch(/^\d+$/)
    }
  })

  test('sixteen levels are taken (an unknown field is ignored, as ever)', async () => {
    const rawBody = JSON.stringify({ ...fields, unknownField: 'PLACEHOLDER' }).replace('"PLACEHOLDER"', nested(15, '[', ']', '1'))
    const r = await h.request('POST', AGREEMENT, { rawBody })
    expect(r.status, r.text).toBe(200)
    expect(r.body.nonce).toBeString()
  })
})

describe('keys that decide how an object prints', () => {
  test('a field sent as an object with its own toString or valueOf is a 400 naming it, where printing it for the validation error was a 500', async () => {
    const cases: [string, string][] = [
      [`{"address":{"toString":1},"walletEcosystem":"evm","url":"https://app.example.com"}`, 'address.toString'],
      [`{"address":[{"valueOf":{}}],"walletEcosystem":"evm","url":"https://app.example.com"}`, 'address[0].valueOf'],
      [`{"toString":"x","walletEcosystem":"evm"}`, 'toString'],
      // Spelt with an escape, which JSON.parse reads as the same key (an audit: still a 500).
      [`{"address":{"to\\u0053tring":1},"walletEcosystem":"evm","url":"https://app.example.com"}`, 'address.toString'],
      [`{"address":${'['.repeat(14)}{"value\\u004ff":1}${']'.repeat(14)},"walletEcosystem":"evm","url":"https://app.example.com"}`, `address${'[0]'.repeat(14)}.valueOf`],
    ]
    for (const [rawBody, field] of cases) {
      const r = await h.request('POST', AGREEMENT, { rawBody })
      expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
      expect([r.body.context, r.body.error]).toEqual([{ [field]: 'is a name no field takes' }, `request body names "${field}", which no field of the API takes; leave it out`])
    }
    // The words as values, or inside strings, are no such key.
    const fine = JSON.stringify({ ...fields, note: 'toString', other: { text: '"valueOf"' } })
    expect((await h.request('POST', AGREEMENT, { rawBody: fine })).status).toBe(200)
  })

  test('an object or an array where a string goes is named so, not printed (`[object Object]`, or `["1"]` as 1)', async () => {
    for (const [value, found] of [[{}, 'an object'], [[], 'an array'], [['1'], 'an array'], [5, '5']] as const) {
      const r = await h.request('POST', AGREEMENT, { rawBody: JSON.stringify({ ...fields, address: value }) })
      expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
      expect(r.body.context).toEqual({ address: `Expected property 'address' to be string but found: ${found}` })
    }
  })
})

describe('a field named twice', () => {
  test('is a 400 naming it (JSON.parse would keep the last silently, where a proxy may have read the first); at any depth', async () => {
    const cases: [string, string][] = [
      [`{"address":"${fields.address}","walletEcosystem":"evm","url":"https://app.example.com","url":"https://evil.example"}`, 'url'],
      [`{"address":"${fields.address}","walletEcosystem":"evm","url":"https://app.example.com","extra":{"a":1,"a":2}}`, 'extra.a'],
    ]
    for (const [rawBody, field] of cases) {
      const r = await h.request('POST', AGREEMENT, { rawBody })
      expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
      expect([r.body.context, r.body.error]).toEqual([{ [field]: 'given twice' }, `request body names "${field}" twice; which value was meant is unknown: send it once`])
    }
    // A key with a line break is named quoted and escaped, the same in the message as in the context.
    const broken = await h.request('POST', AGREEMENT, { rawBody: `{"address":"${fields.address}","walletEcosystem":"evm","url":"https://app.example.com","a\\nb":1,"a\\nb":2}` })
    expect([broken.body.context, broken.body.error]).toEqual([{ '["a\\nb"]': 'given twice' }, 'request body names "["a\\nb"]" twice; which value was meant is unknown: send it once'])
    // The same keys in sibling objects, or inside strings, are no repeat.
    const fine = `{"address":"${fields.address}","walletEcosystem":"evm","url":"https://app.example.com","x":[{"a":1},{"a":2}],"y":"\\"url\\":1"}`
    expect((await h.request('POST', AGREEMENT, { rawBody: fine })).status).toBe(200)
  })
})

describe('bodies not sent as UTF-8 JSON', () => {
  test('bytes that are not UTF-8 are a 400, not stored with replacement characters', async () => {
    const text = JSON.stringify({ ...fields, url: 'https://app.example.com/PLACEHOLDER' })
    const [before, after] = text.split('PLACEHOLDER') as [string, string]
    const rawBody = new Uint8Array([...new TextEncoder().encode(before), 0xff, 0xfe, ...new TextEncoder().encode(after)])
    const r = await h.request('POST', AGREEMENT, { rawBody })
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect([r.body.context, r.body.error]).toEqual([{ body: 'is not valid UTF-8' }, expect.stringContaining('must be sent in UTF-8')])
    // The same body as UTF-8 is taken.
    const ok = await h.request('POST', AGREEMENT, { rawBody: `${before}%FF${after}` })
    expect(ok.status, ok.text).toBe(200)
  })

  test('a compressed body or another charset is a 400 saying to send it uncompressed, in UTF-8', async () => {
    const json = JSON.stringify(fields)
    const gzip = await h.request('POST', AGREEMENT, { rawBody: new Uint8Array(gzipSync(json)), headers: { 'content-encoding': 'gzip' } })
    expectEnvelope(gzip.body, 400, 'INVALID_ARGUMENT')
    expect(gzip.body.context).toEqual({ 'content-encoding': 'gzip is not supported; send the body uncompressed' })
    expect(gzip.headers.get('x-ratelimit-used')).toMatch(/^\d+$/)

    const utf16 = new Uint8Array(Buffer.from(json, 'utf16le'))
    const wide = await h.request('POST', AGREEMENT, { rawBody: utf16, headers: { 'content-type': 'application/json; charset=UTF-16LE' } })
    expectEnvelope(wide.body, 400, 'INVALID_ARGUMENT')
    expect(wide.body.context).toEqual({ 'content-type': 'charset utf-16le is not supported; send UTF-8' })

    const sent: Record<string, string>[] = [
      { 'content-type': 'application/json; charset=utf-8' },
      { 'content-type': 'application/json;charset="UTF-8"', 'content-encoding': 'identity' },
      { 'content-type': 'application/json; charset=us-ascii' },
    ]
    for (const headers of sent) {
      const r = await h.request('POST', AGREEMENT, { rawBody: json, headers })
      expect(r.status, r.text).toBe(200)
    }
  })
})

describe('query parameters the operation does not take', () => {
  test('a misspelt filter, or a list in the `name[]` form, is a 400 naming it, where it was dropped and the list unfiltered', async () => {
    const misspelt = await h.get('/v2/opportunities/?tvlGreaterthan=1000000000')
    expectEnvelope(misspelt.body, 400, 'INVALID_ARGUMENT')
    expect(misspelt.body.context).toEqual({ tvlGreaterthan: 'unknown' })
    expect(misspelt.body.error).toBe('query parameter tvlGreaterthan is not one this operation takes; it takes chainIds, depositToken, tvlGreaterThan, page, limit')
    expect(misspelt.headers.get('x-ratelimit-used')).toMatch(/^\d+$/)

    const brackets = await h.get('/v2/opportunities/?chainIds[]=8453')
    expectEnvelope(brackets.body, 400, 'INVALID_ARGUMENT')
    expect(brackets.body.context).toEqual({ 'chainIds[]': 'unknown; send chainIds' })
    expect(brackets.body.error).toContain('chainIds=a,b')

    const none = await h.get('/v2/opportunities/3fa85f64-5717-4562-b3fc-2c963f66afa6?page=1')
    expect([none.status, none.body.context, none.body.error]).toEqual([400, { page: 'unknown' }, expect.stringContaining('it takes none')])

    const unnamed = await h.get('/v2/opportunities/?=1')
    expect([unnamed.status, unnamed.body.error]).toEqual([400, expect.stringMatching(/^a query parameter without a name \(`\?=…`\) is not one this operation takes/)])

    // A second `?` (a query appended to a base URL that ended in one) is part of the name, as the route reads it:
    // the filter it looks like would be dropped.
    const doubled = await h.get('/v2/opportunities/??limit=1')
    expect([doubled.status, doubled.body.context]).toEqual([400, { '?limit': 'unknown' }])

    // A removed endpoint says it was removed whatever its caller sends.
    const removed = await h.post('/v1/actions/attribute?x=1', {})
    expect([removed.status, removed.body.context]).toEqual([404, { endpoint: 'removed' }])
    // Whatever it is sent: a body that does not parse, of another type, a query parameter given twice.
    for (const init of [
      { rawBody: '{"a":', headers: { 'content-type': 'application/json' } },
      { rawBody: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
      { rawBody: '{"a":1,"a":2}', headers: { 'content-type': 'application/json' } },
    ]) {
      const r = await h.request('POST', '/v1/actions/attribute?chainId=1&chainId=2', init)
      expect([r.status, r.body.context]).toEqual([404, { endpoint: 'removed' }])
    }

    // The parameters an operation takes still pass.
    for (const path of ['/v2/opportunities/?chainIds=8453&page=1&limit=10', '/v2/opportunities/?limit=5', '/v2/opportunities/'])
      expect((await h.get(path)).status).toBe(200)
  })

  test('an empty value is a 400 naming it, where a filter had been dropped (`state=` listed every stream) and a paging value defaulted', async () => {
    const wallet = '0x0000000000000000000000000000000000000001'
    for (const [path, name] of [
      ['/v2/streams?state=', 'state'],
      [`/v2/wallet/${wallet}/portfolio?includeProtocolTokens=`, 'includeProtocolTokens'],
      ['/v2/opportunities/?page=&limit=5', 'page'],
      ['/v2/opportunities/?limit', 'limit'],
      ['/v2/opportunities/?chainIds=', 'chainIds'],
    ] as const) {
      const r = await h.get(path)
      expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
      expect([path, r.body.context, r.body.error]).toEqual([path, { [name]: 'must not be empty' }, `query parameter ${name} is empty; give it a value, or leave it out where it is optional`])
    }
    expect((await h.get('/v2/streams?state=paused')).status).toBe(200)
  })

  test("a long name is shown cut, as a client's ids are (it came back twice, whole)", async () => {
    const name = 'x'.repeat(10_000)
    const cut = `${'x'.repeat(80)}… (10000 characters)`
    const unknown = await h.get(`/v2/opportunities/?${name}=1`)
    expect([unknown.status, unknown.body.context]).toEqual([400, { [cut]: 'unknown' }])
    expect(unknown.text.length).toBeLessThan(1_000)
    const repeated = await h.get(`/v2/opportunities/?${name}=1&${name}=2`)
    expect(repeated.text.length).toBeLessThan(1_000)
    const nul = await h.request('POST', '/v2/membership/agreement', { rawBody: `{"${name}":"\\u0000"}` })
    expect([nul.status, nul.body.context]).toEqual([400, { [cut]: 'contains a NUL character' }])
    const lone = await h.request('POST', '/v2/membership/agreement', { rawBody: `{"${name}":"\\ud800"}` })
    expect([lone.status, lone.body.context]).toEqual([400, { [cut]: 'contains a lone surrogate' }])
    expect(nul.text.length + lone.text.length).toBeLessThan(2_000)
  })
})
