/**
 * A fetch that has at most `cap` requests in flight, the rest waiting their turn in order. What runs a client's code
 * goes to the node one request at a time (client.ts); past fetch's pool of kept-alive connections (~64 a host) each
 * such request opened a connection of its own and closed it after, and 300 contract-wallet sign-ins at once
 * overflowed the node's listen queue (an audit: ~1,700 connections opened for ~2,400 sign-ins, dropped ones waiting
 * ~1 s to try again). A request waits inside its own deadline: one whose signal aborts while it waits leaves the
 * queue unsent.
 */
export function atMostInFlight(inner: typeof fetch, cap: number): typeof fetch {
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
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    if (running < cap) running++
    else await turn(init?.signal)
    try {
      return await inner(input, init)
    } finally {
      release()
    }
  }) as typeof fetch
}
