import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runActivityStoreSuite } from './activity.suite.ts'
import { createStore } from './store.ts'

runActivityStoreSuite('sqlite file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'earn-activity-'))
  return { store: createStore({ engine: 'sqlite', path: join(dir, 'earn.sqlite') }), cleanup: async () => rmSync(dir, { recursive: true, force: true }) }
})
