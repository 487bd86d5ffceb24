/**
 * Page and limit of every list (opportunities, streams, activity), and the pagination object that answers them:
 * one rule, so `page=1000000000` means the same on each.
 */
import { InvalidArgumentError } from './errors.ts'
import type { Pagination } from './opportunities/schema.ts'

export const MAX_PAGE = 1_000_000_000

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
