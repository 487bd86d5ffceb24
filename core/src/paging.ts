/**
 * Page and limit of every list (opportunities, streams, activity), and the pagination object that answers them:
 * one rule, so `page=1000000000` means the same on each.
 */
import { Type } from '@sinclair/typebox'
import { InvalidArgumentError } from './errors.ts'
import type { Pagination } from './opportunities/schema.ts'

export const MAX_PAGE = 1_000_000_000

/**
 * An optional query parameter as it arrives, a string that core parses (naming what does not), documented as the value
 * it stands for: the API document shows `documented` (an integer in its range, a boolean, one of some words), so a
 * client generated from it sends what is taken. The server's document generator reads it (server/src/http/docs.ts).
 */
export const QueryValue = (documented: Record<string, unknown>, description: string) => Type.Optional(Type.String({ description, documented }))

export const PageQuery = QueryValue({ type: 'integer', minimum: 1, maximum: MAX_PAGE, default: 1 }, 'Page number, from 1 (default 1)')

export const LimitQuery = (max: number, fallback: number) =>
  QueryValue({ type: 'integer', minimum: 1, maximum: max, default: fallback }, `Page size, 1 to ${max} (default ${fallback})`)

export interface PageRequest {
  page: number
  limit: number
  offset: number
}

/** A whole number from 1 to `max`, `fallback` when absent; otherwise a 400 naming the parameter and the range. */
function wholeNumber(field: string, raw: string | undefined, fallback: number, max: number): number {
  if (raw === undefined || raw === '') return fallback
  const range = `must be a whole number from 1 to ${max}`
  const n = /^\d{1,10}$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN
  if (!(n >= 1 && n <= max)) throw new InvalidArgumentError(`${field} ${range}`, { [field]: range })
  return n
}

export function parsePage(q: { page?: string; limit?: string }, limits: { fallback: number; max: number }): PageRequest {
  const page = wholeNumber('page', q.page, 1, MAX_PAGE)
  const limit = wholeNumber('limit', q.limit, limits.fallback, limits.max)
  return { page, limit, offset: (page - 1) * limit }
}

export function pagination(p: PageRequest, total: number): Pagination {
  const totalPages = Math.ceil(total / p.limit)
  return { page: p.page, limit: p.limit, total, totalPages, hasNext: p.page < totalPages, hasPrevious: p.page > 1 }
}
