/**
 * A page of rows and the count of every row that matches, from one statement. Two statements would each see their
 * own snapshot on PostgreSQL, and a write committed between them (a build recorded, a TVL crossing a filter, a
 * stream paused) would answer a total the page does not hold.
 */
import { type SelectQueryBuilder, sql } from 'kysely'

/** What a count comes back as: a number from SQLite, a string from PostgreSQL (bigint). */
type Count = number | string | bigint

export interface Page<R> {
  rows: R[]
  total: number
}

/** `ordered` selects the rows' columns in their order; its count rides on each row as a window. */
export async function pageWithTotal<DB, TB extends keyof DB, R>(
  ordered: SelectQueryBuilder<DB, TB, R>,
  window: { offset: number; limit: number },
): Promise<Page<R>> {
  const page = await ordered
    .select(sql<Count>`count(*) over()`.as('matchingTotal'))
    .$castTo<R & { matchingTotal: Count }>()
    .offset(window.offset)
    .limit(window.limit)
    .execute()
  const rows = page.map(({ matchingTotal: _, ...row }) => row as R)
  if (page.length) return { rows, total: Number(page[0]!.matchingTotal) }
  // A page past the end has no row to carry the count; nothing on it can disagree with one counted apart.
  if (window.offset === 0) return { rows, total: 0 }
  const count = await ordered
    .clearSelect()
    .clearOrderBy()
    .select(sql<Count>`count(*)`.as('n'))
    .$castTo<{ n: Count }>()
    .executeTakeFirstOrThrow()
  return { rows, total: Number(count.n) }
}
