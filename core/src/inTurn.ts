/**
 * At most `cap` tasks running at once, the rest waiting their turn in order. Bun's `fetch` holds at most 256 requests
 * in flight for the whole process (`BUN_CONFIG_MAX_HTTP_REQUESTS`, read at start only) and queues the rest, another
 * host's too: an audit's 5,000 reads against an endpoint answering in 6 s held a fetch to another server 113 s. A
 * plugin that makes one request per read keeps its own under a cap like this, so one slow endpoint cannot take every
 * slot. A task waits inside its own signal: one whose signal aborts while it waits leaves the queue without running.
 */
export type InTurn = <T>(task: () => Promise<T>, signal?: AbortSignal | null) => Promise<T>

export function inTurn(cap: number): InTurn {
  let running = 0
  const waiting: (() => void)[] = []
  const release = () => {
    const next = waiting.shift()
    // The slot passes to the next in line as it is, or frees.
    if (next) next()
    else running--
  }
  const turn = (signal: AbortSignal | null | undefined) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason)
      const go = () => {
        signal?.removeEventListener('abort', abort)
        resolve()
      }
      const abort = () => {
        waiting.splice(waiting.indexOf(go), 1)
        reject(signal!.reason)
      }
      signal?.addEventListener('abort', abort, { once: true })
      waiting.push(go)
    })
  return async (task, signal) => {
    if (signal?.aborted) throw signal.reason
    if (running < cap) running++
    else await turn(signal)
    try {
      return await task()
    } finally {
      release()
    }
  }
}
