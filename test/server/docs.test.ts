import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { IDEMPOTENCY_KEY_PATTERN } from '@earn/core'
import { OPERATIONS } from '@earn/core/metering/costs'
import { createHarness, type Harness } from '../harness.ts'

let h: Harness
beforeAll(async () => {
  h = await createHarness()
})
afterAll(() => h.close())

describe('public endpoints', () => {
  test('/openapi.json is OpenAPI 3 with the X-API-Key scheme and a cost on every operation', async () => {
    const r = await h.get('/openapi.json', { key: null })
    expect(r.status).toBe(200)
    expect(r.body.openapi).toMatch(/^3\./)
    expect(r.body.components.securitySchemes.apiKey).toEqual({ type: 'apiKey', in: 'header', name: 'X-API-Key' })
    const ops = Object.values(r.body.paths as Record<string, Record<string, any>>).flatMap((m) => Object.values(m))
    const metered = ops.filter((o) => o.operationId in OPERATIONS)
    expect(metered.length).toBeGreaterThanOrEqual(4)
    for (const op of metered) {
      expect(op['x-cost-units']).toBe(OPERATIONS[op.operationId as keyof typeof OPERATIONS].cost)
      expect(op.security).toEqual([{ apiKey: [] }])
    }
    const body = r.body.paths['/v2/membership/agreement'].post.requestBody.content['application/json'].schema
    expect(body.required).toEqual(['address', 'walletEcosystem', 'url'])
    expect(Object.keys(body.properties)).toContain('chainId')
  })

  test('every error response refers to the one ErrorEnvelope component, whose code is an integer', async () => {
    const r = await h.get('/openapi.json', { key: null })
    const envelope = r.body.components.schemas.ErrorEnvelope
    expect(envelope.required).toEqual(['code', 'status', 'error', 'context'])
    expect(envelope.properties.code).toEqual({ description: 'HTTP status code', type: 'integer' })
    // No schema id the document does not resolve (an inlined `$id: #/components/...` made strict validators refuse it).
    expect(JSON.stringify(r.body)).not.toContain('"$id"')
    // The API's operations (the readiness probe's 503 is its own report).
    const errors = Object.values(r.body.paths as Record<string, Record<string, any>>)
      .flatMap((m) => Object.values(m))
      .filter((op) => op.operationId in OPERATIONS)
      .flatMap((op) => Object.entries(op.responses ?? {}).filter(([status]) => Number(status) >= 400))
      .map(([, response]: [string, any]) => response.content['application/json'].schema)
    expect(errors.length).toBeGreaterThan(20)
    expect(errors.every((schema) => schema.$ref === '#/components/schemas/ErrorEnvelope')).toBe(true)
    // Each says what it means: no generator placeholder ("Response for status 503") is left on an error.
    const described = Object.values(r.body.paths as Record<string, Record<string, any>>)
      .flatMap((m) => Object.values(m))
      .filter((op) => op.operationId in OPERATIONS)
      .flatMap((op) => Object.entries<any>(op.responses ?? {}).filter(([status]) => Number(status) >= 400).map(([status, response]) => `${op.operationId} ${status}: ${response.description}`))
    expect(described.filter((d) => d.includes('Response for status'))).toEqual([])
    // Nor on any answer, a success or a probe's.
    expect(JSON.stringify(r.body)).not.toContain('Response for status')
    expect(described.find((d) => d.startsWith('actions.deposit 503'))).toContain('EVM_RPC_TIMEOUT_MS')
  })

  test("every description a route's schemas carry is in its operation: nullable fields and unions of literals keep theirs", async () => {
    const doc = (await h.get('/openapi.json', { key: null })).body
    const descriptions = (schema: unknown): string[] => [...JSON.stringify(schema ?? null).matchAll(/"description":("(?:[^"\\]|\\.)*")/g)].map((m) => JSON.parse(m[1]!))
    const missing: string[] = []
    let checked = 0
    for (const route of h.app.routes) {
      const operation = doc.paths[route.path.replace(/:(\w+)/g, '{$1}')]?.[route.method.toLowerCase()]
      if (!operation) continue
      // The error envelope's fields are described once, in its component.
      const text = JSON.stringify(operation).replaceAll('{"$ref":"#/components/schemas/ErrorEnvelope"}', JSON.stringify(doc.components.schemas.ErrorEnvelope))
      const hooks = route.hooks as Record<string, unknown>
      for (const part of ['response', 'body', 'query', 'params'])
        for (const d of descriptions(hooks[part])) {
          checked++
          if (!text.includes(JSON.stringify(d))) missing.push(`${route.method} ${route.path} ${part}: ${d}`)
        }
    }
    // The generator had dropped, among others, when a portfolio's netDeposited is null and what each stream state means.
    expect(missing).toEqual([])
    expect(checked).toBeGreaterThan(100)
    const portfolio = JSON.stringify(doc.paths['/v2/wallet/{address}/portfolio'].get.responses['200'])
    expect(portfolio).toContain('null where the chain keeps no such record')
  })

  test('query values parsed from strings are documented as what they stand for: integers in their ranges, a boolean, a number, a state', async () => {
    const doc = (await h.get('/openapi.json', { key: null })).body
    const parameter = (path: string, name: string) => doc.paths[path].get.parameters.find((p: { name: string }) => p.name === name)
    expect(parameter('/v2/wallet/{address}/portfolio', 'includeProtocolTokens').schema).toEqual({ type: 'boolean', default: false })
    expect(parameter('/v2/opportunities/', 'limit').schema).toEqual({ type: 'integer', minimum: 1, maximum: 500, default: 100 })
    expect(parameter('/v2/opportunities/', 'page').schema).toEqual({ type: 'integer', minimum: 1, maximum: 1_000_000_000, default: 1 })
    expect(parameter('/v2/opportunities/', 'tvlGreaterThan').schema).toEqual({ type: 'number' })
    expect(parameter('/v2/streams', 'state').schema).toEqual({ type: 'string', enum: ['pending', 'active', 'paused', 'cancelled', 'completed'] })
    expect(parameter('/v2/streams', 'limit').schema).toMatchObject({ maximum: 100, default: 20 })
    expect(parameter('/v2/wallets/activity', 'limit').schema).toMatchObject({ maximum: 100, default: 20 })
    // Their descriptions stay, and what they document is what is taken.
    expect(parameter('/v2/opportunities/', 'limit').description).toBe('Page size, 1 to 500 (default 100)')
    expect((await h.get('/v2/opportunities/?limit=500&page=1&tvlGreaterThan=0.5')).status).toBe(200)
    expect((await h.get('/v2/streams?state=paused&limit=100')).status).toBe(200)
  })

  test('every response names the headers it carries, and a real answer carries them', async () => {
    const doc = (await h.get('/openapi.json', { key: null })).body
    const ops = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, m]) => Object.entries(m).map(([method, op]) => ({ path, method, op })))
    for (const { op } of ops)
      for (const [status, response] of Object.entries<any>(op.responses)) {
        const names = Object.keys(response.headers ?? {})
        for (const name of ['X-Request-Id', 'Cache-Control', 'Vary']) expect(names).toContain(name)
        if (op.operationId in OPERATIONS) expect(names).toContain('X-RateLimit-Remaining')
        // A 429's, a metered operation's 503 (the meter unable to count, METER_REDIS_OUTAGE=closed), and an idempotent
        // operation's 409 (its key in use by a request under way).
        const idempotent = op['x-idempotent'] === true
        expect(names.includes('Retry-After')).toBe(status === '429' || (status === '503' && op.operationId in OPERATIONS) || (status === '409' && idempotent))
        expect(names.includes('Idempotent-Replayed')).toBe(status === '200' && idempotent)
        for (const ref of Object.values<any>(response.headers)) expect(doc.components.headers[ref.$ref.split('/').pop()]).toBeDefined()
      }
    const listed = Object.keys(doc.paths['/v2/opportunities/'].get.responses['200'].headers)
    const r = await h.get('/v2/opportunities/')
    expect(r.status).toBe(200)
    // The monthly limit and remaining are sent only where a cap is set, as their descriptions say.
    const capped = r.headers.get('x-monthly-limit') !== null
    for (const name of listed.filter((n) => capped || !/^X-Monthly-(Limit|Remaining)$/.test(n))) expect(r.headers.get(name)).not.toBeNull()
  })

  test('the operations that create a row, and only they, take an Idempotency-Key and list its 409', async () => {
    const doc = (await h.get('/openapi.json', { key: null })).body
    const ops = Object.values(doc.paths as Record<string, Record<string, any>>).flatMap((m) => Object.values(m))
    const taking = ops.filter((op) => (op.parameters ?? []).some((p: any) => p.name === 'Idempotency-Key' && p.in === 'header'))
    expect(taking.map((op) => op.operationId).sort()).toEqual(['actions.deposit', 'actions.withdraw', 'streams.create'])
    for (const op of taking) {
      expect(op['x-idempotent']).toBe(true)
      expect(op.responses['409'].description).toContain('Idempotency-Key')
      expect(op.parameters.find((p: any) => p.name === 'Idempotency-Key')).toMatchObject({ required: false, schema: { type: 'string', minLength: 1, maxLength: 255, pattern: IDEMPOTENCY_KEY_PATTERN } })
    }
    expect(ops.filter((op) => op['x-idempotent'] !== undefined)).toHaveLength(3)
  })

  test('the document is the same whichever operations were called before it was made: no object is closed', async () => {
    const called = await createHarness()
    try {
      // Elysia closes an object schema in place when it first validates with it: the body, the answer, the envelope.
      await called.post('/v2/membership/agreement', { address: '0x' + 'ab'.repeat(20), walletEcosystem: 'evm', url: 'https://app.example', extra: 1 })
      expect((await called.get('/v2/opportunities/')).status).toBe(200)
      const doc = (await called.get('/openapi.json', { key: null })).text
      expect(doc.match(/"additionalProperties":false/g) ?? []).toEqual([])
      // The server does ignore a body field the operation does not take, as the open schema says.
      const r = await called.post('/v2/membership/agreement', { address: '0x' + 'cd'.repeat(20), walletEcosystem: 'evm', url: 'https://app.example', extra: 1 })
      expect(r.status).toBe(200)
    } finally {
      await called.close()
    }
  })

  test('/docs renders the operations without a key', async () => {
    const r = await h.get('/docs', { key: null })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toContain('text/html')
    expect(r.text).toContain('/v2/membership/agreement')
    expect(r.text).not.toContain('<script')
  })

  test('/healthz and /readyz answer without a key', async () => {
    const live = await h.get('/healthz', { key: null })
    expect(live.status).toBe(200)
    const ready = await h.get('/readyz', { key: null })
    expect(ready.status).toBe(200)
    expect(ready.body).toEqual({ status: 'ok', checks: expect.objectContaining({ store: 'ok', meter: 'ok' }) })
  })

  test('/readyz is 503 when the store is down', async () => {
    await using_closed_store()
  })

  test('/readyz is 503 until stored catalog entries are in the one spelling of their chain (main.ts clears it)', async () => {
    h.deps.lifecycle = { draining: false, respelling: true }
    try {
      const r = await h.get('/readyz', { key: null })
      expect([r.status, r.body.checks.server]).toEqual([503, 'unavailable: rewriting stored chain ids to one spelling'])
    } finally {
      h.deps.lifecycle = undefined
    }
    expect((await h.get('/readyz', { key: null })).status).toBe(200)
  })
})

async function using_closed_store() {
  const down = await createHarness()
  await down.store.close()
  const r = await down.get('/readyz', { key: null })
  expect(r.status).toBe(503)
  expect(r.body.status).toBe('unavailable')
  expect(r.body.checks.store).toStartWith('unavailable')
}
