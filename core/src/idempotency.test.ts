/** The idempotency flow over a real (SQLite) store; the store's own rules run on both engines in store.suite.ts. */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createActionRecorder } from './actions/recorder.ts'
import { manualClock } from './clock.ts'
import { ApiError } from './errors.ts'
import { IDEMPOTENCY_LEASE_MS, idempotently } from './idempotency.ts'
import { actionRow as action } from './store/idempotency.suite.ts'
import { createStore, type Store } from './store/store.ts'

const T0 = 1_760_000_000_000
let store: Store
beforeAll(async () => {
  store = createStore({ engine: 'sqlite', path: ':memory:' })
  await store.migrate(T0)
})
afterAll(() => store.close())

test('an attempt slower than its lease is taken over by the retry: the retry is recorded and answered, the slow one is 409 and records nothing', async () => {
  const clock = manualClock(T0)
  const deps = { store, clock }
  const recorder = createActionRecorder(store)
  const request = { orgId: 'o', key: 'k-slow', operation: 'actions.deposit', input: { amount: '1' } }
  let release = () => {}
  const gate = new Promise<void>((resolve) => (release = resolve))
  const slowRow = action()
  const slow = idempotently(deps, request, async (answering) => {
    await gate
    const result = { actionId: slowRow.id }
    await recorder.record(slowRow, answering?.(result))
    return result
  })
  // The slow attempt has claimed the key (its build waits at the gate).
  await Bun.sleep(5)
  clock.advance(IDEMPOTENCY_LEASE_MS + 1)
  const retryRow = action()
  const retry = await idempotently(deps, request, async (answering) => {
    const result = { actionId: retryRow.id }
    await recorder.record(retryRow, answering?.(result))
    return result
  })
  expect(retry).toEqual({ replayed: false, result: { actionId: retryRow.id } })
  release()
  const lost = await slow.catch((e: unknown) => e)
  expect(lost).toBeInstanceOf(ApiError)
  expect(lost).toMatchObject({ status: 409, code: 'CONFLICT', context: { 'Idempotency-Key': 'taken over by a retry' } })
  expect(await store.getAction(slowRow.id)).toBeUndefined()
  expect((await store.getAction(retryRow.id))?.id).toBe(retryRow.id)
  expect(await idempotently<{ actionId: string }>(deps, request, () => Promise.reject(new Error('must not run')))).toEqual({ replayed: true, result: { actionId: retryRow.id } })
})

test('a failed creation gives the key up: the same request runs again', async () => {
  const deps = { store, clock: manualClock(T0) }
  const request = { orgId: 'o', key: 'k-fails', operation: 'streams.create', input: {} }
  await expect(idempotently(deps, request, () => Promise.reject(new Error('refused')))).rejects.toThrow('refused')
  expect(await idempotently(deps, request, async () => 'ran')).toEqual({ replayed: false, result: 'ran' })
})

test('without a key the creation simply runs, and is given no answer to store', async () => {
  let given: unknown = 'unset'
  const outcome = await idempotently({ store, clock: manualClock(T0) }, undefined, async (answering) => {
    given = answering
    return 7
  })
  expect(outcome).toEqual({ replayed: false, result: 7 })
  expect(given).toBeUndefined()
})

test('the same input with its fields in another order is the same request; another operation is not', async () => {
  const deps = { store, clock: manualClock(T0) }
  const row = action()
  const first = await idempotently(deps, { orgId: 'o', key: 'k-order', operation: 'actions.deposit', input: { body: { a: 1, b: [{ x: 1, y: 2 }] } } }, async (answering) => {
    await store.insertActions([row], [answering!('first')])
    return 'first'
  })
  expect(first.replayed).toBe(false)
  const reordered = await idempotently(deps, { orgId: 'o', key: 'k-order', operation: 'actions.deposit', input: { body: { b: [{ y: 2, x: 1 }], a: 1 } } }, async () => 'second')
  expect(reordered).toEqual({ replayed: true, result: 'first' })
  await expect(idempotently(deps, { orgId: 'o', key: 'k-order', operation: 'actions.withdraw', input: { body: { a: 1, b: [{ x: 1, y: 2 }] } } }, async () => 'third')).rejects.toMatchObject({
    status: 400,
    context: { 'Idempotency-Key': 'used for another request' },
  })
})

test('a failed creation whose give-up fails too (the connection dropped) gives the key up on a later try, not a minute later', async () => {
  // The store is real; only its first give-up is made to fail, as one sent on a dropped PostgreSQL connection does
  // (test/store.postgres.test.ts drops the connections for real).
  let failing = 1
  const flaky: typeof store = Object.create(store)
  flaky.releaseIdempotencyKey = (claim) => (failing-- > 0 ? Promise.reject(Object.assign(new Error('gone'), { code: 'CONNECTION_CLOSED' })) : store.releaseIdempotencyKey(claim))
  const deps = { store: flaky, clock: manualClock(T0) }
  const request = { orgId: 'o', key: 'k-dropped', operation: 'actions.deposit', input: {} }
  await expect(idempotently(deps, request, () => Promise.reject(new Error('write failed')))).rejects.toThrow('write failed')
  // Held still: the first give-up failed.
  await expect(idempotently(deps, request, async () => 'early')).rejects.toMatchObject({ status: 409, retryAfterSeconds: 1 })
  await Bun.sleep(400)
  expect(await idempotently(deps, request, async () => 'ran')).toEqual({ replayed: false, result: 'ran' })
})
