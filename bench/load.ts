/** A closed-loop load: `connections` workers, each sending its next request when the last one answered. */
export interface LoadResult {
  requests: number
  elapsedMs: number
  statuses: Record<number, number>
  /** Milliseconds, sorted. */
  latencies: Float64Array
}

export async function closedLoop(p: { connections: number; durationMs: number; send: (i: number, worker: number) => Promise<number> }): Promise<LoadResult> {
  const latencies: number[] = []
  const statuses: Record<number, number> = {}
  let next = 0
  const started = performance.now()
  const end = started + p.durationMs
  await Promise.all(
    Array.from({ length: p.connections }, async (_, worker) => {
      while (performance.now() < end) {
        const t0 = performance.now()
        let status: number
        try {
          status = await p.send(next++, worker)
        } catch {
          status = 0
        }
        latencies.push(performance.now() - t0)
        statuses[status] = (statuses[status] ?? 0) + 1
      }
    }),
  )
  return { requests: latencies.length, elapsedMs: performance.now() - started, statuses, latencies: Float64Array.from(latencies).sort() }
}

export const percentile = (sorted: Float64Array, p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN
export const perSecond = (n: number, ms: number) => (n * 1000) / ms

/** An HTTP/1.1 request as the bytes a socket sends, made once before a run. */
export function requestBytes(url: string, init: { method: string; headers?: Record<string, string>; body?: string }): Uint8Array {
  const u = new URL(url)
  const headers: Record<string, string> = { host: u.host, ...init.headers }
  if (init.body !== undefined) headers['content-length'] = String(Buffer.byteLength(init.body))
  const head = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  return Buffer.from(`${init.method} ${u.pathname}${u.search} HTTP/1.1\r\n${head}\r\n${init.body ?? ''}`)
}

const HEAD_END = Buffer.from('\r\n\r\n')
const CONTENT_LENGTH = /\r\ncontent-length: *(\d+)/i

/**
 * `closedLoop` over raw keep-alive sockets: each connection writes a prebuilt request and reads the answer by its
 * Content-Length. The load generator shares the machine with the server it measures, and `fetch` costs it ~45 µs
 * a request against ~20 here: CPU taken from the server, the more so the faster the server is.
 * Connection `worker` goes to `origins[worker % origins.length]`; an answer without Content-Length fails the run.
 */
export async function socketClosedLoop(p: {
  origins: string[]
  connections: number
  durationMs: number
  request: (i: number, worker: number) => Uint8Array
}): Promise<LoadResult> {
  const latencies: number[] = []
  const statuses: Record<number, number> = {}
  let next = 0
  const started = performance.now()
  const end = started + p.durationMs
  const connection = (worker: number) =>
    new Promise<void>((resolve, reject) => {
      const { hostname, port } = new URL(p.origins[worker % p.origins.length]!)
      let pending = Buffer.alloc(0)
      let sentAt = 0
      let awaiting = false
      let answerEnd = -1
      let status = 0
      let finished = false
      const finish = (error?: unknown) => {
        finished = true
        if (error === undefined) resolve()
        else reject(error)
      }
      const send = (socket: { write(b: Uint8Array): number }) => {
        const request = p.request(next++, worker)
        sentAt = performance.now()
        awaiting = true
        // Requests here are small; one the socket took only in part would need a drain handler this loop lacks.
        if (socket.write(request) !== request.length) finish(new Error(`a ${request.length}-byte request did not fit the socket's buffer at once`))
      }
      const open = () =>
        Bun.connect({
          hostname,
          port: Number(port),
          socket: {
            open: send,
            data(socket, chunk) {
              pending = pending.length ? Buffer.concat([pending, chunk]) : Buffer.from(chunk)
              for (;;) {
                if (answerEnd < 0) {
                  const headEnd = pending.indexOf(HEAD_END)
                  if (headEnd < 0) return
                  const head = pending.subarray(0, headEnd).toString('latin1')
                  const length = CONTENT_LENGTH.exec(head)
                  if (!length) {
                    socket.end()
                    return finish(new Error(`an answer without content-length: ${head.split('\r\n', 1)[0]}`))
                  }
                  status = Number(head.slice(9, 12))
                  answerEnd = headEnd + HEAD_END.length + Number(length[1])
                }
                if (pending.length < answerEnd) return
                latencies.push(performance.now() - sentAt)
                statuses[status] = (statuses[status] ?? 0) + 1
                awaiting = false
                pending = pending.subarray(answerEnd)
                answerEnd = -1
                if (performance.now() >= end) {
                  socket.end()
                  return finish()
                }
                send(socket)
              }
            },
            // A connection the server closed: a request it left unanswered counts as failed (status 0, as
            // `closedLoop` counts a failed fetch), and the loop goes on over a new connection.
            close() {
              if (finished) return
              if (awaiting) {
                latencies.push(performance.now() - sentAt)
                statuses[0] = (statuses[0] ?? 0) + 1
                awaiting = false
              }
              pending = Buffer.alloc(0)
              answerEnd = -1
              if (performance.now() < end) open().catch(finish)
              else finish()
            },
            error(_socket, error) {
              finish(error)
            },
          },
        })
      open().catch(finish)
    })
  await Promise.all(Array.from({ length: p.connections }, (_, worker) => connection(worker)))
  return { requests: latencies.length, elapsedMs: performance.now() - started, statuses, latencies: Float64Array.from(latencies).sort() }
}
