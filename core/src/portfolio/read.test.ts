/**
 * The order of a portfolio's reads. The plugin here is a stand-in that counts its reads in flight: what is tested is
 * core's scheduling, which no chain decides (the ecosystems' own portfolio tests read real chains).
 */
import { describe, expect, test } from 'bun:test'
import { UnavailableError } from '../errors.ts'
import { PortfolioChainError } from './errors.ts'
import { readTurns, readWallet } from './read.ts'

function standIn(readsAtOnce: number | undefined, fails?: (token: string) => boolean) {
  const count = { inFlight: 0, most: 0, started: 0 }
  const plugin = {
    id: 'ton',
    balance: {
      readsAtOnce,
      async read(_client: unknown, p: { token: string }) {
        count.started++
        count.inFlight++
        count.most = Math.max(count.most, count.inFlight)
        await Bun.sleep(5)
        count.inFlight--
        if (fails?.(p.token)) throw new UnavailableError('the stand-in endpoint did not answer')
        return BigInt(p.token.slice(1))
      },
      flows: async () => null,
      assets: async () => 0n,
    },
  }
  return { count, loaded: { plugin: plugin as never, client: {} } }
}

const tokens = (n: number) => Array.from({ length: n }, (_, i) => ({ chainId: '-239', address: `t${i}`, symbol: 'T', decimals: 9, receipt: false }))

describe('readWallet', () => {
  test('with `readsAtOnce`, that many reads in flight at a time, every balance read', async () => {
    const { count, loaded } = standIn(4)
    const reading = await readWallet(loaded, 'owner', tokens(40), [], new Set())
    expect(count.most).toBe(4)
    expect([...reading.balances.values()]).toEqual(Array.from({ length: 40 }, (_, i) => BigInt(i)))
  })

  test('without it, every read at once (EVM folds them into one call a chain)', async () => {
    const { count, loaded } = standIn(undefined)
    await readWallet(loaded, 'owner', tokens(40), [], new Set())
    expect(count.most).toBe(40)
  })

  test('once a chain fails the portfolio, the reads still waiting for their turn are never sent', async () => {
    const { count, loaded } = standIn(2, (token) => token === 't3')
    const error = await readWallet(loaded, 'owner', tokens(50), [], new Set()).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(PortfolioChainError)
    expect((error as PortfolioChainError).context).toMatchObject({ chainId: '-239' })
    await Bun.sleep(100)
    // t0..t3 and at most the read that took t3's place: not the other 45.
    expect(count.started).toBeLessThanOrEqual(6)
  })

  test("once the request's client has gone, the reads still waiting are never sent", async () => {
    const { count, loaded } = standIn(2)
    const gone = new AbortController()
    const reading = readWallet(loaded, 'owner', tokens(50), [], new Set(), gone.signal).catch((e: unknown) => e)
    await Bun.sleep(12)
    gone.abort()
    expect(await reading).toBeInstanceOf(PortfolioChainError)
    await Bun.sleep(50)
    // The two in flight when it left, and those before them: not the 50.
    expect(count.started).toBeLessThanOrEqual(8)
  })
})

describe('readTurns', () => {
  test('a read still waiting when the time is up is never sent: a 503 naming its chain', async () => {
    const turns = readTurns(1, 50)
    let second = false
    const first = turns.run('-239', () => Bun.sleep(150).then(() => 'first'))
    const waited = await turns.run('-239', async () => ((second = true), 'second')).catch((e: unknown) => e)
    expect(waited).toBeInstanceOf(UnavailableError)
    expect((waited as UnavailableError).message).toBe("chain -239 did not answer this portfolio's reads in time (one waited 0.05 s for its turn); retry later")
    // The read that had its turn runs to its end.
    expect(await first).toBe('first')
    expect(second).toBe(false)
    turns.stop()
  })

  test('what is limited is the wait: a read given a free slot runs however long the portfolio has taken', async () => {
    const turns = readTurns(1, 50)
    expect(await turns.run('-239', () => Bun.sleep(100).then(() => 'balances'))).toBe('balances')
    // The valuations after the balances, past the 50 ms: each has its own wait.
    expect(await turns.run('-239', async () => 'value')).toBe('value')
    turns.stop()
  })
})
