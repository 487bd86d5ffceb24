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
