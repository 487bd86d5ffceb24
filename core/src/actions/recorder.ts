/**
 * Recording built actions with a group commit. A build answers only after its action is stored (a tag whose
 * action is lost could never verify), but one commit per request costs more than the rest of the store work
 * together. So the rows of builds finishing in the same turn of the event loop go in one INSERT, and each
 * build resumes when that commit has landed. A batch that fails is tried again row by row, so a row only ever
 * fails its own build; one the store could not take at all (busy, unreachable) fails every build in it.
 */
import { ACTION_BATCH, type Store } from '../store/store.ts'
import { storeUnavailable } from '../store/unavailable.ts'
import type { NewAction } from '../store/schema.ts'
import type { IdempotentAnswer } from '../store/idempotency.ts'

export interface ActionRecorder {
  /** Resolves once the row is committed (with `answer`, an idempotent build's, in its transaction); rejects if its batch failed. */
  record(row: NewAction, answer?: IdempotentAnswer): Promise<void>
}

interface Waiting {
  row: NewAction
  answer: IdempotentAnswer | undefined
  resolve(): void
  reject(error: unknown): void
}

export function createActionRecorder(store: Pick<Store, 'insertActions'>): ActionRecorder {
  let queue: Waiting[] = []
  let scheduled = false
  const flush = async () => {
    scheduled = false
    const batch = queue.splice(0, ACTION_BATCH)
    // More than one statement holds: the rest goes in the next turn.
    if (queue.length) schedule()
    try {
      await store.insertActions(
        batch.map((w) => w.row),
        batch.flatMap((w) => (w.answer ? [w.answer] : [])),
      )
      for (const w of batch) w.resolve()
    } catch (e) {
      // A store that cannot take writes now (busy past its timeout, unreachable) would refuse each row again, one
      // timeout after another (on SQLite each blocks the event loop): the whole batch fails at once, a 503 each.
      if (batch.length === 1 || storeUnavailable(e)) {
        for (const w of batch) w.reject(e)
        return
      }
      // One bad row must not fail the builds it happened to share a commit with: each row again on its own.
      await Promise.all(
        batch.map((w) =>
          store.insertActions([w.row], w.answer ? [w.answer] : []).then(
            () => w.resolve(),
            (error: unknown) => w.reject(error),
          ),
        ),
      )
    }
  }
  const schedule = () => {
    if (scheduled) return
    scheduled = true
    // setImmediate, not a microtask: requests whose handlers reach this point in the same turn join the batch.
    setImmediate(flush)
  }
  return {
    record: (row, answer) =>
      new Promise<void>((resolve, reject) => {
        queue.push({ row, answer, resolve, reject })
        schedule()
      }),
  }
}
