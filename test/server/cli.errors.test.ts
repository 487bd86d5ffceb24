/** What the CLI prints when the store refuses a command: the store's error named and explained, not a raw String(e). */
import { expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { errorMessage } from '@earn/server/cli'
import { thrown } from '../thrown.ts'


test('a store busy past its timeout reads as such; other store errors keep their code', () => {
  const dir = mkdtempSync(join(tmpdir(), 'earn-cli-errors-'))
  const path = join(dir, 'earn.sqlite')
  const holder = new Database(path, { create: true })
  const waiter = new Database(path)
  try {
    holder.exec('pragma journal_mode = wal; create table t (x)')
    holder.exec('begin immediate')
    waiter.exec('pragma busy_timeout = 0')
    const busy = thrown(() => waiter.exec('begin immediate'))
    expect(String(busy)).toBe('SQLiteError: database is locked')
    expect(errorMessage(busy)).toBe('the store is busy: another process held its write lock past the 5 s busy timeout; run the command again (SQLITE_BUSY)')
    const missing = thrown(() => waiter.exec('select * from nope'))
    expect(errorMessage(missing)).toBe('the store refused the command: no such table: nope (SQLITE_ERROR)')
    expect(errorMessage(new TypeError('x'))).toBe('TypeError: x')
  } finally {
    waiter.close()
    holder.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
