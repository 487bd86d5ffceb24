/** The stream queries' tests, run by store.suite.ts inside each engine's suite. */
import { expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import type { StreamRecord } from './schema.ts'
import type { Store } from './store.ts'

const T0 = 1_760_000_000_000
const HOUR = 3_600_000

export function streamStoreTests(store: () => Store) {
  const newOrg = async () => {
    const id = `org_${randomUUID()}`
    await store().createOrganization({ id, name: 'Streams', tier: 'standard', hourlyBudget: 100, monthlyBudget: null, createdAt: T0 })
    return id
  }
  const stream = (orgId: string, over: Partial<StreamRecord> = {}): StreamRecord => ({
    id: randomUUID(),
    orgId,
    type: 'token',
    ecosystem: 'evm',
    chainId: '1',
    rewardToken: '0x' + 'aa'.repeat(20),
    pointName: null,
    creator: '0x' + 'bb'.repeat(20),
    treasury: '0x' + 'cc'.repeat(20),
    netBudget: (2n ** 256n - 1n).toString(),
    feeAmount: '15001',
    totalPulled: '1015002',
    targetOpportunityId: randomUUID(),
    startTime: T0,
    endTime: T0 + 10 * HOUR,
    state: 'pending',
    fundingTxHash: null,
    createdAt: T0,
    updatedAt: T0,
    ...over,
  })

  test('streams: a stream round-trips with every digit of its amounts', async () => {
    const row = stream(await newOrg())
    await store().insertStream(row)
    expect(await store().getStream(row.id)).toEqual(row)
    expect(await store().getStream(randomUUID())).toBeUndefined()
  })

  test("streams: those still running for an opportunity, any organization's, up to a limit; none cancelled, completed or ended", async () => {
    const target = randomUUID()
    const [a, b] = [await newOrg(), await newOrg()]
    const live = [
      stream(a, { targetOpportunityId: target }),
      stream(b, { targetOpportunityId: target, state: 'active', fundingTxHash: `0x${randomUUID()}` }),
      stream(a, { targetOpportunityId: target, state: 'paused', fundingTxHash: `0x${randomUUID()}` }),
    ]
    const over = [
      stream(a, { targetOpportunityId: target, state: 'cancelled' }),
      stream(a, { targetOpportunityId: target, state: 'completed', fundingTxHash: `0x${randomUUID()}` }),
      stream(b, { targetOpportunityId: target, state: 'active', endTime: T0 + HOUR, fundingTxHash: `0x${randomUUID()}` }),
      stream(b, { targetOpportunityId: target, endTime: T0 + HOUR }),
      stream(a),
    ]
    for (const row of [...live, ...over]) await store().insertStream(row)
    const now = T0 + HOUR // the streams ending at T0 + HOUR have ended
    expect(await store().liveStreamsTargeting(target, now, 10)).toEqual(live.map((r) => r.id).sort())
    expect(await store().liveStreamsTargeting(target, now, 2)).toEqual(live.map((r) => r.id).sort().slice(0, 2))
    expect(await store().liveStreamsTargeting(target, T0 + 10 * HOUR, 10)).toEqual([])
    expect(await store().liveStreamsTargeting(randomUUID(), now, 10)).toEqual([])
  })

  test("streams: the pending token streams still running, any organization's, soonest end first, up to a limit", async () => {
    const [a, b] = [await newOrg(), await newOrg()]
    // Later than every other test's streams, so only these end after `now`.
    const now = T0 + 1000 * HOUR
    const later = stream(a, { endTime: now + 3 * HOUR })
    const sooner = stream(b, { endTime: now + HOUR })
    await Promise.all(
      [
        later,
        sooner,
        stream(a, { endTime: now + 2 * HOUR, state: 'active' }),
        stream(a, { endTime: now + 2 * HOUR, type: 'point', rewardToken: null, creator: null, treasury: null, pointName: 'XP' }),
        stream(b, { endTime: now }),
      ].map((r) => store().insertStream(r)),
    )
    expect((await store().pendingTokenStreams(now, 10)).map((r) => r.id)).toEqual([sooner.id, later.id])
    expect(await store().pendingTokenStreams(now, 1)).toEqual([sooner])
    // One treasury and token's alone; and where they are, each once.
    const elsewhere = stream(a, { endTime: now + 4 * HOUR, treasury: '0x' + 'dd'.repeat(20) })
    await store().insertStream(elsewhere)
    const look = { ecosystem: 'evm', chainId: '1', treasury: '0x' + 'dd'.repeat(20), rewardToken: '0x' + 'aa'.repeat(20) }
    expect(await store().pendingTokenStreams(now, 10, look)).toEqual([elsewhere])
    expect(await store().pendingFundingLooks(now, 10)).toEqual([{ ...look, treasury: '0x' + 'cc'.repeat(20) }, look])
    expect(await store().pendingFundingLooks(now, 1)).toEqual([{ ...look, treasury: '0x' + 'cc'.repeat(20) }])
    // Paged by key: after the first, the next.
    expect(await store().pendingFundingLooks(now, 1, { ...look, treasury: '0x' + 'cc'.repeat(20) })).toEqual([look])
    expect(await store().pendingFundingLooks(now, 10, look)).toEqual([])
  })

  test("streams: where the watch's look at a treasury and token got to is kept, written over, and forgotten once old", async () => {
    const look = { ecosystem: 'evm', chainId: '1', treasury: `0x${randomUUID().replaceAll('-', '')}`, rewardToken: '0x' + 'aa'.repeat(20) }
    const other = { ...look, rewardToken: '0x' + 'ab'.repeat(20) }
    expect(await store().getLookProgress(look)).toBeUndefined()
    await store().putLookProgress(look, { cursor: '17', again: [['0xaa', 3], ['0xbb', 1]], updatedAt: T0 })
    await store().putLookProgress(other, { cursor: '', again: [], updatedAt: T0 + HOUR })
    expect(await store().getLookProgress(look)).toEqual({ cursor: '17', again: [['0xaa', 3], ['0xbb', 1]], updatedAt: T0 })
    await store().putLookProgress(look, { cursor: '18446744073709551615', again: [], updatedAt: T0 + 2 * HOUR })
    expect(await store().getLookProgress(look)).toEqual({ cursor: '18446744073709551615', again: [], updatedAt: T0 + 2 * HOUR })
    expect(await store().getLookProgress(other)).toEqual({ cursor: '', again: [], updatedAt: T0 + HOUR })
    // Not over a later one (a writer whose clock is behind).
    await store().putLookProgress(look, { cursor: '5', again: [], updatedAt: T0 + HOUR })
    expect((await store().getLookProgress(look))?.cursor).toBe('18446744073709551615')
    // Before T0 + 2h: the other look alone (other tests' rows, kept at other times, may go too).
    expect(await store().deleteLookProgress(T0 + 2 * HOUR)).toBeGreaterThanOrEqual(1)
    expect(await store().getLookProgress(other)).toBeUndefined()
    expect((await store().getLookProgress(look))?.cursor).toBe('18446744073709551615')
  })

  test('streams: a state change lands only from the stored state it expects, once under concurrency', async () => {
    const row = stream(await newOrg(), { state: 'active', fundingTxHash: `0x${randomUUID()}` })
    await store().insertStream(row)
    expect(await store().setStreamState(row.id, { from: 'pending', to: 'active', at: T0 + 1 })).toBe(false)
    const results = await Promise.all(Array.from({ length: 10 }, () => store().setStreamState(row.id, { from: 'active', to: 'paused', at: T0 + 2 })))
    expect(results.filter(Boolean)).toHaveLength(1)
    expect(await store().getStream(row.id)).toMatchObject({ state: 'paused', updatedAt: T0 + 2 })
  })

  test('streams: funding records the transaction once; it cannot fund a second stream', async () => {
    const orgId = await newOrg()
    const a = stream(orgId)
    const b = stream(orgId)
    await store().insertStream(a)
    await store().insertStream(b)
    const txHash = `0x${randomUUID()}`
    expect(await store().fundStream(a.id, { chainId: '1', txHash, at: T0 + 5 })).toBe('funded')
    expect(await store().getStream(a.id)).toMatchObject({ state: 'active', fundingTxHash: txHash, updatedAt: T0 + 5 })
    expect(await store().fundStream(b.id, { chainId: '1', txHash, at: T0 + 6 })).toBe('tx_used')
    // The same stream confirmed again with its own transaction (two confirms at once): no longer pending, not "used".
    expect(await store().fundStream(a.id, { chainId: '1', txHash, at: T0 + 6 })).toBe('not_pending')
    expect(await store().fundStream(a.id, { chainId: '1', txHash: `0x${randomUUID()}`, at: T0 + 7 })).toBe('not_pending')
    expect(await store().getStream(b.id)).toMatchObject({ state: 'pending', fundingTxHash: null })
    // The same hash on another chain is another transaction.
    const d = stream(orgId, { chainId: '2' })
    await store().insertStream(d)
    expect(await store().fundStream(d.id, { chainId: '2', txHash, at: T0 + 8 })).toBe('funded')
    // The unique index holds even past the check.
    const c = stream(orgId, { state: 'active', fundingTxHash: txHash })
    await expect(store().insertStream(c)).rejects.toThrow()
  })

  test("streams: one transaction funds streams of other creators or reward tokens (a bundle's), each once", async () => {
    const orgId = await newOrg()
    const txHash = `0x${randomUUID()}`
    const first = stream(orgId)
    const otherCreator = stream(orgId, { creator: '0x' + 'dd'.repeat(20) })
    const otherToken = stream(await newOrg(), { rewardToken: 'native' })
    const sameAgain = stream(orgId)
    for (const s of [first, otherCreator, otherToken, sameAgain]) await store().insertStream(s)
    const funded = await Promise.all([first, otherCreator, otherToken].map((s) => store().fundStream(s.id, { chainId: '1', txHash, at: T0 + 5 })))
    expect(funded).toEqual(['funded', 'funded', 'funded'])
    expect(await store().fundStream(sameAgain.id, { chainId: '1', txHash, at: T0 + 6 })).toBe('tx_used')
    // The index holds past the check too: a stream of the first's creator and token, recorded with the same hash.
    await expect(store().insertStream(stream(orgId, { state: 'active', fundingTxHash: txHash }))).rejects.toThrow()
  })

  test('streams: two streams funded by one transaction at once: one is funded, the other told the transaction is used, never an error', async () => {
    const orgId = await newOrg()
    for (let round = 0; round < 10; round++) {
      const pair = [stream(orgId), stream(orgId)]
      for (const s of pair) await store().insertStream(s)
      const txHash = `0x${randomUUID()}`
      const outcomes = await Promise.all(pair.map((s) => store().fundStream(s.id, { chainId: '1', txHash, at: T0 + 5 })))
      expect(outcomes.sort()).toEqual(['funded', 'tx_used'])
    }
  })

  test("streams: the list is one organization's, newest first, paged, filtered on the state as read at now", async () => {
    const orgId = await newOrg()
    const other = await newOrg()
    const rows = [
      stream(orgId, { createdAt: T0 + 1, state: 'pending' }),
      stream(orgId, { createdAt: T0 + 2, state: 'active', fundingTxHash: `0x${randomUUID()}` }),
      stream(orgId, { createdAt: T0 + 3, state: 'paused', fundingTxHash: `0x${randomUUID()}` }),
      stream(orgId, { createdAt: T0 + 4, state: 'active', endTime: T0 + HOUR, fundingTxHash: `0x${randomUUID()}` }),
      stream(orgId, { createdAt: T0 + 5, state: 'cancelled', type: 'point', rewardToken: null, creator: null, treasury: null, pointName: 'XP', totalPulled: '0' }),
      stream(other, { createdAt: T0 + 6 }),
    ]
    for (const r of rows) await store().insertStream(r)
    const now = T0 + 2 * HOUR
    const ids = async (state?: StreamRecord['state'], offset = 0, limit = 10) =>
      (await store().listStreams({ orgId, state, now, offset, limit })).rows.map((r) => rows.indexOf(rows.find((x) => x.id === r.id)!))
    expect(await ids()).toEqual([4, 3, 2, 1, 0])
    expect((await store().listStreams({ orgId, now, offset: 1, limit: 2 })).total).toBe(5)
    expect(await ids(undefined, 1, 2)).toEqual([3, 2])
    expect(await ids('active')).toEqual([1])
    expect(await ids('completed')).toEqual([3])
    expect(await ids('paused')).toEqual([2])
    expect(await ids('pending')).toEqual([0])
    expect(await ids('cancelled')).toEqual([4])
    // Later, every running stream reads as completed.
    expect((await store().listStreams({ orgId, state: 'completed', now: T0 + 11 * HOUR, offset: 0, limit: 10 })).total).toBe(3)
    expect((await store().listStreams({ orgId: other, now, offset: 0, limit: 10 })).rows.map((r) => r.id)).toEqual([rows[5]!.id])
    // Past the end: no rows, and the total still counts them all.
    expect(await store().listStreams({ orgId, now, offset: 10, limit: 10 })).toEqual({ rows: [], total: 5 })
  })

  test('streams: a page and its total agree while streams are paused and resumed', async () => {
    const orgId = await newOrg()
    const rows = Array.from({ length: 12 }, (_, i) => stream(orgId, { createdAt: T0 + i, state: 'active', fundingTxHash: `0x${randomUUID()}` }))
    for (const r of rows) await store().insertStream(r)
    let stop = false
    // Each change moves a stream into or out of the filter: a total counted apart from the page (another
    // statement, another snapshot) disagrees with it now and then.
    const togglers = rows.slice(0, 2).map(async (_, w) => {
      for (let n = w; !stop; n += 2) {
        const r = rows[n % rows.length]!
        const paused = Math.floor(n / rows.length) % 2 === 1
        await store().setStreamState(r.id, paused ? { from: 'paused', to: 'active', at: T0 + n } : { from: 'active', to: 'paused', at: T0 + n })
      }
    })
    const disagreements: string[] = []
    try {
      for (let i = 0; i < 500; i++) {
        const { rows: page, total } = await store().listStreams({ orgId, state: 'active', now: T0, offset: 0, limit: 100 })
        if (page.length !== total) disagreements.push(`${page.length} rows, total ${total}`)
      }
    } finally {
      stop = true
      await Promise.all(togglers)
    }
    expect(disagreements).toEqual([])
  })
}
