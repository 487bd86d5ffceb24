/**
 * The stream queries, kept beside store.ts (which spreads them into the one Store) so that file stays one
 * concept long. State changes are compare-and-set on the stored state, so of two concurrent transitions
 * from one state exactly one lands.
 */
import { type Kysely, sql } from 'kysely'
import type { Database, StreamRecord, StreamsTable } from './schema.ts'
import { type Page, pageOfIds } from './page.ts'
import { type IdempotentAnswer, writeAnswer } from './idempotency.ts'

type State = StreamsTable['state']

export interface StreamFilter {
  orgId: string
  /** The state as read at `now`: running streams past their end count as completed. */
  state?: State
  now: number
  offset: number
  limit: number
}

export type FundStreamResult = 'funded' | 'not_pending' | 'tx_used'

export interface StreamStore {
  /** With `answer`, an idempotent creation's, written in the same transaction (see idempotency.ts). */
  insertStream(row: StreamRecord, answer?: IdempotentAnswer): Promise<void>
  getStream(id: string): Promise<StreamRecord | undefined>
  /** One organization's streams, newest first, with the count of all that match. */
  listStreams(filter: StreamFilter): Promise<Page<StreamRecord>>
  /** Moves the stream from `from` to `to`; false when its stored state was no longer `from`. */
  setStreamState(id: string, p: { from: State; to: State; at: number }): Promise<boolean>
  /**
   * A pending stream becomes active with its funding transaction recorded; `tx_used` when that transaction already
   * funded a stream of the same creator and reward token (one transaction may fund several creators' or tokens'
   * streams: a bundle's), `not_pending` when the stream was no longer pending.
   */
  fundStream(id: string, p: { chainId: string; txHash: string; at: number }): Promise<FundStreamResult>
  /**
   * Up to `limit` ids of streams, of any organization, that still reward the opportunity's depositors at `now`:
   * pending (a funding may yet come), active or paused, before their end. A scan: asked only when an import moves
   * an opportunity to another chain, and an index would cost every stream's insert for that.
   */
  liveStreamsTargeting(opportunityId: string, now: number, limit: number): Promise<string[]>
  /**
   * Up to `limit` pending token streams of any organization that end after `now`, soonest end first (of one treasury
   * and reward token, where `look` names them): what the watch on fundings looks for (streams/watch.ts). Read through
   * the pending token streams' own index (by treasury and token, then end), which no other stream is in.
   */
  pendingTokenStreams(now: number, limit: number, look?: FundingLook): Promise<StreamRecord[]>
  /**
   * The treasuries and reward tokens, per chain, that pending token streams ending after `now` are funded to: at most
   * `limit`, in order of their keys, after `after` where given (a page through them).
   */
  pendingFundingLooks(now: number, limit: number, after?: FundingLook): Promise<FundingLook[]>
  /** Where the watch's look at a treasury and token got to, as last kept (any process's). */
  getLookProgress(look: FundingLook): Promise<LookProgress | undefined>
  /** Keeps where a look got to, over what was kept at the same time or before (by the writer's clock). */
  putLookProgress(look: FundingLook, progress: LookProgress): Promise<void>
  /** Forgets the looks last kept before `before` (one row per treasury and token: a small table); how many. */
  deleteLookProgress(before: number): Promise<number>
}

/** Where one look got to: the plugin's cursor, and the transactions to read again with the passes that failed them. */
export interface LookProgress {
  cursor: string
  again: [txHash: string, attempts: number][]
  updatedAt: number
}

/** Where a token stream's funding lands: its chain, treasury and reward token. */
export interface FundingLook {
  ecosystem: string
  chainId: string
  treasury: string
  rewardToken: string
}

export function streamQueries(db: Kysely<Database>): StreamStore {
  const matching = (f: StreamFilter) => {
    let q = db.selectFrom('streams').where('orgId', '=', f.orgId)
    switch (f.state) {
      case undefined:
        break
      case 'active':
      case 'paused':
        q = q.where('state', '=', f.state).where('endTime', '>', f.now)
        break
      case 'completed':
        q = q.where((eb) => eb.or([eb('state', '=', 'completed'), eb.and([eb('state', 'in', ['active', 'paused']), eb('endTime', '<=', f.now)])]))
        break
      default:
        q = q.where('state', '=', f.state)
    }
    return q
  }

  // The literals are the partial index's own predicate, so both engines read through it (a bound parameter would leave
  // PostgreSQL's generic plans unable to use it).
  const pendingTokens = () => db.selectFrom('streams').where('state', '=', sql.lit('pending')).where('type', '=', sql.lit('token'))

  const lookRow = (l: FundingLook) =>
    db.selectFrom('fundingLooks').where('ecosystem', '=', l.ecosystem).where('chainId', '=', l.chainId).where('treasury', '=', l.treasury).where('rewardToken', '=', l.rewardToken)

  return {
    async insertStream(row, answer) {
      if (!answer) return void (await db.insertInto('streams').values(row).execute())
      await db.transaction().execute(async (trx) => {
        await writeAnswer(trx, answer)
        await trx.insertInto('streams').values(row).execute()
      })
    },
    getStream: (id) => db.selectFrom('streams').selectAll().where('id', '=', id).executeTakeFirst(),
    async liveStreamsTargeting(opportunityId, now, limit) {
      const rows = await db
        .selectFrom('streams')
        .select('id')
        .where('targetOpportunityId', '=', opportunityId)
        .where('state', 'in', ['pending', 'active', 'paused'])
        .where('endTime', '>', now)
        .orderBy('id')
        .limit(limit)
        .execute()
      return rows.map((r) => r.id)
    },
    pendingTokenStreams: (now, limit, look) => {
      let q = pendingTokens().selectAll().where('endTime', '>', now)
      if (look)
        q = q.where('ecosystem', '=', look.ecosystem).where('chainId', '=', look.chainId).where('treasury', '=', look.treasury).where('rewardToken', '=', look.rewardToken)
      return q.orderBy('endTime').orderBy('id').limit(limit).execute()
    },
    async pendingFundingLooks(now, limit, after) {
      let q = pendingTokens().select(['ecosystem', 'chainId', 'treasury', 'rewardToken']).distinct().where('endTime', '>', now)
      // The first page too is bounded below by a key (the empty one is the least): without it PostgreSQL's planner chose a
      // sequential scan over every stream once many pending ones had ended (an audit), where a bound reads the index.
      const from = after ?? { ecosystem: '', chainId: '', treasury: '', rewardToken: '' }
      q = q.where(sql<boolean>`(ecosystem, chain_id, treasury, reward_token) ${sql.raw(after ? '>' : '>=')} (${from.ecosystem}, ${from.chainId}, ${from.treasury}, ${from.rewardToken})`)
      const rows = await q.orderBy('ecosystem').orderBy('chainId').orderBy('treasury').orderBy('rewardToken').limit(limit).execute()
      return rows.map((r) => ({ ecosystem: r.ecosystem, chainId: r.chainId, treasury: r.treasury!, rewardToken: r.rewardToken! }))
    },
    async getLookProgress(look) {
      const row = await lookRow(look).select(['cursor', 'again', 'updatedAt']).executeTakeFirst()
      return row && { cursor: row.cursor, again: parseAgain(row.again), updatedAt: row.updatedAt }
    },
    async putLookProgress(look, p) {
      const values = { cursor: p.cursor, again: JSON.stringify(p.again), updatedAt: p.updatedAt }
      await db
        .insertInto('fundingLooks')
        .values({ ...look, ...values })
        // Not over a later one: a process whose clock is behind must not make another's fresh progress look a day old (an
        // audit: a restart then threw it away and started over, a funding past its first look lost).
        .onConflict((oc) =>
          oc
            .columns(['ecosystem', 'chainId', 'treasury', 'rewardToken'])
            .doUpdateSet(values)
            .where(sql<boolean>`funding_looks.updated_at <= ${p.updatedAt}`),
        )
        .execute()
    },
    async deleteLookProgress(before) {
      const r = await db.deleteFrom('fundingLooks').where('updatedAt', '<', before).executeTakeFirst()
      return Number(r.numDeletedRows)
    },
    async listStreams(filter) {
      // The page's ids found, ordered and counted in streams_listing; only the page's rows are read (the total in the
      // same statement). Sorting and counting whole rows held the one thread ~1 s a page for 100,000 streams.
      const pageIds = matching(filter).select('id').orderBy('createdAt', 'desc').orderBy('id', 'desc').offset(filter.offset).limit(filter.limit)
      return pageOfIds(db, matching(filter), db.selectFrom('streams').where('id', 'in', pageIds).selectAll().orderBy('createdAt', 'desc').orderBy('id', 'desc'), filter)
    },
    async setStreamState(id, p) {
      const r = await db.updateTable('streams').set({ state: p.to, updatedAt: p.at }).where('id', '=', id).where('state', '=', p.from).executeTakeFirst()
      return r.numUpdatedRows > 0n
    },
    async fundStream(id, p) {
      // Checked first for a clear answer; the unique index on (chain, funding transaction, creator, reward token) still
      // holds under a race.
      const used = await db
        .selectFrom('streams as used')
        .innerJoin('streams as own', (join) => join.on('own.id', '=', id).onRef('own.creator', '=', 'used.creator').onRef('own.rewardToken', '=', 'used.rewardToken'))
        .select('used.id')
        .where('used.chainId', '=', p.chainId)
        .where('used.fundingTxHash', '=', p.txHash)
        .executeTakeFirst()
      // This stream's own transaction, confirmed a moment ago by another request: it is no longer pending.
      if (used) return used.id === id ? 'not_pending' : 'tx_used'
      try {
        const r = await db
          .updateTable('streams')
          .set({ state: 'active', fundingTxHash: p.txHash, updatedAt: p.at })
          .where('id', '=', id)
          .where('state', '=', 'pending')
          .executeTakeFirst()
        return r.numUpdatedRows > 0n ? 'funded' : 'not_pending'
      } catch (e) {
        // Another stream took the transaction between the check and the write (PostgreSQL lets both check at once).
        if (isUniqueViolation(e)) return 'tx_used'
        throw e
      }
    },
  }
}

/** The kept list of transactions to read again; what is not such a list (written by another version) is none. */
function parseAgain(json: string): LookProgress['again'] {
  try {
    const v: unknown = JSON.parse(json)
    return Array.isArray(v) ? v.filter((e): e is [string, number] => Array.isArray(e) && typeof e[0] === 'string' && Number.isInteger(e[1])) : []
  } catch {
    return []
  }
}

/** A write refused by a unique index: PostgreSQL's SQLSTATE 23505, SQLite's extended code. */
function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE'
}
