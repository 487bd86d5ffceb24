import { describe, expect, test } from 'bun:test'
import { effectiveState, InvalidTransitionError, nextState, STREAM_ACTIONS, STREAM_STATES } from './state.ts'

describe('stream state machine', () => {
  test('the allowed transitions', () => {
    expect(nextState('confirm', 'pending')).toBe('active')
    expect(nextState('pause', 'active')).toBe('paused')
    expect(nextState('resume', 'paused')).toBe('active')
    for (const from of ['active', 'paused'] as const) expect(nextState('cancel', from)).toBe('cancelled')
  })

  test('every other transition is refused with a 400', () => {
    const allowed = new Set(['confirm:pending', 'pause:active', 'resume:paused', 'cancel:active', 'cancel:paused'])
    let refused = 0
    for (const action of STREAM_ACTIONS)
      for (const from of STREAM_STATES) {
        if (allowed.has(`${action}:${from}`)) continue
        expect(() => nextState(action, from)).toThrow(InvalidTransitionError)
        try {
          nextState(action, from)
        } catch (e) {
          expect((e as InvalidTransitionError).status).toBe(400)
          expect((e as InvalidTransitionError).context).toEqual({ state: from, action })
        }
        refused++
      }
    expect(refused).toBe(STREAM_ACTIONS.length * STREAM_STATES.length - allowed.size)
  })

  test('running streams past their end read as completed; others keep their state', () => {
    expect(effectiveState('active', 100, 100)).toBe('completed')
    expect(effectiveState('paused', 100, 101)).toBe('completed')
    expect(effectiveState('active', 100, 99)).toBe('active')
    expect(effectiveState('pending', 100, 200)).toBe('pending')
    expect(effectiveState('cancelled', 100, 200)).toBe('cancelled')
  })
})
