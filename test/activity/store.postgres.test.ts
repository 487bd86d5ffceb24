import { describe } from 'bun:test'
import { createStore } from '@earn/core'
import { runActivityStoreSuite } from '@earn/core/store/activity.suite'
import { DATABASE_URL, freshSchema, postgresAvailable } from '../services.ts'

if (await postgresAvailable()) {
  runActivityStoreSuite('postgres', async () => {
    const { schema, drop } = await freshSchema()
    return { store: createStore({ engine: 'postgres', url: DATABASE_URL, schema }), cleanup: drop }
  })
} else describe.skip('activity store: postgres (PostgreSQL not reachable)', () => {})
