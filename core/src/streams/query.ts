/** `GET /v2/streams` and `GET /v2/streams/{id}`: the caller's organization's streams only. */
import { pagination, parsePage } from '../paging.ts'
import { InvalidStreamFieldError } from './errors.ts'
import { displayForms, ownStream, type StreamDeps } from './lookup.ts'
import { DEFAULT_STREAM_LIMIT, MAX_STREAM_LIMIT, type StreamList, type StreamListQuery, type StreamResult } from './schema.ts'
import { STREAM_STATES, type StreamState } from './state.ts'
import { toStream } from './view.ts'


type QueryDeps = Pick<StreamDeps, 'store' | 'ecosystems' | 'clock'>

function parseState(raw: string | undefined): StreamState | undefined {
  if (raw === undefined || raw === '') return undefined
  if (!(STREAM_STATES as readonly string[]).includes(raw)) throw new InvalidStreamFieldError('state', `must be one of ${STREAM_STATES.join(', ')}`)
  return raw as StreamState
}

export async function listStreams(deps: QueryDeps, p: { orgId: string; query: StreamListQuery }): Promise<StreamList> {
  const state = parseState(p.query.state)
  const page = parsePage(p.query, { fallback: DEFAULT_STREAM_LIMIT, max: MAX_STREAM_LIMIT })
  const now = deps.clock.now()
  const [{ rows, total }, formats] = await Promise.all([
    deps.store.listStreams({ orgId: p.orgId, state, now, offset: page.offset, limit: page.limit }),
    displayForms(deps),
  ])
  return { streams: rows.map((row) => toStream(row, formats(row.ecosystem), now)), total, pagination: pagination(page, total) }
}

export async function getStream(deps: QueryDeps, p: { orgId: string; streamId: string }): Promise<StreamResult> {
  const stream = await ownStream(deps, p.orgId, p.streamId)
  return { stream: toStream(stream, (await displayForms(deps))(stream.ecosystem), deps.clock.now()) }
}
