/**
 * Row types of the store, the only place they are written down. Instants are epoch milliseconds
 * (`bigint` columns read back as numbers); amounts in smallest units are decimal strings so both
 * engines keep every digit of a uint256.
 */
import type { Insertable, Selectable } from 'kysely'

export type Tier = 'standard' | 'premium'

export interface OrganizationsTable {
  id: string
  name: string
  tier: Tier
  hourlyBudget: number
  monthlyBudget: number | null
  createdAt: number
}

export interface ApiKeysTable {
  id: string
  orgId: string
  kind: 'publishable' | 'secret'
  hash: string
  start: string
  /** Null: the organization's default applies. */
  hourlyBudget: number | null
  monthlyBudget: number | null
  createdAt: number
  revokedAt: number | null
}

export interface DistributorsTable {
  id: string
  orgId: string
  name: string
  createdAt: number
}

export interface MembersTable {
  ecosystem: string
  address: string
  orgId: string
  distributorId: string | null
  chainId: string | null
  createdAt: number
}

export interface NoncesTable {
  nonce: string
  orgId: string
  ecosystem: string
  address: string
  message: string
  /** The chain the agreement names; null where the ecosystem's message names none and none was asked for. */
  chainId: string | null
  domain: string
  uri: string
  issuedAt: number
  expiresAt: number
  consumedAt: number | null
}

export interface ActionsTable {
  id: string
  orgId: string
  distributorId: string
  kind: 'deposit' | 'withdraw' | 'signup' | 'verify'
  ecosystem: string
  chainId: string | null
  wallet: string
  opportunityId: string | null
  token: string | null
  amount: string | null
  referralCode: string | null
  txHash: string | null
  /** On a `verify` row: the built action whose transaction it is (one per action). */
  verifies: string | null
  /**
   * Deposits and withdrawals: the vault they were built for, as the opportunity named it then (a re-import may move
   * the opportunity to another vault). Null on rows recorded before this column, and on signups.
   */
  vault: string | null
  createdAt: number
}

/**
 * Cost units a key used, per UTC month, and in the latest hour seen: what the in-process meter
 * writes back so a restart does not forget it (the Redis meter keeps its counts in Redis).
 */
export interface KeyUsageTable {
  keyId: string
  /** `YYYY-MM`, UTC. */
  month: string
  used: number
  /** Whole hours since the epoch; `hourUsed` counts that hour only. */
  hour: number
  hourUsed: number
}

/**
 * The opportunity catalog: what the operator imported (`listing`, JSON) and what the chain said at
 * the last refresh (`chainFacts`, JSON; null until the first). `tvl` (USD) is a column of its own so
 * the list can filter and sort on it.
 */
export interface OpportunitiesTable {
  id: string
  ecosystem: string
  chainId: string
  vaultAddress: string
  listing: string
  chainFacts: string | null
  tvl: number
  refreshedAt: number | null
  /** Why the last refresh failed, while the previous facts stay in place; null after a success. */
  refreshError: string | null
  /** When the operator delisted it (`opportunity delist`): no list, no get, no deposits; withdrawals stay open. */
  delistedAt: number | null
  createdAt: number
  updatedAt: number
}

/** One row per (opportunity, canonical deposit token address): the `depositToken` filter's index. */
export interface OpportunityDepositTokensTable {
  opportunityId: string
  address: string
}

/** Deployment settings the server makes itself (the generated attribution secret). */
export interface SettingsTable {
  name: string
  value: string
}

/**
 * Reward streams (see core/src/streams). `state` is the stored state; a running stream past `endTime`
 * reads as completed without a write. Token-stream columns (`rewardToken`, `creator`, `treasury`,
 * `fundingTxHash`) are null for point streams, `pointName` for token streams.
 */
export interface StreamsTable {
  id: string
  orgId: string
  type: 'token' | 'point'
  ecosystem: string
  chainId: string
  rewardToken: string | null
  pointName: string | null
  creator: string | null
  treasury: string | null
  netBudget: string
  feeAmount: string
  totalPulled: string
  targetOpportunityId: string
  startTime: number
  endTime: number
  state: 'pending' | 'active' | 'paused' | 'cancelled' | 'completed'
  fundingTxHash: string | null
  createdAt: number
  updatedAt: number
}

/**
 * The usage writes that committed, by writer (a meter's process) and sequence number, and the numbers of failed writes
 * their writer claimed: a write whose answer was lost (its COMMIT's) is claimed here before anything is sent again,
 * which would count it twice if it had committed. A writer keeps its last row.
 */
export interface UsageWritesTable {
  writer: string
  seq: number
  at: number
  /** 1: the number was claimed by its writer's check, not written (migration 18). */
  claimed: number
}

/**
 * Where the watch on stream fundings got to per treasury and reward token (core/src/streams/watch.ts), so a restarted
 * server goes on from there. `again` is JSON: the transactions it must read again, with the passes that failed them.
 */
export interface FundingLooksTable {
  ecosystem: string
  chainId: string
  treasury: string
  rewardToken: string
  cursor: string
  again: string
  updatedAt: number
}

/**
 * An organization's Idempotency-Key and what its request was answered (core/src/idempotency.ts). `id` is a hash of the
 * organization and the key, so the client's key is not kept; `fingerprint` a hash of the operation and its input.
 * While its request runs, `token` names that attempt, held until `leaseUntil`; `answer` is the JSON body of its success,
 * written in the same transaction as the row it created.
 */
export interface IdempotencyKeysTable {
  id: string
  fingerprint: string
  token: string | null
  leaseUntil: number
  answer: string | null
  createdAt: number
}

export interface SchemaMigrationsTable {
  version: number
  name: string
  appliedAt: number
}

export interface Database {
  organizations: OrganizationsTable
  apiKeys: ApiKeysTable
  distributors: DistributorsTable
  members: MembersTable
  nonces: NoncesTable
  actions: ActionsTable
  keyUsage: KeyUsageTable
  opportunities: OpportunitiesTable
  opportunityDepositTokens: OpportunityDepositTokensTable
  settings: SettingsTable
  streams: StreamsTable
  fundingLooks: FundingLooksTable
  usageWrites: UsageWritesTable
  idempotencyKeys: IdempotencyKeysTable
  schemaMigrations: SchemaMigrationsTable
}

export type Organization = Selectable<OrganizationsTable>
export type ApiKeyRecord = Selectable<ApiKeysTable>
export type Distributor = Selectable<DistributorsTable>
export type Member = Selectable<MembersTable>
export type NonceRecord = Selectable<NoncesTable>
export type ActionRecord = Selectable<ActionsTable>
export type NewAction = Insertable<ActionsTable>
export type KeyUsage = Selectable<KeyUsageTable>
export type OpportunityRecord = Selectable<OpportunitiesTable>
export type StreamRecord = Selectable<StreamsTable>
