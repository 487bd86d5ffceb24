/**
 * The catalog's queries, kept beside store.ts (which spreads them into the one Store) so that file stays
 * one concept long. Rows hold JSON text; decoding it is the opportunities module's job.
 */
import type { Kysely } from 'kysely'
import type { Database, OpportunityRecord } from './schema.ts'

export interface OpportunityFilter {
  /** Only these ecosystems (the ones this deployment loaded). */
  ecosystems: readonly string[]
  chainIds?: readonly string[]
  /** Canonical addresses; an opportunity matches when any of its deposit tokens is one of them. */
  depositTokens?: readonly string[]
  tvlGreaterThan?: number
  offset: number
  limit: number
}

export interface ChainFactsUpdate {
  chainFacts: string
  tvl: number
  refreshedAt: number
}

export interface OpportunityStore {
  /**
   * Creates or replaces an opportunity and its deposit-token index in one transaction. `chainFacts`
   * null keeps the facts already stored when the vault (chain and address) is unchanged.
   */
  upsertOpportunity(row: OpportunityRecord, depositTokens: readonly string[]): Promise<'created' | 'updated'>
  /** Several, as `upsertOpportunity` each, in one transaction: all are written or none (a catalog import). */
  upsertOpportunities(entries: readonly { row: OpportunityRecord; depositTokens: readonly string[] }[]): Promise<('created' | 'updated')[]>
  getOpportunity(id: string): Promise<OpportunityRecord | undefined>
  /** Refreshed opportunities only, largest TVL first, with the count of all that match. */
  listOpportunities(filter: OpportunityFilter): Promise<{ rows: OpportunityRecord[]; total: number }>
  /** Every opportunity, refreshed or not (the refresher and the CLI). */
  allOpportunities(): Promise<OpportunityRecord[]>
  setOpportunityChainFacts(id: string, update: ChainFactsUpdate): Promise<void>
  /** Notes a failed refresh; the last facts stay. */
  setOpportunityRefreshError(id: string, error: string, at: number): Promise<void>
}

export function opportunityQueries(db: Kysely<Database>): OpportunityStore {
  const matching = (f: OpportunityFilter) => {
    let q = db.selectFrom('opportunities').where('refreshedAt', 'is not', null).where('ecosystem', 'in', [...f.ecosystems])
    if (f.chainIds) q = q.where('chainId', 'in', [...f.chainIds])
    if (f.tvlGreaterThan !== undefined) q = q.where('tvl', '>', f.tvlGreaterThan)
    if (f.depositTokens)
      q = q.where('id', 'in', db.selectFrom('opportunityDepositTokens').select('opportunityId').where('address', 'in', [...f.depositTokens]))
    return q
  }

  /** One opportunity and its deposit-token index, inside the caller's transaction. */
  async function upsertIn(trx: Kysely<Database>, row: OpportunityRecord, depositTokens: readonly string[]): Promise<'created' | 'updated'> {
    const existing = await trx.selectFrom('opportunities').selectAll().where('id', '=', row.id).executeTakeFirst()
    if (!existing) {
      await trx.insertInto('opportunities').values(row).execute()
    } else {
      const sameVault = existing.chainId === row.chainId && existing.vaultAddress === row.vaultAddress && existing.ecosystem === row.ecosystem
      const keep = row.chainFacts === null && sameVault
      await trx
        .updateTable('opportunities')
        .set({
          ecosystem: row.ecosystem,
          chainId: row.chainId,
          vaultAddress: row.vaultAddress,
          listing: row.listing,
          chainFacts: keep ? existing.chainFacts : row.chainFacts,
          tvl: keep ? existing.tvl : row.tvl,
          refreshedAt: keep ? existing.refreshedAt : row.refreshedAt,
          refreshError: keep ? existing.refreshError : row.refreshError,
          updatedAt: row.updatedAt,
        })
        .where('id', '=', row.id)
        .execute()
      await trx.deleteFrom('opportunityDepositTokens').where('opportunityId', '=', row.id).execute()
    }
    const unique = [...new Set(depositTokens)]
    if (unique.length)
      await trx
        .insertInto('opportunityDepositTokens')
        .values(unique.map((address) => ({ opportunityId: row.id, address })))
        .execute()
    return existing ? 'updated' : 'created'
  }

  return {
    upsertOpportunity: (row, depositTokens) => db.transaction().execute((trx) => upsertIn(trx, row, depositTokens)),
    upsertOpportunities: (entries) =>
      db.transaction().execute(async (trx) => {
        const results: ('created' | 'updated')[] = []
        for (const e of entries) results.push(await upsertIn(trx, e.row, e.depositTokens))
        return results
      }),
    getOpportunity: (id) => db.selectFrom('opportunities').selectAll().where('id', '=', id).executeTakeFirst(),
    async listOpportunities(filter) {
      // SQL has no empty IN list: a filter that can match nothing answers without a query.
      if (!filter.ecosystems.length || filter.chainIds?.length === 0 || filter.depositTokens?.length === 0) return { rows: [], total: 0 }
      const [rows, count] = await Promise.all([
        matching(filter).selectAll().orderBy('tvl', 'desc').orderBy('id').offset(filter.offset).limit(filter.limit).execute(),
        matching(filter).select((eb) => eb.fn.countAll<number | string | bigint>().as('n')).executeTakeFirstOrThrow(),
      ])
      return { rows, total: Number(count.n) }
    },
    allOpportunities: () => db.selectFrom('opportunities').selectAll().orderBy('createdAt').orderBy('id').execute(),
    async setOpportunityChainFacts(id, update) {
      await db
        .updateTable('opportunities')
        .set({ ...update, refreshError: null, updatedAt: update.refreshedAt })
        .where('id', '=', id)
        .execute()
    },
    async setOpportunityRefreshError(id, error, at) {
      await db.updateTable('opportunities').set({ refreshError: error, updatedAt: at }).where('id', '=', id).execute()
    },
  }
}
