/**
 * The catalog's queries, kept beside store.ts (which spreads them into the one Store) so that file stays
 * one concept long. Rows hold JSON text; decoding it is the opportunities module's job.
 */
import type { Kysely } from 'kysely'
import type { Database, OpportunityRecord } from './schema.ts'
import { type Page, pageOfIds } from './page.ts'

export interface OpportunityFilter {
  /** Only these ecosystems (the ones this deployment loaded). */
  ecosystems: readonly string[]
  chainIds?: readonly string[]
  /** Canonical addresses; an opportunity matches when any of its deposit tokens is one of them. */
  depositTokens?: readonly string[]
  tvlGreaterThan?: number
  /** Delisted ones too (a portfolio still shows positions in them); the public list leaves them out. */
  includeDelisted?: boolean
  offset: number
  limit: number
}

export interface ChainFactsUpdate {
  /** The listing the facts were read for, as stored when the read began. */
  listing: string
  chainFacts: string
  tvl: number
  refreshedAt: number
}

export interface OpportunityUpsert {
  row: OpportunityRecord
  depositTokens: readonly string[]
  /**
   * The TVL of stored chain facts the upsert keeps, at this row's listing: a re-import may change the price
   * while the facts stay. Without it the stored TVL stays too.
   */
  tvlWith?: (chainFacts: string) => number
  /**
   * False where the caller checked this row (its chain facts null) against no stored facts: facts stored since (a
   * refresh's first read, which checked the listing before this one) are then not kept, and the entry is pending
   * again, for its next first read to check this listing. Otherwise stored facts of the same vault are kept.
   */
  factsSeen?: boolean
}

export interface UpsertOutcome {
  result: 'created' | 'updated'
  /** The row's chain facts were null and the ones already stored for the same vault were kept. */
  keptFacts: boolean
  /** The operator delisted it; the upsert leaves that as it is. */
  delisted: boolean
}

export interface OpportunityStore {
  /**
   * Creates or replaces an opportunity and its deposit-token index in one transaction. `chainFacts`
   * null keeps the facts already stored when the vault (chain and address) is unchanged.
   */
  upsertOpportunity(row: OpportunityRecord, depositTokens: readonly string[]): Promise<'created' | 'updated'>
  /** Several, as `upsertOpportunity` each, in one transaction: all are written or none (a catalog import). */
  upsertOpportunities(entries: readonly OpportunityUpsert[]): Promise<UpsertOutcome[]>
  getOpportunity(id: string): Promise<OpportunityRecord | undefined>
  /** Refreshed opportunities only, largest TVL first, with the count of all that match. */
  listOpportunities(filter: OpportunityFilter): Promise<Page<OpportunityRecord>>
  /** Every opportunity, refreshed or not (the refresher and the CLI). */
  allOpportunities(): Promise<OpportunityRecord[]>
  /**
   * Writes facts read for `update.listing`; false, writing nothing, when the entry is gone or was re-imported
   * since (the facts may be another vault's, and the import or the next refresh covers the new listing).
   */
  setOpportunityChainFacts(id: string, update: ChainFactsUpdate): Promise<boolean>
  /** Notes a failed refresh of `listing`, the last facts staying; nothing when the entry was re-imported since. */
  setOpportunityRefreshError(id: string, listing: string, error: string, at: number): Promise<void>
  /**
   * Takes `listing`'s facts away, noting why: the entry is pending again, off the API, until an import or a refresh
   * gives it facts (its facts must not be served, as kept ones are after a failed read); nothing when re-imported since.
   */
  withdrawOpportunityFacts(id: string, listing: string, error: string, at: number): Promise<void>
  /**
   * Delists the opportunity at `at`, or lists it again; an import never changes this. False when there is no such
   * opportunity. Delisting one already delisted keeps its first time.
   */
  setOpportunityDelisted(id: string, delisted: boolean, at: number): Promise<boolean>
  /**
   * Rewrites an entry's chain id (and its listing, which names it) to another spelling of the same chain, only while
   * the row still holds `from`: facts, TVL and times are left as the refresher or an import last wrote them. False
   * when the row changed meanwhile (an import writes the one spelling itself).
   */
  respellOpportunityChain(id: string, from: { chainId: string; listing: string }, to: { chainId: string; listing: string }): Promise<boolean>
}

// A statement's parameters stay well inside SQLite's 32,766 (PostgreSQL takes 65,535): 12 a row, 2 a token.
const ROWS_PER_STATEMENT = 500
const TOKEN_ROWS_PER_STATEMENT = 2_000
const READ_PAGE = 1_000

export function opportunityQueries(db: Kysely<Database>): OpportunityStore {
  const matching = (f: OpportunityFilter) => {
    let q = db.selectFrom('opportunities').where('refreshedAt', 'is not', null).where('ecosystem', 'in', [...f.ecosystems])
    if (!f.includeDelisted) q = q.where('delistedAt', 'is', null)
    if (f.chainIds) q = q.where('chainId', 'in', [...f.chainIds])
    if (f.tvlGreaterThan !== undefined) q = q.where('tvl', '>', f.tvlGreaterThan)
    if (f.depositTokens)
      q = q.where('id', 'in', db.selectFrom('opportunityDepositTokens').select('opportunityId').where('address', 'in', [...f.depositTokens]))
    return q
  }

  /**
   * Opportunities (ids ascending, none twice) and their deposit-token index, inside the caller's transaction, a few
   * statements for the lot: one each (five a row) held SQLite's write lock ~8.5 s for 50,000 entries, and a running
   * server's writes, and the reads queued behind them, waited past their 5 s (an audit: builds 503).
   */
  async function upsertChunk(trx: Kysely<Database>, entries: readonly OpportunityUpsert[]): Promise<UpsertOutcome[]> {
    const ids = entries.map((e) => e.row.id)
    // Inserted first, not looked up first: two imports creating one id at once on PostgreSQL would both find no row,
    // and the second insert would fail. The conflict waits for the other transaction and leaves its row to update.
    const inserted = await trx
      .insertInto('opportunities')
      .values(entries.map((e) => e.row))
      .onConflict((oc) => oc.column('id').doNothing())
      .returning('id')
      .execute()
    const created = new Set(inserted.map((r) => r.id))
    const others = ids.filter((id) => !created.has(id))
    // What the update keeps or compares.
    const kept = ['id', 'ecosystem', 'chainId', 'vaultAddress', 'listing', 'chainFacts', 'tvl', 'refreshedAt', 'refreshError', 'delistedAt', 'createdAt'] as const
    const existing = new Map(others.length ? (await trx.selectFrom('opportunities').select(kept).where('id', 'in', others).execute()).map((r) => [r.id, r]) : [])
    const outcomes: UpsertOutcome[] = []
    const updates: OpportunityRecord[] = []
    for (const { row, tvlWith, factsSeen } of entries) {
      const old = existing.get(row.id)
      if (!old) {
        outcomes.push({ result: 'created', keptFacts: false, delisted: false })
        continue
      }
      const sameVault = old.chainId === row.chainId && old.vaultAddress === row.vaultAddress && old.ecosystem === row.ecosystem
      // Facts of the same listing read after this import's read began (a refresh meanwhile) are newer than the import's:
      // kept (a re-audit: a slow import had put an older TVL back under a newer time).
      const newerStored =
        sameVault && old.listing === row.listing && row.chainFacts !== null && old.chainFacts !== null && (old.refreshedAt ?? -Infinity) > (row.refreshedAt ?? Infinity)
      const keep = newerStored || (row.chainFacts === null && sameVault && (factsSeen !== false || old.chainFacts === null))
      const keptFacts = keep && old.chainFacts !== null
      updates.push({
        ...row,
        chainFacts: keep ? old.chainFacts : row.chainFacts,
        tvl: keptFacts && tvlWith && !newerStored ? tvlWith(old.chainFacts!) : keep ? old.tvl : row.tvl,
        refreshedAt: keep ? old.refreshedAt : row.refreshedAt,
        refreshError: keep ? old.refreshError : row.refreshError,
        delistedAt: old.delistedAt,
        createdAt: old.createdAt,
      })
      outcomes.push({ result: 'updated', keptFacts, delisted: old.delistedAt != null })
    }
    if (updates.length) {
      // Every row exists (none is ever deleted): the conflict's update is what runs, from the values given.
      await trx
        .insertInto('opportunities')
        .values(updates)
        .onConflict((oc) =>
          oc.column('id').doUpdateSet((eb) => ({
            ecosystem: eb.ref('excluded.ecosystem'),
            chainId: eb.ref('excluded.chainId'),
            vaultAddress: eb.ref('excluded.vaultAddress'),
            listing: eb.ref('excluded.listing'),
            chainFacts: eb.ref('excluded.chainFacts'),
            tvl: eb.ref('excluded.tvl'),
            refreshedAt: eb.ref('excluded.refreshedAt'),
            refreshError: eb.ref('excluded.refreshError'),
            updatedAt: eb.ref('excluded.updatedAt'),
          })),
        )
        .execute()
      await trx.deleteFrom('opportunityDepositTokens').where('opportunityId', 'in', others).execute()
    }
    const tokens = entries.flatMap((e) => [...new Set(e.depositTokens)].map((address) => ({ opportunityId: e.row.id, address })))
    for (let i = 0; i < tokens.length; i += TOKEN_ROWS_PER_STATEMENT)
      await trx.insertInto('opportunityDepositTokens').values(tokens.slice(i, i + TOKEN_ROWS_PER_STATEMENT)).execute()
    return outcomes
  }

  return {
    upsertOpportunity: (row, depositTokens) => db.transaction().execute(async (trx) => (await upsertChunk(trx, [{ row, depositTokens }]))[0]!.result),
    upsertOpportunities: (entries) =>
      db.transaction().execute(async (trx) => {
        // Rows locked in id order, whatever the file's: two imports naming the same entries in other orders each
        // waited for a row the other held (PostgreSQL's deadlock, every time). Outcomes in the file's order.
        const results: UpsertOutcome[] = new Array(entries.length)
        const order = entries.map((_, i) => i).sort((a, b) => (entries[a]!.row.id < entries[b]!.row.id ? -1 : entries[a]!.row.id > entries[b]!.row.id ? 1 : 0))
        // In chunks of at most ROWS_PER_STATEMENT, a chunk ending where an id comes again (one statement cannot
        // write a row twice): the later entry then updates the earlier, as the file orders them.
        let chunk: number[] = []
        const flush = async () => {
          const outcomes = await upsertChunk(trx, chunk.map((i) => entries[i]!))
          chunk.forEach((i, k) => (results[i] = outcomes[k]!))
          chunk = []
        }
        for (const i of order) {
          const last = chunk.at(-1)
          if (chunk.length === ROWS_PER_STATEMENT || (last !== undefined && entries[last]!.row.id === entries[i]!.row.id)) await flush()
          chunk.push(i)
        }
        if (chunk.length) await flush()
        return results
      }),
    getOpportunity: (id) => db.selectFrom('opportunities').selectAll().where('id', '=', id).executeTakeFirst(),
    async listOpportunities(filter) {
      // SQL has no empty IN list: a filter that can match nothing answers without a query.
      if (!filter.ecosystems.length || filter.chainIds?.length === 0 || filter.depositTokens?.length === 0) return { rows: [], total: 0 }
      // The page's ids found, ordered and counted in opportunities_listing; only the page's rows (with their JSON) are
      // read. Sorting whole rows held the one thread ~0.5 s a page for 50,000 entries, ~3 s for the last page.
      const pageIds = matching(filter).select('id').orderBy('tvl', 'desc').orderBy('id').offset(filter.offset).limit(filter.limit)
      return pageOfIds(db, matching(filter), db.selectFrom('opportunities').where('id', 'in', pageIds).selectAll().orderBy('tvl', 'desc').orderBy('id'), filter)
    },
    async allOpportunities() {
      // In pages by id, each a range of the primary key, the event loop free between them: read at once, 50,000
      // entries held it ~0.2–0.5 s (every request waited) at each refresh pass and portfolio. An entry is read once,
      // whatever a refresh or an import writes meanwhile (ids do not move; none is deleted).
      const rows: OpportunityRecord[] = []
      for (;;) {
        const after = rows.at(-1)?.id
        const from = after === undefined ? db.selectFrom('opportunities') : db.selectFrom('opportunities').where('id', '>', after)
        const page = await from.selectAll().orderBy('id').limit(READ_PAGE).execute()
        rows.push(...page)
        if (page.length < READ_PAGE) break
        // A query's promise settles in the same turn: the loop would not see a request or a timer until the last page.
        await new Promise((resolve) => setImmediate(resolve))
      }
      return rows.sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    },
    async setOpportunityChainFacts(id, { listing, ...facts }) {
      // Conditional on the listing, in the one statement: a re-import committed while the chain was read wins. And on
      // the stored facts' time: of two processes' reads, the later begun stands (a re-audit: a slow RPC's older read,
      // written last, had put an older TVL back under a newer time).
      const r = await db
        .updateTable('opportunities')
        .set({ ...facts, refreshError: null, updatedAt: facts.refreshedAt })
        .where('id', '=', id)
        .where('listing', '=', listing)
        .where((eb) => eb.or([eb('refreshedAt', 'is', null), eb('refreshedAt', '<=', facts.refreshedAt)]))
        .executeTakeFirst()
      return r.numUpdatedRows > 0n
    },
    async setOpportunityRefreshError(id, listing, error, at) {
      // A failure to read an old listing says nothing about the one imported over it.
      await db.updateTable('opportunities').set({ refreshError: error, updatedAt: at }).where('id', '=', id).where('listing', '=', listing).execute()
    },
    async withdrawOpportunityFacts(id, listing, error, at) {
      await db
        .updateTable('opportunities')
        .set({ chainFacts: null, tvl: 0, refreshedAt: null, refreshError: error, updatedAt: at })
        .where('id', '=', id)
        .where('listing', '=', listing)
        .execute()
    },
    async respellOpportunityChain(id, from, to) {
      const r = await db
        .updateTable('opportunities')
        .set({ chainId: to.chainId, listing: to.listing })
        .where('id', '=', id)
        .where('chainId', '=', from.chainId)
        .where('listing', '=', from.listing)
        .executeTakeFirst()
      return r.numUpdatedRows > 0n
    },
    async setOpportunityDelisted(id, delisted, at) {
      const r = await db
        .updateTable('opportunities')
        .set((eb) => ({ delistedAt: delisted ? eb.fn.coalesce('delistedAt', eb.val(at)) : null, updatedAt: at }))
        .where('id', '=', id)
        .executeTakeFirst()
      return r.numUpdatedRows > 0n
    },
  }
}
