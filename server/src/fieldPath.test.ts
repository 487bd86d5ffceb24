import { expect, test } from 'bun:test'
import { fieldPath, pointerPath } from './fieldPath.ts'

test('a path names indexes in brackets and quotes a key that is no identifier', () => {
  expect(fieldPath(['opportunities', 1, 'depositTokens', 0, 'address'])).toBe('opportunities[1].depositTokens[0].address')
  expect(fieldPath([0, 'a'])).toBe('[0].a')
  expect(fieldPath(['a', 'odd key', 'b'])).toBe('a["odd key"].b')
  expect(fieldPath(['x\0'])).toBe('["x\\u0000"]')
  expect(fieldPath([])).toBe('')
})

test("TypeBox's paths read as the same spelling, a whole number as an index", () => {
  expect(pointerPath('/depositTokens/0/address')).toBe('depositTokens[0].address')
  expect(pointerPath('/address')).toBe('address')
  expect(pointerPath('/a/10/b/01')).toBe('a[10].b["01"]')
  expect(pointerPath('')).toBe('')
})
