import { describe, expect, test } from 'bun:test'
import { createMemoryMeter } from './memory.ts'
import type { Meter } from './meter.ts'
import { createResilientMeter } from './resilient.ts'

/** A primary whose health a test switches: up, down (fails at once) or hung (never answers). */
function switchable() {
  const inner = createMemoryMeter()
  // 'refusing': PING answers but the metering script is refused (an ACL without EVALSHA). 'readOnly': the script runs
  // but may not write (a replica after a failover): an admit that charges fails, a cost-0 one is answered.
  let mode: 'up' | 'down' | 'hung' | 'refusing' | 'readOnly' = 'up'
  let calls = 0
  const gate = <T>(f: () => Promise<T>, script = false, writes = false): Promise<T> => {
    calls++
    if (mode === 'down') return Promise.reject(new Error('connection refused'))
    if (mode === 'hung') return new Promise(() => {})
    if (mode === 'refusing' && script) return Promise.reject(new Error("NOPERM User earn has no permissions to run the 'evalsha' command"))
    if (mode === 'readOnly' && writes) return Promise.reject(new Error("READONLY You can't write against a read only replica."))
    return f()
  }
  const meter: Meter = {
    kind: 'redis',
    admit: (p) => gate(() => inner.admit(p), true, p.cost > 0),
    ping: () => gate(() => inner.ping()),
    close: async () => {},
  }
  return { meter, set: (m: typeof mode) => (mode = m), calls: () => calls }
}

/** As Redis's own error replies read (the Redis meter tells them by class: `isRedisRefusal`). */
const refused = (e: unknown) => e instanceof Error && /^(NOPERM|READONLY) /.test(e.message)

const p = (keyId: string) => ({ keyId, cost: 1, budget: { hourly: 3, monthly: null }, now: Date.parse('2031-01-01T00:00:00Z') })

describe('resilient meter', () => {
  test('a failing primary: requests are metered in-process, readiness says degraded, then it recovers by itself', async () => {
    const primary = switchable()
    const changes: string[] = []
    const meter = createResilientMeter({ primary: primary.meter, fallback: createMemoryMeter(), outage: 'open', probeMs: 20, refused, onChange: (s) => changes.push(s) })
    expect((await meter.admit(p('k'))).hourly.used).toBe(1)
    primary.set('down')
    // The fallback counts from zero, against the full budget, and still refuses past it.
    expect(await meter.admit(p('k'))).toMatchObject({ admitted: true, hourly: { used: 1 } })
    expect(meter.state).toBe('fallback')
    await meter.admit(p('k'))
    await meter.admit(p('k'))
    expect((await meter.admit(p('k'))).admitted).toBe(false)
    expect(await meter.ping()).toEqual({ state: 'degraded', reason: expect.stringContaining('connection refused') })
    expect(changes).toEqual(['fallback'])

    primary.set('up')
    const deadline = Date.now() + 2000
    while (meter.state !== 'primary' && Date.now() < deadline) await Bun.sleep(5)
    expect(meter.state).toBe('primary')
    expect(changes).toEqual(['fallback', 'primary'])
    // Back on the primary's own count (1 used before the outage): nothing was merged into it.
    expect((await meter.admit(p('k'))).hourly.used).toBe(2)
    expect(await meter.ping()).toEqual({ state: 'ok' })

    // A second outage in the same hour goes on from what this process admitted in the first (which the primary
    // never saw): a Redis that flaps does not hand a key its budget afresh each time.
    primary.set('down')
    expect(await meter.admit(p('k'))).toMatchObject({ admitted: false, hourly: { used: 3 } })
    await meter.close()
  })

  test('closed: while the primary is down nothing is admitted, the key told its counts as the primary last gave them, and readiness fails; then it recovers by itself', async () => {
    const primary = switchable()
    const changes: string[] = []
    const meter = createResilientMeter({ primary: primary.meter, fallback: createMemoryMeter(), outage: 'closed', probeMs: 20, refused, onChange: (s) => changes.push(s) })
    await meter.admit(p('k'))
    expect((await meter.admit(p('k'))).hourly.used).toBe(2)
    primary.set('down')
    for (let i = 0; i < 5; i++) expect(await meter.admit(p('k'))).toMatchObject({ admitted: false, unavailable: 'redis unreachable', hourly: { limit: 3, used: 2 } })
    // A key the primary never answered for: its windows, nothing used.
    expect(await meter.admit(p('other'))).toMatchObject({ admitted: false, unavailable: 'redis unreachable', hourly: { used: 0 }, monthly: { used: 0 } })
    // Counts from an hour that has ended are not this hour's.
    expect(await meter.admit({ ...p('k'), now: p('k').now + 3_600_000 })).toMatchObject({ admitted: false, hourly: { used: 0 } })
    await expect(meter.ping()).rejects.toThrow(/redis unreachable \(connection refused\); metered requests are refused until it is back/)
    expect(changes).toEqual(['fallback'])

    primary.set('up')
    const deadline = Date.now() + 2000
    while (meter.state !== 'primary' && Date.now() < deadline) await Bun.sleep(5)
    expect(changes).toEqual(['fallback', 'primary'])
    // On the primary's own count: nothing was admitted meanwhile.
    expect(await meter.admit(p('k'))).toMatchObject({ admitted: true, hourly: { used: 3 } })
    expect(await meter.ping()).toEqual({ state: 'ok' })
    await meter.close()
  })

  test('a primary that answers PING but refuses the script is probed ever less often, not switched to and from twice a second', async () => {
    const primary = switchable()
    const changes: string[] = []
    const meter = createResilientMeter({ primary: primary.meter, fallback: createMemoryMeter(), outage: 'open', probeMs: 20, refused, onChange: (s) => changes.push(s) })
    primary.set('refusing')
    const until = Date.now() + 1_000
    let answered = 0
    while (Date.now() < until) {
      if ((await meter.admit(p(`k${answered}`))).admitted) answered++
      await Bun.sleep(2)
    }
    // Every request was answered (by the fallback). Probing at a steady 20 ms would switch ~50 times a second; doubling
    // from 20 ms (20, 40, 80, 160, 320, 640) leaves at most ~6 recoveries in a second, each followed by a failure.
    expect(answered).toBeGreaterThan(100)
    expect(changes.length).toBeLessThanOrEqual(14)
    expect(changes.slice(0, 4)).toEqual(['fallback', 'primary', 'fallback', 'primary'])

    // Healthy again: back on the primary by itself.
    primary.set('up')
    const deadline = Date.now() + 3_000
    while (meter.state !== 'primary' && Date.now() < deadline) await Bun.sleep(5)
    expect(meter.state).toBe('primary')
    await meter.close()
  })

  test('a read-only primary answering the cost-0 admits in between is still probed ever less often', async () => {
    const primary = switchable()
    const changes: string[] = []
    const meter = createResilientMeter({ primary: primary.meter, fallback: createMemoryMeter(), outage: 'open', probeMs: 20, refused, onChange: (s) => changes.push(s) })
    primary.set('readOnly')
    const until = Date.now() + 1_000
    for (let i = 0; Date.now() < until; i++) {
      // A usage check (a body's budget, a late key's headers) between charged requests, as a client retrying does.
      await meter.admit({ ...p(`r${i}`), cost: 0 })
      await meter.admit(p(`r${i}`))
      await Bun.sleep(2)
    }
    // As for a primary refusing the script: at most ~6 returns in a second, where a steady 20 ms probe gives ~50.
    expect(changes.length).toBeLessThanOrEqual(14)
    await meter.close()
  })

  test.each([
    ['charging between its outages', (i: number) => `flap${i}`],
    // A key spent in the primary: every admit between outages is a refusal, nothing written.
    ['only refusing a spent key between its outages', () => 'spent'],
  ])('a primary whose connection flaps, %s, is probed at the base interval after each: back within it', async (_, key) => {
    const primary = switchable()
    const meter = createResilientMeter({ primary: primary.meter, fallback: createMemoryMeter(), outage: 'open', probeMs: 20, refused })
    for (let i = 0; i < 3; i++) await meter.admit(p('spent'))
    // Down for 100 ms, then up and serving for 150 ms, five times (within the 10 s that counts as flapping).
    const backAfter: number[] = []
    for (let i = 0; i < 5; i++) {
      primary.set('down')
      await meter.admit(p(key(i)))
      expect(meter.state).toBe('fallback')
      await Bun.sleep(100)
      primary.set('up')
      const restored = performance.now()
      while (meter.state !== 'primary' && performance.now() - restored < 2_000) await Bun.sleep(2)
      backAfter.push(performance.now() - restored)
      await meter.admit(p(key(i)))
      expect(meter.state).toBe('primary')
      await Bun.sleep(150)
    }
    // Doubling on each return would have made the fifth wait ~320 ms (20, 40, 80, 160, 320).
    expect(Math.max(...backAfter)).toBeLessThan(100)
    await meter.close()
  })

  test('a hung primary costs a request at most the timeout, and the ones after it nothing', async () => {
    const primary = switchable()
    const meter = createResilientMeter({ primary: primary.meter, fallback: createMemoryMeter(), outage: 'open', timeoutMs: 100, probeMs: 10_000 })
    primary.set('hung')
    let started = performance.now()
    expect((await meter.admit(p('k'))).admitted).toBe(true)
    expect(performance.now() - started).toBeGreaterThanOrEqual(70)
    expect(performance.now() - started).toBeLessThan(1000)
    const callsBefore = primary.calls()
    started = performance.now()
    for (let i = 0; i < 10; i++) await meter.admit(p(`k${i}`))
    expect(performance.now() - started).toBeLessThan(50)
    expect(primary.calls()).toBe(callsBefore)
    await meter.close()
  })

  test('a hung primary on a loop that is late at every step still gives up, after twice the timeout of counted steps', async () => {
    const primary = switchable()
    const meter = createResilientMeter({ primary: primary.meter, fallback: createMemoryMeter(), outage: 'open', timeoutMs: 100, probeMs: 10_000 })
    primary.set('hung')
    // Every 20 ms step of the deadline comes ~40 ms late: the loop is busy that long at every turn.
    const hog = setInterval(() => {
      const until = performance.now() + 40
      while (performance.now() < until) {}
    }, 0)
    try {
      const started = performance.now()
      expect((await meter.admit(p('k'))).admitted).toBe(true)
      expect(meter.state).toBe('fallback')
      // Ten late steps of 20 ms counted: well past the 100 ms a responsive loop would wait, and bounded.
      expect(performance.now() - started).toBeGreaterThanOrEqual(200)
      expect(performance.now() - started).toBeLessThan(3000)
    } finally {
      clearInterval(hog)
      await meter.close()
    }
  })

  test('a late-answered charge whose refund keeps failing is told to onRefundLost (the key may stay counted); one that lands is not', async () => {
    // A test double (the real Redis cases are test/meter.redis-outage.test.ts): a charge that answers 80 ms late, and a
    // refund that fails `failures` times first. Six failures run ~30 s of retries; closing the meter ends them.
    const lateWithRefund = (failures: number) => {
      const inner = createMemoryMeter()
      let refunds = 0
      const meter: Meter = {
        kind: 'redis',
        admit: async (q) => {
          await Bun.sleep(80)
          return inner.admit(q)
        },
        refund: async () => {
          refunds++
          if (refunds <= failures) throw new Error('connection lost')
        },
        ping: () => inner.ping(),
        close: async () => {},
      }
      return { meter, refunds: () => refunds }
    }
    const lost: { keyId: string; cause: string }[] = []
    const onRefundLost = (q: { keyId: string }, cause: unknown) => lost.push({ keyId: q.keyId, cause: String(cause) })

    const landing = lateWithRefund(1)
    const a = createResilientMeter({ primary: landing.meter, fallback: createMemoryMeter(), outage: 'open', timeoutMs: 20, probeMs: 10_000, onRefundLost })
    await a.admit(p('k1'))
    const deadline = Date.now() + 3000
    while (landing.refunds() < 2 && Date.now() < deadline) await Bun.sleep(10)
    expect(landing.refunds()).toBe(2)
    await a.close()
    expect(lost).toEqual([])

    const failing = lateWithRefund(Infinity)
    const b = createResilientMeter({ primary: failing.meter, fallback: createMemoryMeter(), outage: 'open', timeoutMs: 20, probeMs: 10_000, onRefundLost })
    await b.admit(p('k2'))
    while (failing.refunds() < 1 && Date.now() < deadline) await Bun.sleep(10)
    await b.close()
    // The retry after the close is the last.
    while (!lost.length && Date.now() < deadline + 1000) await Bun.sleep(10)
    expect(lost).toEqual([{ keyId: 'k2', cause: 'Error: connection lost' }])
    expect(failing.refunds()).toBe(2)
  })
})
