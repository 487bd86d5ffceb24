/** Time comes in from outside so tests can move it; core never calls Date.now() itself. */
export interface Clock {
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/** A clock a test sets by hand. */
export function manualClock(start: number) {
  let t = start
  return {
    now: () => t,
    set(ms: number) {
      t = ms
    },
    advance(ms: number) {
      t += ms
    },
  }
}
