/**
 * The stream endpoints' bodies and results, written once: core's types are `Static<>` of these and the
 * server validates and documents with the same objects. Amounts are decimal strings of smallest units;
 * instants go out as ISO 8601 and come in as ISO 8601 or epoch seconds.
 */
import { type Static, type TLiteral, Type } from '@sinclair/typebox'
import { LimitQuery, PageQuery, QueryValue } from '../paging.ts'
import { Pagination } from '../opportunities/schema.ts'
import { STREAM_STATES } from './state.ts'

// A tuple of literals (not an array of their union), the form Elysia's types unwrap.
type Literals<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K]> }

export const STREAM_TYPES = ['token', 'point'] as const
export const StreamTypeSchema = Type.Union(STREAM_TYPES.map((v) => Type.Literal(v)) as Literals<typeof STREAM_TYPES>, {
  description: 'token: an on-chain reward token, funded at creation; point: off-chain points',
})
export const StreamStateSchema = Type.Union(STREAM_STATES.map((v) => Type.Literal(v)) as Literals<typeof STREAM_STATES>, {
  description: 'pending (token streams until funded), active, paused, cancelled, completed (past endTime)',
})

const Amount = (description: string) => Type.String({ minLength: 1, maxLength: 100, description, examples: ['1000000'] })
const Instant = (description: string) =>
  Type.Union([Type.String({ minLength: 1, maxLength: 40 }), Type.Integer()], {
    description: `${description}: ISO 8601 with an offset ("2026-01-01T00:00:00Z") or epoch seconds`,
  })

export const CreateStreamBody = Type.Object({
  type: StreamTypeSchema,
  chainId: Type.String({ minLength: 1, maxLength: 64, description: "Chain the reward is paid on (EVM: decimal chain id): the target opportunity's own chain (400 otherwise); token streams are funded there" }),
  rewardToken: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Token streams only (required): the reward token address, or `native`' })),
  pointName: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Point streams only (required): the name of the points' })),
  creatorAddress: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'Token streams only (required): the wallet that signs the funding transfer' }),
  ),
  netBudget: Amount('Reward budget in smallest units (of the reward token, or of points), a base-10 integer string, > 0, at most 2^256-1'),
  targetOpportunityId: Type.String({ minLength: 1, maxLength: 64, description: 'Opportunity whose holders earn the reward' }),
  startTime: Instant('When rewards start; may be in the past'),
  endTime: Instant('When rewards end; after startTime and in the future'),
})
export type CreateStreamBody = Static<typeof CreateStreamBody>

export const Stream = Type.Object(
  {
    id: Type.String({ description: 'UUID' }),
    type: StreamTypeSchema,
    state: StreamStateSchema,
    chainId: Type.String(),
    rewardToken: Type.Optional(Type.String({ description: "Token streams: address in the ecosystem's display form, or native" })),
    pointName: Type.Optional(Type.String({ description: 'Point streams' })),
    creatorAddress: Type.Optional(Type.String({ description: 'Token streams: the wallet the funding is pulled from' })),
    treasuryAddress: Type.Optional(Type.String({ description: "Token streams: where the funding goes (the deployment's stream treasury)" })),
    fundingTxHash: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'Token streams: the confirmed funding transaction; null while pending' })),
    netBudget: Type.String({ description: 'Smallest units' }),
    FeeAmount: Type.String({ description: 'Creation fee in smallest units of the reward token: ceil(netBudget x 1.5 %); 0 for premium organizations and point streams' }),
    totalPulled: Type.String({ description: 'netBudget + FeeAmount for token streams; 0 for point streams (nothing is pulled)' }),
    targetOpportunityId: Type.String(),
    startTime: Type.String({ description: 'ISO 8601' }),
    endTime: Type.String({ description: 'ISO 8601' }),
    createdAt: Type.String({ description: 'ISO 8601' }),
    updatedAt: Type.String({ description: 'ISO 8601' }),
  },
  { title: 'Stream' },
)
export type Stream = Static<typeof Stream>

export const StreamTransaction = Type.Object(
  {
    type: Type.Literal('transfer'),
    transaction: Type.Record(Type.String(), Type.Unknown(), {
      description: "The ecosystem's unsigned form. EVM: {to, data, value, gasLimit, chainId}; Solana: {serializedTransaction}; TON: {validUntil, messages}",
    }),
    description: Type.String(),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { title: 'StreamTransaction' },
)

export const CreateStreamResult = Type.Object({
  stream: Stream,
  FeeAmount: Type.String({ description: 'The exact creation fee, smallest units of the reward token' }),
  totalPulled: Type.String({ description: 'What the funding transfer moves from the creator: netBudget + FeeAmount (0 for point streams)' }),
  transactions: Type.Array(StreamTransaction, { description: 'Token streams: the funding transfer, carrying the stream tag; empty for point streams' }),
})
export type CreateStreamResult = Static<typeof CreateStreamResult>

export const StreamResult = Type.Object({ stream: Stream })
export type StreamResult = Static<typeof StreamResult>

export const StreamList = Type.Object({
  streams: Type.Array(Stream),
  total: Type.Integer({ minimum: 0 }),
  pagination: Pagination,
})
export type StreamList = Static<typeof StreamList>

/** As received: parsing it, and naming what does not parse, is core's job. */
export const DEFAULT_STREAM_LIMIT = 20
export const MAX_STREAM_LIMIT = 100

export const StreamListQuery = Type.Object({
  state: QueryValue({ type: 'string', enum: [...STREAM_STATES] }, `Only streams in this state: ${STREAM_STATES.join(', ')}`),
  page: PageQuery,
  limit: LimitQuery(MAX_STREAM_LIMIT, DEFAULT_STREAM_LIMIT),
})
export type StreamListQuery = Static<typeof StreamListQuery>

export const ConfirmStreamBody = Type.Object({
  txHash: Type.String({ minLength: 1, maxLength: 200, description: "The mined funding transaction, in the chain's own form (TON: also the hash of the signed external message)" }),
})
export type ConfirmStreamBody = Static<typeof ConfirmStreamBody>

export const STREAM_TRANSITIONS = ['pause', 'resume', 'cancel'] as const
export type StreamTransition = (typeof STREAM_TRANSITIONS)[number]
export const StreamTransitionSchema = Type.Union(STREAM_TRANSITIONS.map((v) => Type.Literal(v)) as Literals<typeof STREAM_TRANSITIONS>, {
  description: 'pause (active -> paused), resume (paused -> active), cancel (active or paused -> cancelled; a pending stream is not cancelled)',
})
