/**
 * `POST /v2/streams/{id}/pause|resume|cancel`: a transition of the state machine (state.ts), applied as a
 * compare-and-set on the stored state, so of two concurrent requests each sees the other's outcome. The
 * state judged is the one read now: a running stream past its end is completed and refuses all three.
 */
import { ConflictError } from '../errors.ts'
import { displayForms, ownStream, type StreamDeps } from './lookup.ts'
import type { StreamResult, StreamTransition } from './schema.ts'
import { effectiveState, nextState } from './state.ts'
import { toStream } from './view.ts'

export interface TransitionStreamParameters {
  orgId: string
  streamId: string
  action: StreamTransition
}

// A lost compare-and-set means another request moved the stream; judging again against its new state settles it.
const ATTEMPTS = 3

export async function transitionStream(deps: StreamDeps, p: TransitionStreamParameters): Promise<StreamResult> {
  for (let attempt = 1; ; attempt++) {
    const stream = await ownStream(deps, p.orgId, p.streamId)
    const now = deps.clock.now()
    const to = nextState(p.action, effectiveState(stream.state, stream.endTime, now))
    if (await deps.store.setStreamState(stream.id, { from: stream.state, to, at: now })) {
      const moved = { ...stream, state: to, updatedAt: now }
      return { stream: toStream(moved, (await displayForms(deps))(moved.ecosystem), now) }
    }
    // Others keep moving it (away and back, as pause and resume in turn do): the client decides again, on a fresh read.
    if (attempt >= ATTEMPTS)
      throw new ConflictError(`stream ${stream.id} changed state ${ATTEMPTS} times while this ${p.action} was applied; read it again and retry`, {
        streamId: 'changed state concurrently',
      })
  }
}
