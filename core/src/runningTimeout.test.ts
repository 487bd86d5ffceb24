import { describe, expect, test } from 'bun:test'
import { runningTimeout, withinRunningTime } from './runningTimeout.ts'

const busy = (ms: number) => {
  for (const end = performance.now() + ms; performance.now() < end; );
}

describe('runningTimeout', () => {
  test('fires once its time has passed on a loop that runs freely, and not after it is cancelled', async () => {
    const started = performance.now()
    const fired: number[] = []
    runningTimeout(() => fired.push(performance.now() - started), 100)
    const cancelled: number[] = []
    const cancel = runningTimeout(() => cancelled.push(1), 100)
    await Bun.sleep(50)
    cancel()
    await Bun.sleep(400)
    expect(fired).toHaveLength(1)
    expect(fired[0]).toBeGreaterThanOrEqual(99)
    expect(cancelled).toEqual([])
  })

  test("a pause of the process's own counts as one step, so the wait goes on past it", async () => {
    const started = performance.now()
    const fired: number[] = []
    runningTimeout(() => fired.push(performance.now() - started), 100)
    // 250 ms of wall-clock time in one synchronous stretch: a wall-clock timer would fire at once after it.
    busy(250)
    await Bun.sleep(30)
    expect(fired).toEqual([])
    // Then the rest of its 100 ms, counted step by step.
    await Bun.sleep(1_000)
    expect(fired).toHaveLength(1)
    expect(fired[0]).toBeGreaterThan(250 + 60)
  })
})

test('withinRunningTime: the work when it answers in time, the late error when it does not, and no timer left either way', async () => {
  expect(await withinRunningTime(Bun.sleep(5).then(() => 'answered'), 200, () => new Error('late'))).toBe('answered')
  await expect(withinRunningTime(Bun.sleep(5).then(() => Promise.reject(new Error('refused'))), 200, () => new Error('late'))).rejects.toThrow('refused')
  const never = new Promise<never>(() => {})
  await expect(withinRunningTime(never, 50, () => new Error('late'))).rejects.toThrow('late')
})
