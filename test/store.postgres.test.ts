import { describe } from 'bun:test'
import { createStore } from '@earn/core'
import { runStoreSuite } from '@earn/core/store/store.suite'
import { DATABASE_URL, freshSchema, postgresAvailable } from './services.ts'

if (await postgresAvailable()) {
  runStoreSuite('postgres', async () => {
    const { schema, drop } = await freshSchema()
    return { store: createStore({ engine: 'postgres', url: DATABASE_URL, schema }), cleanup: drop }
  })
} else describe.skip('store: postgres (PostgreSQL not reachable)', () => {})
