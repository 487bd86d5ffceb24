/**
 * A page of rows and the count of every row that matches, from one statement. Two statements would each see their
 * own snapshot on PostgreSQL, and a write committed between them (a build recorded, a TVL crossing a filter, a
 * stream paused) would answer a total the page does not hold.
 */
import { type Kysely, type SelectQueryBuilder, sql } from 'kysely'

/** What a count comes back as: a number from SQLite, a string from PostgreSQL (bigint). */
type Count = number | string | bigint

export interface Page<R> {
  rows: R[]
  total: number
}

/**
 * A page whose ids an index finds, orders and counts, and whose rows alone are read: `page` selects the rows whose ids
 * are the page's (`where id in (ids … offset … limit …)`, ordered), `matching` the rows counted. The total rides on
 * each row as a scalar subquery. A window count (`count(*) over()`) sorted and counted whole rows, every one that
 * matched: ~1 s a page at 100,000 rows on SQLite, the one thread held.
 */
export async function pageOfIds<DB, TB extends keyof DB, R, M>(
  db: Kysely<DB>,
  matching: SelectQueryBuilder<DB, TB, M>,
  page: SelectQueryBuilder<DB, TB, R>,
  window: { offset: number; limit: number },
): Promise<Page<R>> {
  const total = sql<Count>`(${matching.clearSelect().select(sql<Count>`count(*)`.as('n'))})`
  const rows = await page.select(total.as('matchingTotal')).$castTo<R & { matchingTotal: Count }>().execute()
  if (rows.length) return { rows: rows.map(({ matchingTotal: _, ...row }) => row as R), total: Number(rows[0]!.matchingTotal) }
  // Nothing at all, or a page past the end: no row carries the total; nothing on it can disagree with one counted apart.
  if (window.offset === 0) return { rows: [], total: 0 }
  return { rows: [], total: Number((await db.selectNoFrom(total.as('n')).$castTo<{ n: Count }>().executeTakeFirstOrThrow()).n) }
}
