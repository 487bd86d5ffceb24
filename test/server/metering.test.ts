/**
 * Metering over HTTP, with a clock moved by hand: the six headers on every response to a valid key
 * (success, 400, 401 on scope, 404, 429), the 429 itself, windows, and budgets per key.
 */
import { afterEach, describe, expect, test } from 'bun:test'
import { issueKey, manualClock, setKeyBudgets } from '@earn/core'
import { runCommand } from '@earn/server/cli'
import { createHarness, expectEnvelope, type Harness } from '../harness.ts'

const at = (iso: string) => Date.parse(iso)
const check = '/v2/membership/?address=0x000000000000000000000000000000000000dEaD' // cost 1
const wallet = '0x00000000000000000000000000000000000000A1'

let open: Harness[] = []
afterEach(async () => {
  await Promise.all(open.map((h) => h.close()))
  open = []
})

async function harness(org: { hourlyBudget?: number; monthlyBudget?: number | null }, start = '2031-03-10T08:20:00Z') {
  const clock = manualClock(at(start))
  const h = await createHarness({ clock, org })
  open.push(h)
  return { h, clock }
}

type Response = Awaited<ReturnType<Harness['get']>>
function meterHeaders(r: Response): Record<string, string> {
  const out: Record<string, string> = {}
  r.headers.forEach((v, k) => {
    if (k.startsWith('x-ratelimit-') || k.startsWith('x-monthly-') || k === 'retry-after') out[k] = v
  })
  return out
}
/** Remaining = Limit - Used, on every response that carries the headers. */
function expectConsistent(r: Response) {
  const n = (name: string) => Number(r.headers.get(name))
  expect(n('x-ratelimit-remaining')).toBe(n('x-ratelimit-limit') - n('x-ratelimit-used'))
  if (r.headers.has('x-monthly-limit')) expect(n('x-monthly-remaining')).toBe(n('x-monthly-limit') - n('x-monthly-usage'))
}

describe('metering headers', () => {
  test('a success carries the six headers, and no refusal headers', async () => {
    const { h } = await harness({ hourlyBudget: 10, monthlyBudget: 100 })
    const r = await h.get(check)
    expect(r.status).toBe(200)
    expect(meterHeaders(r)).toEqual({
      'x-ratelimit-limit': '10',
      'x-ratelimit-remaining': '9',
      'x-ratelimit-used': '1',
      'x-monthly-limit': '100',
      'x-monthly-usage': '1',
      'x-monthly-remaining': '99',
    })
    expect(r.headers.has('x-ratelimit-reset')).toBe(false)
  })

  test('errors to a valid key carry them too, and are charged: 400, 401 on scope, 404', async () => {
    const { h } = await harness({ hourlyBudget: 100, monthlyBudget: 1000 })
    const bad = await h.get('/v2/membership/?address=0x1234') // cost 1
    expect(bad.status).toBe(400)
    expect(bad.headers.get('x-ratelimit-used')).toBe('1')
    const malformed = await h.request('POST', '/v2/membership/agreement', { rawBody: '{"address": ' }) // cost 1
    expect(malformed.status).toBe(400)
    expect(malformed.headers.get('x-ratelimit-used')).toBe('2')
    const scope = await h.post('/v2/membership/', {}, { key: h.org.publishableKey }) // cost 5, publishable key's own count
    expect(scope.status).toBe(401)
    expect(meterHeaders(scope)).toMatchObject({ 'x-ratelimit-used': '5', 'x-monthly-usage': '5' })
    const unknownDistributor = await h.post('/v2/membership/', {
      address: wallet,
      walletEcosystem: 'evm',
      signature: '0x00',
      nonce: crypto.randomUUID(),
      distributorId: crypto.randomUUID(),
    }) // cost 5
    expect(unknownDistributor.status).toBe(404)
    expectEnvelope(unknownDistributor.body, 404, 'NOT_FOUND')
    expect(meterHeaders(unknownDistributor)).toEqual({
      'x-ratelimit-limit': '100',
      'x-ratelimit-remaining': '93',
      'x-ratelimit-used': '7',
      'x-monthly-limit': '1000',
      'x-monthly-usage': '7',
      'x-monthly-remaining': '993',
    })
    for (const r of [bad, malformed, scope, unknownDistributor]) expectConsistent(r)
  })

  test('a path no route takes is 404 with the usage of a valid key, uncharged (it is no operation)', async () => {
    const { h } = await harness({ hourlyBudget: 10, monthlyBudget: 100 })
    await h.get(check)
    for (const [method, path] of [['GET', '/v2/nope'], ['PUT', '/v2/membership/'], ['DELETE', '/v2/streams']] as const) {
      const r = await h.request(method, path)
      expectEnvelope(r.body, 404, 'NOT_FOUND')
      expect(meterHeaders(r)).toEqual({
        'x-ratelimit-limit': '10',
        'x-ratelimit-remaining': '9',
        'x-ratelimit-used': '1',
        'x-monthly-limit': '100',
        'x-monthly-usage': '1',
        'x-monthly-remaining': '99',
      })
    }
    for (const key of [null, 'sk_live_' + 'x'.repeat(44)]) {
      const r = await h.get('/v2/nope', { key })
      expectEnvelope(r.body, 404, 'NOT_FOUND')
      expect(meterHeaders(r)).toEqual({})
    }
  })

  test("a key past a lowered budget gets a 404's usage headers without a 429's Retry-After", async () => {
    const { h, clock } = await harness({ hourlyBudget: 10, monthlyBudget: null })
    for (let i = 0; i < 3; i++) await h.get(check)
    await setKeyBudgets(h.deps, { keyId: h.org.secretKeyId }, { hourlyBudget: 2 })
    clock.advance(3000)
    const r = await h.get('/v2/nope')
    expectEnvelope(r.body, 404, 'NOT_FOUND')
    expect(meterHeaders(r)).toEqual({ 'x-ratelimit-limit': '2', 'x-ratelimit-remaining': '0', 'x-ratelimit-used': '3', 'x-monthly-usage': '3' })
    expect(r.headers.has('x-ratelimit-reset')).toBe(false)
  })

  test('no metering headers without a valid key, nor on paths without a key', async () => {
    const { h } = await harness({ hourlyBudget: 10 })
    for (const r of [await h.get(check, { key: null }), await h.get(check, { key: 'sk_live_' + 'x'.repeat(44) }), await h.get('/healthz', { key: null })])
      expect(meterHeaders(r)).toEqual({})
  })

  test('X-Monthly-Limit and X-Monthly-Remaining only where a cap is set', async () => {
    const { h } = await harness({ hourlyBudget: 10, monthlyBudget: null })
    const r = await h.get(check)
    expect(meterHeaders(r)).toEqual({ 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '9', 'x-ratelimit-used': '1', 'x-monthly-usage': '1' })
  })
})

describe('429', () => {
  test('past the hourly budget: RESOURCE_EXHAUSTED, Retry-After, X-RateLimit-Reset, and not charged', async () => {
    const { h } = await harness({ hourlyBudget: 3, monthlyBudget: 100 })
    for (let i = 0; i < 3; i++) expectConsistent(await h.get(check))
    const refused = await h.get(check)
    expect(refused.status).toBe(429)
    expectEnvelope(refused.body, 429, 'RESOURCE_EXHAUSTED')
    expect(refused.body.context).toEqual({ budget: 'hourly' })
    expect(refused.body.error).toBe('hourly cost-unit budget exhausted for this API key; retry after the window resets')
    expect(meterHeaders(refused)).toEqual({
      'x-ratelimit-limit': '3',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-used': '3',
      'x-monthly-limit': '100',
      'x-monthly-usage': '3',
      'x-monthly-remaining': '97',
      'retry-after': String(40 * 60), // 08:20 -> 09:00
      'x-ratelimit-reset': String(at('2031-03-10T09:00:00Z') / 1000),
    })
    expect(refused.headers.get('x-request-id')).toBeTruthy()
    // Refusals are not charged: the count stays at 3 however many are refused.
    const again = await h.get(check)
    expect(again.headers.get('x-ratelimit-used')).toBe('3')
    expect(again.headers.get('x-monthly-usage')).toBe('3')
  })

  test('a refused request is refused before its body or scope is looked at', async () => {
    const { h } = await harness({ hourlyBudget: 1 })
    await h.get(check)
    const r = await h.request('POST', '/v2/membership/', { key: h.org.publishableKey, rawBody: '{' })
    // The publishable key has its own count: 0 + 5 > 1.
    expect(r.status).toBe(429)
    expect(r.headers.get('x-ratelimit-used')).toBe('0')
    // Dearer than the whole budget: no window admits it, and the answer says so rather than "retry after the reset".
    expect(r.body.error).toStartWith("this operation costs 5 cost units, more than this API key's whole hourly budget of 1: no hour admits it")
    expect(r.body.context).toEqual({ budget: 'hourly' })
  })

  test('a large body on a spent budget is not read: the 429 comes before it does, the connection closes, nothing charged', async () => {
    const { h, clock } = await harness({ hourlyBudget: 1 })
    // A body declared at 64 KiB that never arrives: a server reading it first would wait for it (here, for good).
    const endless = () =>
      new Request('http://localhost/v2/membership/agreement', {
        method: 'POST',
        headers: { 'x-api-key': h.org.publishableKey, 'content-type': 'application/json', 'content-length': String(64 * 1024) },
        body: new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode('{"address":')) }),
      })
    const spend = await h.get(check, { key: h.org.publishableKey })
    expect(spend.status).toBe(200)
    const answer = await Promise.race([h.app.handle(endless()), Bun.sleep(2_000).then(() => 'still reading')])
    expect(answer).toBeInstanceOf(globalThis.Response)
    const r = answer as globalThis.Response
    expect([r.status, r.headers.get('connection'), r.headers.get('x-ratelimit-used'), r.headers.get('retry-after')]).toEqual([429, 'close', '1', '2400'])
    expectEnvelope((await r.json()) as never, 429, 'RESOURCE_EXHAUSTED')
    // A small body is read as before (reading it costs less than asking the meter), and refused the same way.
    const small = await h.request('POST', '/v2/membership/agreement', { key: h.org.publishableKey, body: { address: wallet, walletEcosystem: 'evm', url: 'https://a.example' } })
    expect([small.status, small.headers.get('x-ratelimit-used')]).toEqual([429, '1'])
    // The next hour's budget serves a large body (sent whole) as ever.
    clock.advance(3_600_000)
    const big = await h.request('POST', '/v2/membership/agreement', {
      key: h.org.publishableKey,
      body: { address: wallet, walletEcosystem: 'evm', url: `https://a.example/${'p'.repeat(1000)}` },
      headers: { 'content-length': '20000' },
    })
    expect(big.status, big.text).toBe(200)
  })

  test("a large body is weighed at its own operation's cost: 9 units left cannot pay a deposit (10), so its body is not read", async () => {
    const { h } = await harness({ hourlyBudget: 10 })
    expect((await h.get(check)).status).toBe(200)
    const endless = (path: string) =>
      new Request(`http://localhost${path}`, {
        method: 'POST',
        headers: { 'x-api-key': h.org.secretKey, 'content-type': 'application/json', 'content-length': String(64 * 1024) },
        body: new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode('{"userAddress":')) }),
      })
    const answer = await Promise.race([h.app.handle(endless('/v2/actions/deposit/00000000-0000-4000-8000-000000000000')), Bun.sleep(2_000).then(() => 'still reading')])
    expect(answer).toBeInstanceOf(globalThis.Response)
    const r = answer as globalThis.Response
    expect([r.status, r.headers.get('connection'), r.headers.get('x-ratelimit-used')]).toEqual([429, 'close', '1'])
    // An operation the 9 units pay for is read and served (here a stream transition of 2 units, its stream unknown).
    const pause = await h.request('POST', '/v2/streams/00000000-0000-4000-8000-000000000000/pause', { rawBody: `{"x":"${'p'.repeat(20_000)}"}` })
    expect([pause.status, pause.headers.get('x-ratelimit-used')]).toEqual([404, '3'])
  })

  test('a monthly cap lower than the hourly budget refuses first, with the month end as reset', async () => {
    const { h } = await harness({ hourlyBudget: 100, monthlyBudget: 2 }, '2031-03-31T23:59:00Z')
    await h.get(check)
    await h.get(check)
    const refused = await h.get(check)
    expect(refused.status).toBe(429)
    expect(refused.body.context).toEqual({ budget: 'monthly' })
    expect(refused.body.error).toContain('monthly')
    expect(meterHeaders(refused)).toMatchObject({ 'x-ratelimit-used': '2', 'x-ratelimit-remaining': '98', 'x-monthly-remaining': '0', 'retry-after': '60' })
    expect(refused.headers.get('x-ratelimit-reset')).toBe(String(at('2031-04-01T00:00:00Z') / 1000))
  })
})

describe('windows and budgets', () => {
  test('the hour rolls over at the UTC hour and the month at the UTC month', async () => {
    const { h, clock } = await harness({ hourlyBudget: 2, monthlyBudget: 3 }, '2031-04-30T22:59:59.000Z')
    await h.get(check)
    await h.get(check)
    expect((await h.get(check)).status).toBe(429)
    clock.set(at('2031-04-30T23:00:00.000Z'))
    const nextHour = await h.get(check)
    expect(nextHour.status).toBe(200)
    expect(meterHeaders(nextHour)).toMatchObject({ 'x-ratelimit-used': '1', 'x-monthly-usage': '3', 'x-monthly-remaining': '0' })
    const capped = await h.get(check)
    expect(capped.status).toBe(429)
    expect(capped.headers.get('x-ratelimit-reset')).toBe(String(at('2031-05-01T00:00:00Z') / 1000))
    clock.set(at('2031-05-01T00:00:00.000Z'))
    const nextMonth = await h.get(check)
    expect(nextMonth.status).toBe(200)
    expect(meterHeaders(nextMonth)).toMatchObject({ 'x-ratelimit-used': '1', 'x-monthly-usage': '1', 'x-monthly-remaining': '2' })
  })

  test("a key's own budgets override the organization's, and default back to them", async () => {
    const { h, clock } = await harness({ hourlyBudget: 10, monthlyBudget: null })
    const { key, keyId } = await issueKey(h.deps, h.org.orgId, 'publishable')
    expect((await h.get(check, { key })).headers.get('x-ratelimit-limit')).toBe('10')
    await setKeyBudgets(h.deps, { keyId }, { hourlyBudget: 2, monthlyBudget: 50 })
    // Verified keys are cached for KEY_CACHE_SECONDS; budgets are seen once it lapses.
    clock.advance(3000)
    const own = await h.get(check, { key })
    expect(meterHeaders(own)).toMatchObject({ 'x-ratelimit-limit': '2', 'x-ratelimit-used': '2', 'x-monthly-limit': '50' })
    expect((await h.get(check, { key })).status).toBe(429)
    // The organization's other keys keep the organization's budget.
    expect((await h.get(check)).headers.get('x-ratelimit-limit')).toBe('10')
  })

  test('the CLI sets a key budget, and `default` gives the organization one back', async () => {
    const { h, clock } = await harness({ hourlyBudget: 10, monthlyBudget: null })
    const set = await runCommand(h.deps, ['key', 'budget', '--key', h.org.secretKey, '--hourly-budget', '4', '--monthly-budget', '40'])
    expect(set).toEqual({ keyId: h.org.secretKeyId, hourlyBudget: 4, monthlyBudget: 40 })
    clock.advance(3000)
    expect(meterHeaders(await h.get(check))).toMatchObject({ 'x-ratelimit-limit': '4', 'x-monthly-limit': '40', 'x-monthly-remaining': '39' })
    await runCommand(h.deps, ['key', 'budget', '--id', h.org.secretKeyId, '--hourly-budget', 'default', '--monthly-budget', 'default'])
    clock.advance(3000)
    const back = await h.get(check)
    expect(meterHeaders(back)).toEqual({ 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '8', 'x-ratelimit-used': '2', 'x-monthly-usage': '2' })
  })

  test('org create takes both budgets', async () => {
    const { h } = await harness({})
    const org = (await runCommand(h.deps, ['org', 'create', '--name', 'Capped', '--hourly-budget', '7', '--monthly-budget', '70'])) as { secretKey: string }
    expect(meterHeaders(await h.get(check, { key: org.secretKey }))).toMatchObject({ 'x-ratelimit-limit': '7', 'x-monthly-limit': '70' })
  })
})
