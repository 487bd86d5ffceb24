/** A file-backed store for action tests, and a read-only look at its actions table (the store has no listing yet). */
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createStore } from '@earn/core'

export function fileStore() {
  const dir = mkdtempSync(join(tmpdir(), 'earn-actions-'))
  const path = join(dir, 'earn.sqlite')
  const store = createStore({ engine: 'sqlite', path })
  return {
    store,
    /** Rows of the actions table matching `where` (SQL over snake_case columns). */
    actions(where = '1 = 1', ...params: (string | number)[]): Record<string, unknown>[] {
      const db = new Database(path, { readonly: true })
      try {
        return db.query(`select * from actions where ${where}`).all(...params) as Record<string, unknown>[]
      } finally {
        db.close()
      }
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  }
}
