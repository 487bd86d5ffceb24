import { confirmStream, createStream, getStream, listStreams, type StreamDeps, transitionStream } from '@earn/core'
import { STREAM_TRANSITIONS } from '@earn/core/streams/schema'
import { Elysia } from 'elysia'
import type { Deps } from '../../deps.ts'
import { ErrorEnvelopeSchema } from '../../http/envelope.ts'
import { operation } from '../../http/operation.ts'
import { callerOrganization } from '../../http/request.ts'
import { idempotent } from '../../http/idempotency.ts'
import { ConfirmStreamBody, CreateStreamBody, CreateStreamResult, StreamList, StreamListQuery, StreamParams, StreamResult, TransitionParams } from './model.ts'

const tags = ['Streams']
const orgOf = (request: Request) => callerOrganization(request).id
const SCOPE = "Another organization's stream is 404, as an unknown one."

/** What the stream operations (and the watch on their fundings) take from the server's dependencies. */
export const streamDeps = (deps: Deps): StreamDeps => ({
  store: deps.store,
  ecosystems: deps.ecosystems,
  clock: deps.clock,
  attributionSecret: deps.attributionSecret,
  treasuries: deps.config.streamTreasuries,
  rewardTokens: deps.config.streamRewardTokens,
})

export const streamRoutes = (deps: Deps) => {
  const streams = streamDeps(deps)
  return new Elysia({ prefix: '/v2/streams' })
    .post(
      // No trailing slash: DECISIONS names it `/v2/streams` (a trailing slash is served too).
      '',
      ({ body, request, set }) => {
        const organization = callerOrganization(request)
        return idempotent(deps, 'streams.create', { request, set, body }, (answering) =>
          createStream(streams, { orgId: organization.id, tier: organization.tier, body, answering }),
        )
      },
      {
        body: CreateStreamBody,
        ...operation(deps, 'streams.create', {
          idempotent: true,
          summary: 'Create a token or point stream',
          description:
            'Token streams need rewardToken and creatorAddress; their fee is FeeAmount = ceil(netBudget x 1.5 %) in the reward token ' +
            '(0 for premium organizations), totalPulled = netBudget + FeeAmount, and `transactions` holds the transfer of totalPulled from ' +
            "the creator to the deployment's treasury, tagged with the stream. The stream stays pending until that transfer is confirmed. " +
            'Point streams need pointName; no fee, nothing pulled, no transactions; active at once. Checks, in order: body fields (400), ' +
            "chainId (400), for token streams a treasury on the chain (400), targetOpportunityId unknown or delisted (404), the target on the stream's chain (400), " +
            'token and creator addresses, budget plus fee within uint256 (400), ' +
            "the creator's balance (400 `insufficient token balance`).",
          tags,
          responses: { 200: CreateStreamResult, 409: ErrorEnvelopeSchema },
        }),
      },
    )
    .get('', ({ query, request }) => listStreams(streams, { orgId: orgOf(request), query }), {
      ...operation(deps, 'streams.list', {
        query: StreamListQuery,
        summary: "List the organization's streams",
        description: 'Newest first; state filters on the state as read now (completed: past endTime). page from 1, limit up to 100 (default 20).',
        tags,
        responses: { 200: StreamList },
      }),
    })
    .get('/:streamId', ({ params, request }) => getStream(streams, { orgId: orgOf(request), streamId: params.streamId }), {
      params: StreamParams,
      ...operation(deps, 'streams.get', { summary: 'Get one stream', description: SCOPE, tags, responses: { 200: StreamResult } }),
    })
    .post(
      '/:streamId/confirm',
      ({ params, body, request }) => confirmStream(streams, { orgId: orgOf(request), streamId: params.streamId, txHash: body.txHash }),
      {
        params: StreamParams,
        body: ConfirmStreamBody,
        ...operation(deps, 'streams.confirm', {
          summary: "Confirm a token stream's funding transfer",
          description:
            'Reads the transaction from the chain: it must carry this stream\'s funding tag (valid for the creator and chain) and move at least ' +
            'totalPulled of the reward token from the creator to the treasury, whoever sent it (a contract wallet\'s owner, say); then pending -> active. 400 when it is not mined yet, when it ' +
            'does not fund the stream (context.txHash says what is missing: another stream\'s funding names that stream), or when the stream is not pending; ' +
            `409 when the transaction was recorded as a stream's funding while this confirm read it. ${SCOPE}`,
          tags,
          responses: { 200: StreamResult, 409: ErrorEnvelopeSchema },
        }),
      },
    )
    .post(
      '/:streamId/:action',
      ({ params, request }) => transitionStream(streams, { orgId: orgOf(request), streamId: params.streamId, action: params.action }),
      {
        params: TransitionParams,
        ...operation(deps, 'streams.transition', {
          routes: { action: STREAM_TRANSITIONS },
          summary: 'Pause, resume or cancel a stream',
          description:
            'pause: active -> paused; resume: paused -> active; cancel: active or paused -> cancelled (not pending: its funding may be mined already). Every other transition ' +
            '(a completed stream included) is 400 with context.state and context.action; 409 when other requests kept changing ' +
            `its state while this one applied (read it again and retry). ${SCOPE}`,
          tags,
          responses: { 200: StreamResult, 409: ErrorEnvelopeSchema },
        }),
      },
    )
}
