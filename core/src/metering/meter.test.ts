import { describe, expect, test } from 'bun:test'
import { decide, meterHeaders, windowCache, windowsAt } from './meter.ts'

const at = (iso: string) => Date.parse(iso)

describe('windows', () => {
  test('the hour and the month an instant falls in, UTC', () => {
    expect(windowsAt(at('2032-02-29T23:59:59.999Z'))).toEqual({
      hourId: Math.floor(at('2032-02-29T23:00:00Z') / 3_600_000),
      hourEnd: at('2032-03-01T00:00:00Z'),
      monthId: '2032-02',
      monthEnd: at('2032-03-01T00:00:00Z'),
    })
    expect(windowsAt(at('2031-12-31T23:00:00Z')).monthEnd).toBe(at('2032-01-01T00:00:00Z'))
    expect(windowsAt(at('2031-10-01T00:00:00Z')).monthId).toBe('2031-10')
  })

  test('the cache answers like windowsAt across hour and month edges, backwards too', () => {
    const windows = windowCache()
    for (const iso of ['2031-01-31T22:00:00Z', '2031-01-31T23:59:59.999Z', '2031-02-01T00:00:00Z', '2031-01-31T23:00:00Z', '2031-02-01T00:30:00Z']) {
      expect(windows(at(iso))).toEqual(windowsAt(at(iso)))
    }
  })
})

describe('headers', () => {
  const now = at('2031-04-01T10:20:30Z')
  const w = windowsAt(now)

  test('an admitted request: Remaining = Limit - Used, monthly headers only with a cap', () => {
    const d = decide({ keyId: 'k', cost: 3, budget: { hourly: 10, monthly: null }, now }, w, 2, 40)
    expect(meterHeaders(d, now)).toEqual({ 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '5', 'x-ratelimit-used': '5', 'x-monthly-usage': '43' })
    const capped = decide({ keyId: 'k', cost: 3, budget: { hourly: 10, monthly: 100 }, now }, w, 2, 40)
    expect(meterHeaders(capped, now)).toMatchObject({ 'x-monthly-limit': '100', 'x-monthly-remaining': '57', 'x-monthly-usage': '43' })
  })

  test('a refusal adds Retry-After (seconds) and X-RateLimit-Reset (epoch seconds) of the refusing window', () => {
    const hourly = decide({ keyId: 'k', cost: 3, budget: { hourly: 10, monthly: 100 }, now }, w, 9, 40)
    expect(meterHeaders(hourly, now)).toMatchObject({
      'x-ratelimit-used': '9',
      'x-ratelimit-remaining': '1',
      'retry-after': String(39 * 60 + 30),
      'x-ratelimit-reset': String(at('2031-04-01T11:00:00Z') / 1000),
    })
    const monthly = decide({ keyId: 'k', cost: 3, budget: { hourly: 10, monthly: 41 }, now }, w, 0, 40)
    expect(monthly.refusedBy).toBe('monthly')
    expect(meterHeaders(monthly, now)).toMatchObject({
      'retry-after': String((at('2031-05-01T00:00:00Z') - now) / 1000),
      'x-ratelimit-reset': String(at('2031-05-01T00:00:00Z') / 1000),
    })
  })
})
