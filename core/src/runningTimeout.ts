/**
 * Calls `fire` once `ms` of this process's running time has passed, not of the wall clock's; the function returned
 * cancels it. For a wait on another party (a database, Redis, a probe) whose end means "it did not answer".
 *
 * Time is counted in steps of a fifth of `ms`, and a step that comes far later than asked counts as one step: it
 * tells of a pause of this process's own (a long synchronous handler, a collection, a starved CPU), during which the
 * answer may have come and sat unread (after a pause inside an I/O callback, Bun runs expired timers before it reads
 * the sockets). Counting the pause whole would take it for the other party's silence. Nor does a late step end the
 * wait: the answer gets one more step to be read. A loop that is late at every step still fires after twice `ms` of
 * counted steps. The timer never keeps a process alive on its own.
 */
export function runningTimeout(fire: () => void, ms: number): () => void {
  const step = ms / 5
  let counted = 0
  let last = performance.now()
  const next = () => {
    const now = performance.now()
    const late = now - last > step * 1.5
    counted += late ? step : now - last
    last = now
    if (counted >= (late ? 2 * ms : ms)) fire()
    else timer = setTimeout(next, late ? step : Math.min(step, ms - counted)).unref()
  }
  let timer = setTimeout(next, step).unref()
  return () => clearTimeout(timer)
}

/** `work`, or `late()` thrown once `ms` of this process's running time has passed without its answer (runningTimeout). */
export function withinRunningTime<T>(work: Promise<T>, ms: number, late: () => Error): Promise<T> {
  let cancel = () => {}
  const expired = new Promise<never>((_, reject) => {
    cancel = runningTimeout(() => reject(late()), ms)
  })
  return Promise.race([work, expired]).finally(cancel)
}
