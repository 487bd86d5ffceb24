/**
 * The activity endpoints' queries and results, written once: core's types are `Static<>` of these and the server
 * validates and documents with the same objects. Query values arrive as strings; parsing them (and naming what
 * does not parse) is core's job.
 */
import { type Static, Type } from '@sinclair/typebox'
import { LimitQuery, PageQuery } from '../paging.ts'
import { EcosystemIdSchema, Pagination } from '../opportunities/schema.ts'

export const DEFAULT_ACTIVITY_LIMIT = 20
export const MAX_ACTIVITY_LIMIT = 100
export const MAX_ACTIVITY_ADDRESSES = 1000

const Page = PageQuery
const Limit = LimitQuery(MAX_ACTIVITY_LIMIT, DEFAULT_ACTIVITY_LIMIT)

export const WalletActivityQuery = Type.Object({
  addresses: Type.String({
    minLength: 1,
    description: `Comma-separated wallet addresses, up to ${MAX_ACTIVITY_ADDRESSES}, each in any form its ecosystem accepts (EVM: lowercase, uppercase, or EIP-55 mixed case with its checksum)`,
  }),
  page: Page,
  limit: Limit,
})
export type WalletActivityQuery = Static<typeof WalletActivityQuery>

export const DistributorActivityQuery = Type.Object({
  opportunityId: Type.Optional(Type.String({ description: "Only this opportunity's actions (signups, which have no opportunity, are then left out)" })),
  page: Page,
  limit: Limit,
})
export type DistributorActivityQuery = Static<typeof DistributorActivityQuery>

const Nullable = (description: string) => Type.Union([Type.String(), Type.Null()], { description })

const common = {
  id: Type.String({
    description: "The row's id: a built deposit's or withdrawal's is its actionId; a verify row's is its own (verify's answer names the deposit it verified, metadata.actionId); a signup's is `signup:<ecosystem>:<address>`",
  }),
  walletAddress: Type.String({ description: "The wallet, in its ecosystem's display form (EIP-55 on EVM)" }),
  walletEcosystem: EcosystemIdSchema,
  distributorId: Type.String(),
  createdAt: Type.String({ description: 'When it was recorded (ISO 8601, UTC)' }),
}

export const ActionActivity = Type.Object(
  {
    ...common,
    type: Type.Union([Type.Literal('deposit'), Type.Literal('withdraw'), Type.Literal('verify')], {
      description: 'deposit, withdraw: a transaction built by the API (not necessarily sent); verify: a mined transaction whose attribution tag verified',
    }),
    chainId: Type.String(),
    opportunityId: Type.String(),
    token: Nullable(
      'Token of the amount, display form (`native` for the coin): tokenIn of a deposit, the receipt (share) token of a withdrawal; for verify, the token that reached the vault (EVM: the vault\'s asset; Solana, TON: what the wallet sent), null where the opportunity has since moved to another vault',
    ),
    amount: Nullable('Smallest units of token: as built for deposit and withdraw; for verify, what the chain says moved into the vault (not the amount built)'),
    txHash: Nullable('The verified transaction (type verify); null for built actions'),
  },
  { title: 'ActionActivity' },
)

export const SignupActivity = Type.Object(
  {
    ...common,
    type: Type.Literal('signup', { description: 'A wallet that registered as a member with this distributorId' }),
    chainId: Nullable('The chain id of the signed agreement'),
  },
  { title: 'SignupActivity' },
)

export const Activity = Type.Union([ActionActivity, SignupActivity], { title: 'Activity' })
export type Activity = Static<typeof Activity>

export const ActivityList = Type.Object({
  activities: Type.Array(Activity, { description: 'Newest first' }),
  pagination: Pagination,
})
export type ActivityList = Static<typeof ActivityList>
