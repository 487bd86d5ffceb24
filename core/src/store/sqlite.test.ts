import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createStore } from './store.ts'
import { runStoreSuite } from './store.suite.ts'

runStoreSuite('sqlite file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'earn-store-'))
  return { store: createStore({ engine: 'sqlite', path: join(dir, 'earn.sqlite') }), cleanup: async () => rmSync(dir, { recursive: true, force: true }) }
})
