import { describe, expect, test } from 'bun:test'
import { inTurn } from './inTurn.ts'

/** A task that finishes when told, counting how many run at once. */
function gate() {
  let [running, most] = [0, 0]
  const opened: (() => void)[] = []
  const task = (value: number) => async () => {
    running++
    most = Math.max(most, running)
    await new Promise<void>((resolve) => opened.push(resolve))
    running--
    return value
  }
  return { task, most: () => most, running: () => running, openAll: () => opened.splice(0).forEach((open) => open()) }
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0))

describe('inTurn', () => {
  test('runs at most `cap` at once, the rest in the order they came, each with its own result', async () => {
    const g = gate()
    const limit = inTurn(3)
    const started: number[] = []
    const results = Array.from({ length: 10 }, (_, i) => limit(() => (started.push(i), g.task(i)())))
    for (let round = 0; round < 4; round++) {
      await settle()
      expect(g.running()).toBeLessThanOrEqual(3)
      g.openAll()
    }
    expect(await Promise.all(results)).toEqual(Array.from({ length: 10 }, (_, i) => i))
    expect(started).toEqual(Array.from({ length: 10 }, (_, i) => i))
    expect(g.most()).toBe(3)
  })

  test('a task whose signal aborts while it waits never runs, and its place passes on', async () => {
    const g = gate()
    const limit = inTurn(1)
    const first = limit(g.task(1))
    const controller = new AbortController()
    let ran = false
    const dropped = limit(async () => ((ran = true), 2), controller.signal)
    const third = limit(g.task(3))
    controller.abort(new Error('gone'))
    expect(((await dropped.catch((e: unknown) => e)) as Error).message).toBe('gone')
    g.openAll()
    await settle()
    g.openAll()
    expect(await Promise.all([first, third])).toEqual([1, 3])
    expect(ran).toBe(false)
    // Already aborted: refused at once, even with a slot free.
    expect(((await limit(async () => 4, AbortSignal.abort(new Error('late'))).catch((e: unknown) => e)) as Error).message).toBe('late')
  })

  test('a task that throws frees its slot', async () => {
    const limit = inTurn(1)
    expect(await limit(() => Promise.reject(new Error('no'))).catch((e: unknown) => (e as Error).message)).toBe('no')
    expect(await limit(() => Promise.resolve(5))).toBe(5)
  })
})
