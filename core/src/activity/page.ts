/** Page and limit of an activity list, and the pagination object that answers them (as the opportunity list's). */
import { InvalidFilterError } from '../opportunities/errors.ts'
import type { Pagination } from '../opportunities/schema.ts'
import { DEFAULT_ACTIVITY_LIMIT, MAX_ACTIVITY_LIMIT } from './schema.ts'

export interface PageRequest {
  page: number
  limit: number
  offset: number
}

function wholeNumber(field: string, raw: string | undefined, fallback: number, max: number): number {
  if (raw === undefined || raw === '') return fallback
  const range = `a whole number from 1 to ${max}`
  if (!/^\d{1,10}$/.test(raw.trim())) throw new InvalidFilterError(field, `must be ${range}`)
  const n = Number(raw.trim())
  if (n < 1 || n > max) throw new InvalidFilterError(field, `must be ${range}`)
  return n
}

export function parsePage(q: { page?: string; limit?: string }): PageRequest {
  const page = wholeNumber('page', q.page, 1, 1_000_000_000)
  const limit = wholeNumber('limit', q.limit, DEFAULT_ACTIVITY_LIMIT, MAX_ACTIVITY_LIMIT)
  return { page, limit, offset: (page - 1) * limit }
}

export function pagination(p: PageRequest, total: number): Pagination {
  const totalPages = Math.ceil(total / p.limit)
  return { page: p.page, limit: p.limit, total, totalPages, hasNext: p.page < totalPages, hasPrevious: p.page > 1 }
}
