/** What a synchronous call throws; a call that returns fails the test. */
export function thrown(run: () => void): unknown {
  try {
    run()
  } catch (e) {
    return e
  }
  throw new Error('expected an error')
}

/** What a promise rejects with; one that resolves fails the test. */
export const rejection = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => {
      throw new Error('expected a rejection')
    },
    (e: unknown) => e,
  )
