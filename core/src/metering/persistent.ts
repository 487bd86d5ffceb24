/**
 * The embedded default: the in-process meter, with its usage written back to the store so that a
 * restart does not forget it. Loaded once at start; written every `flushMs` (only keys that changed,
 * off the request path) and on close. A crash loses at most the last `flushMs` of usage; a graceful
 * stop (SIGTERM) loses nothing, unless the store refuses writes (a full disk) for all of its grace period: usage
 * counted meanwhile is held only in memory, and the stop reports what it could not write.
 */
import type { Clock } from '../clock.ts'
import type { Store, UsageWrite } from '../store/store.ts'
import { createMemoryMeter } from './memory.ts'
import { type Meter, windowsAt } from './meter.ts'

export interface PersistentMeterOptions {
  store: Pick<Store, 'loadKeyUsage' | 'addKeyUsage' | 'claimUsageWrite'>
  clock: Clock
  /** Default 5000. */
  flushMs?: number
  /** A failed write (periodic: the increments stay unsaved and go with the next one; or the last, on close). */
  onError?(error: unknown): void
}

export interface PersistentMeter extends Meter {
  /** Writes what changed since the last write; resolves when the store has it. */
  flush(): Promise<void>
  usageNotStored(): { keys: number; units: number }
}

/** Pauses between tries of the last write at close: a full disk may have room a moment later. */
const CLOSE_RETRY_MAX_MS = 1_000

export async function createPersistentMemoryMeter(options: PersistentMeterOptions): Promise<PersistentMeter> {
  const { store } = options
  const memory = createMemoryMeter({ initial: await store.loadKeyUsage(windowsAt(options.clock.now()).monthId) })

  let writing: Promise<void> | undefined
  // This process's writes, numbered: one that failed may still have committed (PostgreSQL's COMMIT answer lost), so
  // before anything is sent again the store is asked whether it did (an audit: sent again, it counted twice).
  const writer = crypto.randomUUID()
  let seq = 0
  let unsure: { write: UsageWrite; unsaved: ReturnType<typeof memory.unsaved> } | undefined
  const write = async () => {
    if (unsure) {
      if (await store.claimUsageWrite(unsure.write)) unsure.unsaved.commit()
      unsure = undefined
    }
    const unsaved = memory.unsaved()
    if (unsaved.rows.length === 0) return
    const attempt = { writer, seq: ++seq, at: options.clock.now() }
    try {
      await store.addKeyUsage(unsaved.rows, attempt)
    } catch (e) {
      unsure = { write: attempt, unsaved }
      throw e
    }
    unsaved.commit()
  }
  // One write at a time: a second caller waits for the one in progress, then writes what is left.
  const flush = async (): Promise<void> => {
    while (writing) await writing.catch(() => {})
    writing = write().finally(() => {
      writing = undefined
    })
    return writing
  }

  const timer = setInterval(() => flush().catch((e) => options.onError?.(e)), options.flushMs ?? 5000)
  // The timer must not keep a process alive that has nothing else to do.
  timer.unref()

  return {
    kind: 'memory',
    admit: memory.admit,
    ping: memory.ping,
    flush,
    usageNotStored() {
      const { rows } = memory.unsaved()
      return { keys: new Set(rows.map((r) => r.keyId)).size, units: rows.reduce((sum, r) => sum + r.used, 0) }
    },
    async close() {
      clearInterval(timer)
      // Tried until it lands: what is not written now is lost with the process (everything metered since the store
      // last took a write, a full disk's whole outage). The caller bounds the wait, and says what was lost (usageNotStored).
      for (let pause = 50; ; pause = Math.min(pause * 2, CLOSE_RETRY_MAX_MS)) {
        try {
          return await flush()
        } catch (e) {
          options.onError?.(e)
        }
        await Bun.sleep(pause)
      }
    },
  }
}
