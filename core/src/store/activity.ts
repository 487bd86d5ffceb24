/**
 * Activity queries, kept beside store.ts (which spreads them into the one Store) like the catalog's. An activity
 * row is a recorded action (built deposit or withdrawal, verified transaction) or, for a distributor, a signup (a
 * member registered through it). Newest first; ties broken by id so pages never overlap or skip.
 */
import { type Kysely, sql } from 'kysely'
import type { Engine } from './migrations.ts'
import { type Page, pageOfIds } from './page.ts'
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

export function activityQueries(db: Kysely<Database>, engine: Engine): ActivityStore {
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
      // On SQLite the organization's term is kept off every index (`+org_id`): without statistics its planner read two
      // wallets' rows through actions_by_distributor, the organization's whole history sorted (an audit: ~0.5 s a page
      // at 200,000 rows, the one thread held), where each wallet's own rows are a seek in actions_wallet.
      const ofOrg =
        engine === 'sqlite' ? db.selectFrom('actions').where(sql<string>`+org_id`, '=', f.orgId).where('kind', 'in', [...ACTIVITY_KINDS]) : actions(f.orgId)
      const matching = ofOrg.where((eb) =>
        eb.or(
          [...f.wallets]
            .filter(([, addresses]) => addresses.length)
            .map(([ecosystem, addresses]) => eb.and([eb('ecosystem', '=', ecosystem), eb('wallet', 'in', [...addresses])])),
        ),
      )
      // The page's ids are found and ordered through the wallets' index (actions_wallet: one wallet's rows come out in
      // time order), and only the page's rows are read whole, in the same statement as the total (one snapshot).
      // Sorting and counting whole rows (a public key may ask for any wallet) held the one thread ~1.2 s a page at
      // 100,000 rows; now ~30 ms for one wallet, ~130 ms for 600 (their rows sorted). A covering index (org, ecosystem,
      // wallet, time, id, kind) made that ~20 ms, but cost every build's recorded row ~25 µs more (~40%), the build's
      // largest cost.
      const pageIds = newestFirst(matching.select('id')).offset(f.offset).limit(f.limit)
      return pageOfIds(db, matching, newestFirst(db.selectFrom('actions').where('id', 'in', pageIds).select(actionColumns)).$castTo<ActivityRow>(), f)
    },

    async listDistributorActivity(f) {
      let ofDistributor = actions(f.orgId).where('distributorId', '=', f.distributorId)
      if (f.opportunityId !== undefined) ofDistributor = ofDistributor.where('opportunityId', '=', f.opportunityId)
      const ofSignups = f.opportunityId === undefined ? signups(f.orgId, f.distributorId) : undefined
      // A distributor's history can be long: the page is found among keys alone, each source's newest offset + limit in
      // the order of its index (actions_by_distributor, members_by_distributor, which hold the keys: the tables are not
      // read for the rows skipped), merged in order, and only the page's rows are then read by primary key. The total
      // is counted from the same indexes, in the page's own statement (one snapshot). Whole rows of each source up to
      // the offset took ~1.4 s at page 11,000 of 220,000 on SQLite, ~0.5 s on PostgreSQL; keys, ~0.2 s and ~0.25 s.
      const reach = f.offset + f.limit
      const actionCount = sql<number>`(${ofDistributor.select((eb) => eb.fn.countAll().as('n'))})`
      const total = ofSignups ? sql<number | string | bigint>`${actionCount} + (${ofSignups.select((eb) => eb.fn.countAll().as('n'))})` : actionCount
      const counted = async () => Number((await db.selectNoFrom(total.as('n')).executeTakeFirstOrThrow()).n)
      // A page past the end would read every key to skip them: the count alone answers it.
      if (f.offset > 0) {
        const all = await counted()
        if (f.offset >= all) return { rows: [], total: all }
      }
      // An action's key has nulls where a signup's carries its primary key (ecosystem, address). The arm differs by
      // engine: SQLite merges a compound's arms in order only where an arm is a plain select (given a subquery with its
      // own ORDER BY and LIMIT, it sorted the actions' keys again), while PostgreSQL's planner, given the plain arm, read
      // and sorted all the distributor's actions (~210 ms a first page) where a LIMIT makes it walk the index (~1 ms).
      const actionKeyColumns = ['createdAt', 'id', sql<string | null>`null`.as('ecosystem'), sql<string | null>`null`.as('address')] as const
      const limitedActionKeys = db.selectFrom(newestFirst(ofDistributor.select(actionKeyColumns)).limit(reach).as('actionKeys')).selectAll()
      // The same columns either way; only the builders' types differ.
      const actionKeys = engine === 'sqlite' ? (ofDistributor.select(actionKeyColumns) as unknown as typeof limitedActionKeys) : limitedActionKeys
      const keys = ofSignups
        ? actionKeys.unionAll(
            db
              .selectFrom(
                ofSignups
                  .select(['createdAt', sql<string>`'signup:' || ecosystem || ':' || address`.as('id'), 'ecosystem', 'address'])
                  // A signup's id orders as its ecosystem and address.
                  .orderBy('createdAt', 'desc')
                  .orderBy('ecosystem', 'desc')
                  .orderBy('address', 'desc')
                  .limit(reach)
                  .as('signupKeys'),
              )
              .selectAll(),
          )
        : actionKeys
      const page = await db
        .selectFrom(newestFirst(keys).offset(f.offset).limit(f.limit).as('p'))
        .leftJoin('actions as a', (j) => j.onRef('a.id', '=', 'p.id').on('p.address', 'is', null))
        .leftJoin('members as m', (j) => j.onRef('m.ecosystem', '=', 'p.ecosystem').onRef('m.address', '=', 'p.address'))
        // Exactly one side joins a key, so coalesce takes that side's value (the other side's are all null).
        .select([
          'p.id',
          sql<ActivityRow['type']>`coalesce(a.kind, 'signup')`.as('type'),
          sql<string>`coalesce(a.ecosystem, m.ecosystem)`.as('ecosystem'),
          sql<string>`coalesce(a.wallet, m.address)`.as('wallet'),
          sql<string | null>`coalesce(a.chain_id, m.chain_id)`.as('chainId'),
          'a.opportunityId',
          sql<string | null>`coalesce(a.distributor_id, m.distributor_id)`.as('distributorId'),
          'a.token',
          'a.amount',
          'a.txHash',
          'p.createdAt',
          total.as('matchingTotal'),
        ])
        .orderBy('p.createdAt', 'desc')
        .orderBy('p.id', 'desc')
        .$castTo<ActivityRow & { matchingTotal: number | string | bigint }>()
        .execute()
      if (page.length) return { rows: page.map(({ matchingTotal: _, ...row }) => row), total: Number(page[0]!.matchingTotal) }
      // Nothing at all (or, for a page counted a moment ago, past the end): no row carries the total.
      return { rows: [], total: await counted() }
    },
  }
}
