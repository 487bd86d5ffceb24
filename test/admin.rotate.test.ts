/**
 * `key rotate` run twice at once on one key (two CLI processes, two store connections): one rotation wins and the
 * other is refused, leaving one live replacement, not two. On both engines.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { createOrganization, createStore, rotateKey, setKeyBudgets, systemClock, type Store } from '@earn/core'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DATABASE_URL, freshSchema, postgresAvailable } from './services.ts'

const withPostgres = await postgresAvailable()
const cleanups: (() => Promise<void> | void)[] = []
afterAll(async () => {
  for (const c of cleanups) await c()
})

async function raceRotations(open: () => Store) {
  const [a, b] = [open(), open()]
  cleanups.push(() => a.close(), () => b.close())
  const clock = systemClock
  await a.migrate(clock.now())
  for (let round = 0; round < 5; round++) {
    const org = await createOrganization({ store: a, clock }, { name: `Rotating ${round}` })
    const outcomes = await Promise.allSettled([rotateKey({ store: a, clock }, { key: org.secretKey }), rotateKey({ store: b, clock }, { key: org.secretKey })])
    expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected'])
    const refused = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult
    // Refused at the check when the other had already revoked it, or by the revoke's compare-and-set.
    expect([refused.reason.code, refused.reason.message]).toEqual(['INVALID_ARGUMENT', expect.stringMatching(/^a revoked key cannot be rotated/)])
    const winner = (outcomes.find((o) => o.status === 'fulfilled') as PromiseFulfilledResult<{ keyId: string }>).value
    const live = (await a.listKeys(org.orgId)).filter((k) => k.kind === 'secret' && k.revokedAt === null)
    expect(live.map((k) => k.id)).toEqual([winner.keyId])
  }
}

/** A budget change racing a rotation: refused, or carried to the replacement; never reported done and lost. */
async function raceBudgetAndRotation(open: () => Store) {
  const [a, b] = [open(), open()]
  cleanups.push(() => a.close(), () => b.close())
  const clock = systemClock
  await a.migrate(clock.now())
  for (let round = 0; round < 10; round++) {
    const org = await createOrganization({ store: a, clock }, { name: `Budget ${round}` })
    const [budget, rotation] = await Promise.allSettled([setKeyBudgets({ store: a, clock }, { key: org.secretKey }, { hourlyBudget: 7 }), rotateKey({ store: b, clock }, { key: org.secretKey })])
    expect(rotation.status).toBe('fulfilled')
    const live = (await a.listKeys(org.orgId)).find((k) => k.kind === 'secret' && k.revokedAt === null)!
    if (budget.status === 'fulfilled') expect(live.hourlyBudget).toBe(7)
    else expect(String(budget.reason.message)).toStartWith("a revoked key's budgets cannot be set")
  }
}

describe('a budget change and a rotation of one key at once', () => {
  test('sqlite: two connections to one file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'earn-rotate-budget-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    await raceBudgetAndRotation(() => createStore({ engine: 'sqlite', path: join(dir, 'earn.sqlite') }))
  })

  test.if(withPostgres)('postgres: two connection pools to one schema', async () => {
    const { schema, drop } = await freshSchema()
    cleanups.push(drop)
    await raceBudgetAndRotation(() => createStore({ engine: 'postgres', url: DATABASE_URL, schema }))
  })
})

describe('two rotations of one key at once', () => {
  test('sqlite: two connections to one file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'earn-rotate-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const path = join(dir, 'earn.sqlite')
    await raceRotations(() => createStore({ engine: 'sqlite', path }))
  })

  test.if(withPostgres)('postgres: two connection pools to one schema', async () => {
    const { schema, drop } = await freshSchema()
    cleanups.push(drop)
    await raceRotations(() => createStore({ engine: 'postgres', url: DATABASE_URL, schema }))
  })
})
