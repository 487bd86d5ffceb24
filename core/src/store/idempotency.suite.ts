/** The idempotency-key queries' tests, run by store.suite.ts inside each engine's suite. */
import { expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { type ClaimRequest, IdempotencyClaimLost } from './idempotency.ts'
import type { NewAction, StreamRecord } from './schema.ts'
import type { Store } from './store.ts'

const T0 = 1_760_000_000_000
const LEASE = 60_000
const KEPT = 86_400_000

/** A built action's row, of no key's: what the tests write beside an answer. */
export const actionRow = (): NewAction => ({
  id: randomUUID(),
  orgId: 'o',
  distributorId: 'd',
  kind: 'deposit',
  ecosystem: 'evm',
  chainId: '1',
  wallet: `w_${randomUUID()}`,
  opportunityId: null,
  token: null,
  amount: '1',
  referralCode: null,
  txHash: null,
  createdAt: T0,
})

export function idempotencyStoreTests(store: () => Store) {
  const request = (over: Partial<ClaimRequest> = {}): ClaimRequest => ({
    id: randomUUID(),
    fingerprint: 'f1',
    token: randomUUID(),
    now: T0,
    leaseMs: LEASE,
    keptMs: KEPT,
    ...over,
  })
  const claimed = async (r: ClaimRequest) => {
    const outcome = await store().claimIdempotencyKey(r)
    if (outcome.kind !== 'claimed') throw new Error(`expected a claim, got ${outcome.kind}`)
    return outcome.claim
  }

  test('idempotency: a new key is claimed; while held, the same request is running and another is a mismatch', async () => {
    const first = request()
    const claim = await claimed(first)
    expect(claim).toEqual({ id: first.id, token: first.token })
    expect(await store().claimIdempotencyKey({ ...first, token: randomUUID(), now: T0 + 1000 })).toEqual({ kind: 'running', leaseUntil: T0 + LEASE })
    expect(await store().claimIdempotencyKey({ ...first, fingerprint: 'f2', token: randomUUID(), now: T0 + 1000 })).toEqual({ kind: 'mismatch' })
  })

  test("idempotency: the answer is written with the action rows, and given for the key from then on; another request's is a mismatch", async () => {
    const first = request()
    const claim = await claimed(first)
    const row = actionRow()
    await store().insertActions([row, actionRow()], [{ claim, answer: '{"actionId":"a"}' }])
    expect((await store().getAction(row.id))?.id).toBe(row.id)
    // Past the lease too: an answered key is answered.
    expect(await store().claimIdempotencyKey({ ...first, token: randomUUID(), now: T0 + 10 * LEASE })).toEqual({ kind: 'answered', answer: '{"actionId":"a"}' })
    expect(await store().claimIdempotencyKey({ ...first, fingerprint: 'f2', token: randomUUID(), now: T0 + 10 * LEASE })).toEqual({ kind: 'mismatch' })
    // The attempt cannot answer twice.
    const again = actionRow()
    await expect(store().insertActions([again], [{ claim, answer: '{}' }])).rejects.toBeInstanceOf(IdempotencyClaimLost)
    expect(await store().getAction(again.id)).toBeUndefined()
  })

  test('idempotency: past its lease the key is taken over, and the slow attempt then writes neither its answer nor its rows', async () => {
    const first = request()
    const slow = await claimed(first)
    const retry = await claimed({ ...first, token: randomUUID(), now: T0 + LEASE + 1 })
    expect(retry.token).not.toBe(slow.token)
    const late = actionRow()
    // In a batch with a row of no key: the whole statement is refused, as the recorder then sends each row alone.
    const bystander = actionRow()
    await expect(store().insertActions([bystander, late], [{ claim: slow, answer: '{"actionId":"slow"}' }])).rejects.toBeInstanceOf(IdempotencyClaimLost)
    expect(await store().getAction(late.id)).toBeUndefined()
    expect(await store().getAction(bystander.id)).toBeUndefined()
    const kept = actionRow()
    await store().insertActions([kept], [{ claim: retry, answer: '{"actionId":"retry"}' }])
    expect(await store().claimIdempotencyKey({ ...first, token: randomUUID(), now: T0 + LEASE + 2 })).toEqual({ kind: 'answered', answer: '{"actionId":"retry"}' })
  })

  test('idempotency: an attempt that died unreleased holds its key only to its lease; then any request takes it over, another body too', async () => {
    const first = request()
    const dead = await claimed(first)
    expect(await store().claimIdempotencyKey({ ...first, fingerprint: 'corrected', token: randomUUID(), now: T0 + LEASE - 1 })).toEqual({ kind: 'mismatch' })
    const corrected = await claimed({ ...first, fingerprint: 'corrected', token: randomUUID(), now: T0 + LEASE + 1 })
    await store().insertActions([actionRow()], [{ claim: corrected, answer: '"corrected"' }])
    await expect(store().insertActions([actionRow()], [{ claim: dead, answer: '"dead"' }])).rejects.toBeInstanceOf(IdempotencyClaimLost)
    expect(await store().claimIdempotencyKey({ ...first, fingerprint: 'corrected', token: randomUUID(), now: T0 + LEASE + 2 })).toEqual({ kind: 'answered', answer: '"corrected"' })
    expect(await store().claimIdempotencyKey({ ...first, token: randomUUID(), now: T0 + LEASE + 2 })).toEqual({ kind: 'mismatch' })
  })

  test('idempotency: a released key is claimed afresh, by any request; an answered key is not released', async () => {
    const first = request()
    await store().releaseIdempotencyKey(await claimed(first))
    const second = await claimed({ ...first, fingerprint: 'corrected', token: randomUUID(), now: T0 + 5 })
    await store().insertActions([actionRow()], [{ claim: second, answer: '"done"' }])
    await store().releaseIdempotencyKey(second)
    expect(await store().claimIdempotencyKey({ ...first, fingerprint: 'corrected', token: randomUUID(), now: T0 + 6 })).toEqual({ kind: 'answered', answer: '"done"' })
  })

  test('idempotency: a key past its keeping is new again, whatever it answered or was sent for', async () => {
    const first = request()
    await store().insertActions([actionRow()], [{ claim: await claimed(first), answer: '"old"' }])
    const later = await claimed({ ...first, fingerprint: 'other', token: randomUUID(), now: T0 + KEPT + 1 })
    expect(await store().claimIdempotencyKey({ ...first, fingerprint: 'other', token: randomUUID(), now: T0 + KEPT + 2 })).toEqual({ kind: 'running', leaseUntil: T0 + KEPT + 1 + LEASE })
    await store().releaseIdempotencyKey(later)
  })

  test('idempotency: of many concurrent claims of one key, exactly one holds it', async () => {
    const first = request({ now: T0 + 7 })
    const outcomes = await Promise.all(Array.from({ length: 12 }, () => store().claimIdempotencyKey({ ...first, token: randomUUID() })))
    expect(outcomes.filter((o) => o.kind === 'claimed')).toHaveLength(1)
    expect(outcomes.filter((o) => o.kind === 'running')).toHaveLength(11)
  })

  test('idempotency: a stream is written with its answer, or not at all where the attempt lost its key', async () => {
    const orgId = `org_${randomUUID()}`
    await store().createOrganization({ id: orgId, name: 'Idempotent', tier: 'standard', hourlyBudget: 100, monthlyBudget: null, createdAt: T0 })
    const stream = (): StreamRecord => ({
      id: randomUUID(),
      orgId,
      type: 'point',
      ecosystem: 'evm',
      chainId: '1',
      rewardToken: null,
      pointName: 'Points',
      creator: null,
      treasury: null,
      netBudget: '10',
      feeAmount: '0',
      totalPulled: '0',
      targetOpportunityId: randomUUID(),
      startTime: T0,
      endTime: T0 + KEPT,
      state: 'active',
      fundingTxHash: null,
      createdAt: T0,
      updatedAt: T0,
    })
    const first = request()
    const slow = await claimed(first)
    const retry = await claimed({ ...first, token: randomUUID(), now: T0 + LEASE + 1 })
    const late = stream()
    await expect(store().insertStream(late, { claim: slow, answer: '"slow"' })).rejects.toBeInstanceOf(IdempotencyClaimLost)
    expect(await store().getStream(late.id)).toBeUndefined()
    const kept = stream()
    await store().insertStream(kept, { claim: retry, answer: '"retry"' })
    expect((await store().getStream(kept.id))?.id).toBe(kept.id)
    expect(await store().claimIdempotencyKey({ ...first, token: randomUUID(), now: T0 + LEASE + 2 })).toEqual({ kind: 'answered', answer: '"retry"' })
  })
}
