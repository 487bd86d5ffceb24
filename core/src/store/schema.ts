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
  chainId: string
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
  schemaMigrations: SchemaMigrationsTable
}

export type Organization = Selectable<OrganizationsTable>
export type ApiKeyRecord = Selectable<ApiKeysTable>
export type Distributor = Selectable<DistributorsTable>
export type Member = Selectable<MembersTable>
export type NonceRecord = Selectable<NoncesTable>
export type ActionRecord = Selectable<ActionsTable>
export type NewAction = Insertable<ActionsTable>
