import { expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { NewAction } from '../store/schema.ts'
import { ACTION_BATCH, createStore } from '../store/store.ts'
import { createActionRecorder } from './recorder.ts'

const row = (): NewAction => ({ id: randomUUID(), orgId: 'o', distributorId: 'd', kind: 'deposit', ecosystem: 'evm', chainId: '1', wallet: 'w', opportunityId: 'x', token: 't', amount: '1', referralCode: null, txHash: null, createdAt: 1 })

test('rows recorded in one turn go in one insert, and each caller resumes after it', async () => {
  const batches: NewAction[][] = []
  let committed = false
  const recorder = createActionRecorder({
    insertActions: async (rows) => {
      batches.push([...rows])
      await Bun.sleep(5)
      committed = true
    },
  })
  const rows = Array.from({ length: 40 }, row)
  const done = rows.map((r) => recorder.record(r).then(() => committed))
  expect(await Promise.all(done)).toEqual(rows.map(() => true))
  expect(batches.map((b) => b.length)).toEqual([40])
  await recorder.record(row())
  expect(batches.map((b) => b.length)).toEqual([40, 1])
})

test('a failed insert fails every caller of its batch; more rows than one statement holds are split', async () => {
  const sizes: number[] = []
  const failing = createActionRecorder({
    insertActions: async (rows) => {
      sizes.push(rows.length)
      throw new Error('disk full')
    },
  })
  const results = await Promise.allSettled([failing.record(row()), failing.record(row())])
  expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected'])
  sizes.length = 0
  const ok = createActionRecorder({ insertActions: async (rows) => void sizes.push(rows.length) })
  await Promise.all(Array.from({ length: ACTION_BATCH + 5 }, () => ok.record(row())))
  expect(sizes).toEqual([ACTION_BATCH, 5])
})

test('a batch the store cannot take now (its write lock held past the timeout) fails every caller at once, not row after row', async () => {
  // A real SQLITE_BUSY, from a second connection to a file whose write lock the first holds.
  const dir = mkdtempSync(join(tmpdir(), 'earn-recorder-'))
  const holder = new Database(join(dir, 'earn.sqlite'), { create: true })
  const waiter = new Database(join(dir, 'earn.sqlite'))
  let busy: unknown
  try {
    holder.exec('pragma journal_mode = wal; begin immediate')
    waiter.exec('pragma busy_timeout = 0')
    waiter.exec('begin immediate')
  } catch (e) {
    busy = e
  } finally {
    waiter.close()
    holder.close()
    rmSync(dir, { recursive: true, force: true })
  }
  expect((busy as { code?: string }).code).toStartWith('SQLITE_BUSY')
  let calls = 0
  const recorder = createActionRecorder({
    insertActions: async () => {
      calls++
      throw busy
    },
  })
  const results = await Promise.allSettled(Array.from({ length: 5 }, () => recorder.record(row())))
  expect(results.map((r) => r.status === 'rejected' && r.reason)).toEqual(Array(5).fill(busy))
  // Each row again would have waited out the busy timeout once more, the event loop blocked each time.
  expect(calls).toBe(1)
})

test('a row its batch cannot store fails only its own caller: the others are stored', async () => {
  const store = createStore({ engine: 'sqlite', path: ':memory:' })
  await store.migrate(0)
  const taken = row()
  await store.insertActions([taken])
  const recorder = createActionRecorder(store)
  const rows = [row(), { ...row(), id: taken.id }, row()]
  const results = await Promise.allSettled(rows.map((r) => recorder.record(r)))
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
  for (const r of [rows[0]!, rows[2]!]) expect((await store.getAction(r.id))?.id).toBe(r.id)
  await store.close()
})

test("an idempotent build whose key was taken over fails alone: its batch's other rows, and their answers, are stored", async () => {
  const store = createStore({ engine: 'sqlite', path: ':memory:' })
  await store.migrate(0)
  const claim = async (id: string, token: string, now: number) => {
    const outcome = await store.claimIdempotencyKey({ id, fingerprint: 'f', token, now, leaseMs: 10, keptMs: 1000 })
    if (outcome.kind !== 'claimed') throw new Error(outcome.kind)
    return outcome.claim
  }
  const lost = await claim('k1', 'slow', 0)
  await claim('k1', 'retry', 11)
  const held = await claim('k2', 'only', 11)
  const recorder = createActionRecorder(store)
  const rows = [row(), row(), row()]
  const results = await Promise.allSettled([
    recorder.record(rows[0]!, { claim: lost, answer: '"lost"' }),
    recorder.record(rows[1]!, { claim: held, answer: '"held"' }),
    recorder.record(rows[2]!),
  ])
  expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled'])
  expect(await store.getAction(rows[0]!.id)).toBeUndefined()
  for (const r of [rows[1]!, rows[2]!]) expect((await store.getAction(r.id))?.id).toBe(r.id)
  expect(await store.claimIdempotencyKey({ id: 'k2', fingerprint: 'f', token: 'later', now: 12, leaseMs: 10, keptMs: 1000 })).toEqual({ kind: 'answered', answer: '"held"' })
  await store.close()
})
