import { expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import type { NewAction } from '../store/schema.ts'
import { ACTION_BATCH } from '../store/store.ts'
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
