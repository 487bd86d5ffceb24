/**
 * Activity queries, kept beside store.ts (which spreads them into the one Store) like the catalog's. An activity
 * row is a recorded action (built deposit or withdrawal, verified transaction) or, for a distributor, a signup (a
 * member registered through it). Newest first; ties broken by id so pages never overlap or skip.
 */
import { type Kysely, sql } from 'kysely'
import { type Page, pageWithTotal } from './page.ts'
import type { Database } from './schema.ts'

/** The action kinds activity shows. */
export const ACTIVITY_KINDS = ['deposit', 'withdraw', 'verify'] as const
export type ActivityKind = (typeof ACTIVITY_KINDS)[number]

export interface ActivityRow {
  /** The action's id; for a signup `signup:<ecosystem>:<address>` (a member has no id of its own). */
  id: string
  type: ActivityKind | 'signup'
  ecosystem: string
  /** Canonical wallet address. */
  wallet: string
  chainId: string | null
  opportunityId: string | null
  distributorId: string | null
  token: string | null
  amount: string | null
  txHash: string | null
  createdAt: number
}

export interface ActivityPageRequest {
  offset: number
  limit: number
}

export interface WalletActivityFilter extends ActivityPageRequest {
  orgId: string
  /** Canonical addresses per ecosystem. */
  wallets: ReadonlyMap<string, readonly string[]>
}

export interface DistributorActivityFilter extends ActivityPageRequest {
  orgId: string
  distributorId: string
  /** Only this opportunity's actions; signups (which have none) are then left out. */
  opportunityId?: string
}

export type ActivityPage = Page<ActivityRow>

export interface ActivityStore {
  /** The organization's actions for these wallets. */
  listWalletActivity(filter: WalletActivityFilter): Promise<ActivityPage>
  /** The distributor's actions and signups, merged (the caller checked the distributor is the organization's). */
  listDistributorActivity(filter: DistributorActivityFilter): Promise<ActivityPage>
}

export function activityQueries(db: Kysely<Database>): ActivityStore {
  const newestFirst = <Q extends { orderBy(c: 'createdAt' | 'id', d: 'desc'): Q }>(q: Q) => q.orderBy('createdAt', 'desc').orderBy('id', 'desc')
  const actions = (orgId: string) => db.selectFrom('actions').where('orgId', '=', orgId).where('kind', 'in', [...ACTIVITY_KINDS])
  const actionColumns = [
    'id',
    'kind as type',
    'ecosystem',
    'wallet',
    'chainId',
    'opportunityId',
    'distributorId',
    'token',
    'amount',
    'txHash',
    'createdAt',
  ] as const

  const signups = (orgId: string, distributorId: string) =>
    db.selectFrom('members').where('orgId', '=', orgId).where('distributorId', '=', distributorId)
  // Same columns, same order as `actionColumns`: UNION ALL pairs them by position. Untyped NULLs take the
  // other branch's type on PostgreSQL; `||` concatenates on both engines.
  const signupColumns = [
    sql<string>`'signup:' || ecosystem || ':' || address`.as('id'),
    sql<'signup'>`'signup'`.as('type'),
    'ecosystem',
    'address as wallet',
    'chainId',
    sql<string | null>`null`.as('opportunityId'),
    'distributorId',
    sql<string | null>`null`.as('token'),
    sql<string | null>`null`.as('amount'),
    sql<string | null>`null`.as('txHash'),
    'createdAt',
  ] as const

  return {
    async listWalletActivity(f) {
      // SQL has no empty IN list: no wallets match nothing.
      if (![...f.wallets.values()].some((a) => a.length)) return { rows: [], total: 0 }
      const matching = actions(f.orgId).where((eb) =>
        eb.or(
          [...f.wallets]
            .filter(([, addresses]) => addresses.length)
            .map(([ecosystem, addresses]) => eb.and([eb('ecosystem', '=', ecosystem), eb('wallet', 'in', [...addresses])])),
        ),
      )
      return pageWithTotal(newestFirst(db.selectFrom(matching.select(actionColumns).$castTo<ActivityRow>().as('activity')).selectAll()), f)
    },

    async listDistributorActivity(f) {
      let ofDistributor = actions(f.orgId).where('distributorId', '=', f.distributorId)
      if (f.opportunityId !== undefined) ofDistributor = ofDistributor.where('opportunityId', '=', f.opportunityId)
      const withSignups = f.opportunityId === undefined
      const merged = withSignups
        ? ofDistributor
            .select(actionColumns)
            .$castTo<ActivityRow>()
            .unionAll(signups(f.orgId, f.distributorId).select(signupColumns).$castTo<ActivityRow>())
        : ofDistributor.select(actionColumns).$castTo<ActivityRow>()
      return pageWithTotal(newestFirst(db.selectFrom(merged.as('activity')).selectAll()), f)
    },
  }
}
