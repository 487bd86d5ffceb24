import { describe, expect, test } from 'bun:test'
import { InvalidArgumentError } from './errors.ts'
import { MAX_PAGE, pagination, parsePage } from './paging.ts'

const refusal = (q: { page?: string; limit?: string }) => {
  try {
    parsePage(q, { fallback: 20, max: 100 })
  } catch (e) {
    expect(e).toBeInstanceOf(InvalidArgumentError)
    return { message: (e as InvalidArgumentError).message, context: (e as InvalidArgumentError).context }
  }
  throw new Error(`accepted ${JSON.stringify(q)}`)
}

describe('parsePage: one rule for every list', () => {
  test('absent gives page 1 and the list default; whole numbers within range are taken, blanks trimmed', () => {
    expect(parsePage({}, { fallback: 20, max: 100 })).toEqual({ page: 1, limit: 20, offset: 0 })
    expect(parsePage({ page: ' 3 ', limit: '100' }, { fallback: 20, max: 100 })).toEqual({ page: 3, limit: 100, offset: 200 })
    expect(parsePage({ page: String(MAX_PAGE) }, { fallback: 20, max: 100 }).page).toBe(1_000_000_000)
  })

  test('anything else is a 400 naming the parameter and its whole range, the maximum page included', () => {
    for (const limit of ['0', '101', '1.5', 'x', '-1', '1e2'])
      expect(refusal({ limit })).toEqual({ message: 'limit must be a whole number from 1 to 100', context: { limit: 'must be a whole number from 1 to 100' } })
    for (const page of ['0', '1000000001', '99999999999', '+1'])
      expect(refusal({ page }).context).toEqual({ page: 'must be a whole number from 1 to 1000000000' })
  })

  test('pagination says where the page sits', () => {
    expect(pagination({ page: 2, limit: 10, offset: 10 }, 25)).toEqual({ page: 2, limit: 10, total: 25, totalPages: 3, hasNext: true, hasPrevious: true })
    expect(pagination({ page: 1, limit: 10, offset: 0 }, 0)).toEqual({ page: 1, limit: 10, total: 0, totalPages: 0, hasNext: false, hasPrevious: false })
  })
})
