/** What a synchronous call throws; a call that returns fails the test. */
export function thrown(run: () => void): unknown {
  try {
    run()
  } catch (e) {
    return e
  }
  throw new Error('expected an error')
}
