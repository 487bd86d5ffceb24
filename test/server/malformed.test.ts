/**
 * Every operation the OpenAPI document lists, asked with malformed input: odd path segments, query values and
 * bodies of the wrong shape or type, JSON that does not parse, other content types. Whatever the operation, the
 * answer is the error envelope with its code equal to the HTTP status, or a success; never a 5xx other than 503
 * (a chain this deployment has no endpoint for), never a stack trace. On SQLite and on PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createStore, type Store } from '@earn/core'
import { createHarness, type Harness, type Json } from '../harness.ts'
import { DATABASE_URL, freshSchema, postgresAvailable } from '../services.ts'

// A NUL ('\u0000') passes SQLite but is an error on PostgreSQL, whose text cannot hold one: so the walk runs on both.
const ODD: unknown[] = [null, true, 0, -1, 1.5, 1e308, '', ' ', 'x'.repeat(5000), '💥', '0x', '-1', '1e18', '１２３', [], {}, [1], { a: 1 }, '__proto__', '../../etc', '99999999999999999999999999999999999999999999999999999999999999999999999999999999', '\u0000', 'a\u0000b', { 'a\u0000': 1 }]
const PATH_VALUES = ['x', '..', '%2e%2e', '%00', 'a'.repeat(3000), '00000000-0000-4000-8000-000000000000', '💥', '%E2%82', 'constructor']
const RAW_BODIES = ['{', 'null', '[]', '{"a":', '"text"', '{"__proto__":{"polluted":1}}']
const OTHER_TYPES: [string, string][] = [
  ['text/plain', 'hello'],
  ['application/x-www-form-urlencoded', 'a=1&b=2'],
  ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--'],
]

interface Operation {
  parameters?: { name: string; in: string }[]
  requestBody?: { content?: Record<string, { schema?: { properties?: Record<string, { type?: string }> } }> }
}

/** A body for each property replaced by each odd value, each property left out, and one unknown property added. */
function bodies(properties: Record<string, { type?: string }>, distributorId: string): unknown[] {
  const base: Json = {}
  for (const [name, p] of Object.entries(properties)) base[name] = p.type === 'integer' || p.type === 'number' ? 1 : p.type === 'boolean' ? true : 'x'
  if ('distributorId' in base) base.distributorId = distributorId
  const out: unknown[] = [...ODD, base, { ...base, unknownField: 1 }]
  for (const name of Object.keys(properties)) {
    for (const value of ODD) out.push({ ...base, [name]: value })
    const { [name]: _, ...without } = base
    out.push(without)
  }
  return out
}

const engines: [string, () => Promise<{ store: Store; cleanup(): Promise<void> }>][] = [
  ['sqlite', async () => ({ store: createStore({ engine: 'sqlite', path: ':memory:' }), cleanup: async () => {} })],
]
if (await postgresAvailable())
  engines.push([
    'postgres',
    async () => {
      const { schema, drop } = await freshSchema()
      return { store: createStore({ engine: 'postgres', url: DATABASE_URL, schema }), cleanup: drop }
    },
  ])

for (const [engine, open] of engines) describe(`malformed input, every operation (${engine})`, () => walk(open))

function walk(open: (typeof engines)[number][1]) {
  let h: Harness
  let cleanup: () => Promise<void>
  beforeAll(async () => {
    const opened = await open()
    cleanup = opened.cleanup
    // A budget the walk cannot spend: a 429 would answer in place of the operation under test.
    h = await createHarness({ store: opened.store, org: { hourlyBudget: 1_000_000_000 } })
  })
  afterAll(async () => {
    await h.close()
    await cleanup()
  })

  test('answers the envelope (or a success), never a 5xx other than 503, never a stack', async () => {
    const doc = (await h.get('/openapi.json')).body as { paths: Record<string, Record<string, Operation>> }
    const problems: string[] = []
    let asked = 0
    const ask = async (method: string, path: string, init: Parameters<Harness['request']>[2]) => {
      asked++
      const r = await h.request(method, path, init)
      const what = `${method} ${path.slice(0, 80)} ${String(init?.rawBody ?? JSON.stringify(init?.body) ?? '').slice(0, 60)}`
      if (r.status >= 500 && r.status !== 503) problems.push(`${what} -> ${r.status}`)
      if (r.status === 429) problems.push(`${what} -> 429: the budget ran out, so the operation went untested`)
      if (/\.ts:\d+|\bat \w+ \(/.test(r.text)) problems.push(`${what} -> a stack trace`)
      if (r.status < 400) return
      const keys = Object.keys(r.body).sort().join(',')
      if (keys !== 'code,context,error,status' || r.body.code !== r.status || typeof r.body.status !== 'string' || !r.body.error)
        problems.push(`${what} -> ${r.status} without the envelope: ${r.text.slice(0, 120)}`)
    }
    for (const [template, operations] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        const verb = method.toUpperCase()
        const params = op.parameters ?? []
        const paths = template.includes('{') ? PATH_VALUES.map((v) => template.replace(/\{[^}]+\}/g, v)) : [template]
        const queries = [''].concat(
          params.filter((p) => p.in === 'query').flatMap((p) => ODD.map((v) => `?${p.name}=${encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v))}`)),
        )
        for (const key of [h.org.secretKey, h.org.publishableKey]) {
          for (const path of paths) {
            for (const q of queries) await ask(verb, path + q, { key })
            if (verb !== 'POST') continue
            const properties = op.requestBody?.content?.['application/json']?.schema?.properties ?? {}
            for (const body of bodies(properties, h.distributorId)) await ask(verb, path, { key, body })
            for (const rawBody of RAW_BODIES) await ask(verb, path, { key, rawBody })
            for (const [type, rawBody] of OTHER_TYPES) await ask(verb, path, { key, rawBody, headers: { 'content-type': type } })
          }
        }
      }
    }
    expect(problems).toEqual([])
    // The walk reached every operation: a document that lost its paths would pass the check above vacuously.
    expect(Object.keys(doc.paths).length).toBeGreaterThan(15)
    expect(asked).toBeGreaterThan(5000)
  }, 120_000)

  test('a NUL anywhere in the input is a 400 naming where, on every engine', async () => {
    const opportunity = '00000000-0000-4000-8000-000000000000'
    const cases: [string, string, Json | undefined, string][] = [
      ['POST', `/v2/actions/deposit/a%00b`, { userAddress: '0x' + '1'.repeat(40), tokenIn: 'native', amount: '1', distributorId: h.distributorId }, 'path'],
      ['GET', `/v2/opportunities/?chainIds=1%00`, undefined, 'query'],
      ['POST', `/v2/actions/deposit/${opportunity}`, { userAddress: '0x' + '1'.repeat(40), tokenIn: 'native', amount: '1', distributorId: 'a\u0000b' }, 'distributorId'],
      ['POST', `/v2/actions/deposit/${opportunity}`, { userAddress: '0x' + '1'.repeat(40), tokenIn: 'native', amount: '1', distributorId: h.distributorId, referralCode: 'r\u0000' }, 'referralCode'],
    ]
    for (const [method, path, body, field] of cases) {
      const r = await h.request(method, path, { body })
      expect(r.status, `${path}: ${r.text}`).toBe(400)
      expect(r.body).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', context: { [field]: 'contains a NUL character' } })
    }
    // Nested: found, and named by its place. (Past 16 levels the body is refused for its depth first: bodies.test.ts.)
    const depth = 14
    const deep = await h.request('POST', '/v2/membership/agreement', { rawBody: `{"address":${'['.repeat(depth)}"\\u0000"${']'.repeat(depth)}}` })
    expect(deep.status, deep.text.slice(0, 200)).toBe(400)
    expect(deep.body.context).toEqual({ [`address${'[0]'.repeat(depth)}`]: 'contains a NUL character' })
    // The first in document order, keys and values alike, past clean siblings at every level.
    for (const [rawBody, field] of [
      ['{"b":{"x":["ok",{"y":1},"\\u0000"]},"a":"\\u0000"}', 'b.x[2]'],
      // A key holding the NUL is named quoted, with it written as an escape.
      ['{"b":[1,{"k":"v","k\\u0000":"\\u0000"}],"a":"\\u0000"}', 'b[1]["k\\u0000"]'],
    ] as const) {
      const r = await h.request('POST', '/v2/membership/agreement', { rawBody })
      expect(r.body.context, rawBody).toEqual({ [field]: 'contains a NUL character' })
    }
  })

  test('a lone surrogate escape in a string or a key is a 400 naming where; a pair (an emoji) is a character', async () => {
    const agreement = (raw: string) => h.request('POST', '/v2/membership/agreement', { rawBody: raw })
    // Stored as UTF-8, a lone surrogate would come back as U+FFFD: not what the client sent.
    for (const [raw, field] of [
      ['{"address":"0x1\\ud800"}', 'address'],
      ['{"address":"\\uDC00x"}', 'address'],
      ['{"address":["ok","\\udbff"]}', 'address[1]'],
      // A key holding one is named quoted, with it written as an escape (raw, it printed as U+FFFD).
      ['{"x\\ud800":1}', '["x\\ud800"]'],
    ] as const) {
      const r = await agreement(raw)
      expect(r.status, `${raw}: ${r.text}`).toBe(400)
      expect(r.body).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', context: { [field]: 'contains a lone surrogate' } })
    }
    // A well-formed pair passes the body check: the schema then judges the value itself.
    const pair = await agreement('{"address":"\\ud83d\\udca5"}')
    expect(pair.status, pair.text).toBe(400)
    expect(JSON.stringify(pair.body.context)).not.toContain('surrogate')
  })
}
