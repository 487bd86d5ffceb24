/**
 * The stream lifecycle. Token streams start `pending` until their funding transfer is seen on
 * chain; point streams start `active`. A stream past its end time reads as `completed`.
 *
 *   pending -> active -> paused <-> active -> cancelled | completed
 */
import { InvalidArgumentError } from '../errors.ts'

export const STREAM_STATES = ['pending', 'active', 'paused', 'cancelled', 'completed'] as const
export type StreamState = (typeof STREAM_STATES)[number]

export const STREAM_ACTIONS = ['confirm', 'pause', 'resume', 'cancel'] as const
export type StreamAction = (typeof STREAM_ACTIONS)[number]

const TRANSITIONS: Record<StreamAction, Partial<Record<StreamState, StreamState>>> = {
  confirm: { pending: 'active' },
  pause: { active: 'paused' },
  resume: { paused: 'active' },
  // Not a pending one (DECISIONS.md rules every transition not drawn above a 400): its funding may be mined
  // already, and a cancelled stream could then never record it. A paused stream may be: `paused <-> active` is
  // one group before the arrow to `cancelled`.
  cancel: { active: 'cancelled', paused: 'cancelled' },
}

export class InvalidTransitionError extends InvalidArgumentError {
  constructor(action: StreamAction, from: StreamState) {
    const allowed = Object.keys(TRANSITIONS[action])
    super(`cannot ${action} ${/^[aeiou]/.test(from) ? 'an' : 'a'} ${from} stream; ${action} applies to ${allowed.join(' or ')} streams`, {
      state: from,
      action,
    })
  }
}

/** The state a stored state reads as at `now`: running streams past their end are completed. */
export function effectiveState(stored: StreamState, endTime: number, now: number): StreamState {
  return (stored === 'active' || stored === 'paused') && endTime <= now ? 'completed' : stored
}

export function nextState(action: StreamAction, from: StreamState): StreamState {
  const to = TRANSITIONS[action][from]
  if (!to) throw new InvalidTransitionError(action, from)
  return to
}
