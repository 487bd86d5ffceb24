/**
 * The embedded default: the in-process meter, with its usage written back to the store so that a
 * restart does not forget it. Loaded once at start; written every `flushMs` (only keys that changed,
 * off the request path) and on close. A crash loses at most the last `flushMs` of usage; a graceful
 * stop (SIGTERM) loses nothing.
 */
import type { Clock } from '../clock.ts'
import type { Store } from '../store/store.ts'
import { createMemoryMeter } from './memory.ts'
import { type Meter, windowsAt } from './meter.ts'

export interface PersistentMeterOptions {
  store: Pick<Store, 'loadKeyUsage' | 'addKeyUsage'>
  clock: Clock
  /** Default 5000. */
  flushMs?: number
  /** A failed write (periodic: the increments stay unsaved and go with the next one; or the last, on close). */
  onError?(error: unknown): void
}

export interface PersistentMeter extends Meter {
  /** Writes what changed since the last write; resolves when the store has it. */
  flush(): Promise<void>
}

export async function createPersistentMemoryMeter(options: PersistentMeterOptions): Promise<PersistentMeter> {
  const { store } = options
  const memory = createMemoryMeter({ initial: await store.loadKeyUsage(windowsAt(options.clock.now()).monthId) })

  let writing: Promise<void> | undefined
  const write = async () => {
    const unsaved = memory.unsaved()
    if (unsaved.rows.length === 0) return
    await store.addKeyUsage(unsaved.rows)
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
    async close() {
      clearInterval(timer)
      // A failed last write is reported, not thrown: shutdown goes on, losing what a crash would.
      await flush().catch((e) => options.onError?.(e))
    },
  }
}
