import { expect, test } from 'bun:test'
import { firstDuplicateKey } from '@earn/server/duplicateKeys'

test('the first key an object names twice, with where it is; the same key in different objects is no duplicate', () => {
  const catalog = '[{"a":1,"b":{"c":[1,{"d":2}]}},{"id":"x","vaultAddress":"A","note":"\\"vaultAddress\\"","vaultAddress":"B"}]'
  expect(firstDuplicateKey(catalog)).toEqual({ path: '[1]', key: 'vaultAddress', field: '[1].vaultAddress' })
  expect(firstDuplicateKey('{"opportunities":[{"a":1},{"a":2,"x":{"a":1,"a":2}}]}')).toEqual({ path: 'opportunities[1].x', key: 'a', field: 'opportunities[1].x.a' })
  expect(firstDuplicateKey('{"a":{"b":1},"c":{"b":2},"d":[{"b":3},{"b":4}]}')).toBeUndefined()
  expect(firstDuplicateKey('[{"a b":{"k":1,"k":1}}]')).toEqual({ path: '[0]["a b"]', key: 'k', field: '[0]["a b"].k' })
  // Escapes name the same key as the plain spelling.
  expect(firstDuplicateKey('{"\\u0061":1,"a":2}')).toEqual({ path: '', key: 'a', field: 'a' })
  // Brackets and commas inside strings are text, not structure.
  expect(firstDuplicateKey('{"a":"{[,\\\\","b":1}')).toBeUndefined()
})

test('a key repeated third or later, after the first two differ, and paths through arrays of arrays', () => {
  expect(firstDuplicateKey('{"a":1,"b":2,"c":3,"b":4}')).toEqual({ path: '', key: 'b', field: 'b' })
  expect(firstDuplicateKey('{"a":1,"b":2,"a":3}')).toEqual({ path: '', key: 'a', field: 'a' })
  expect(firstDuplicateKey('{"x":[[1],[2,{"y":{"z":0,"z":1}}]]}')).toEqual({ path: 'x[1][1].y', key: 'z', field: 'x[1][1].y.z' })
  expect(firstDuplicateKey('{"":1,"":2}')).toEqual({ path: '', key: '', field: '[""]' })
  // The repeated key's own path as every 400 names a field: quoted where no identifier, an index's digits as a key.
  expect(firstDuplicateKey('{"address":[{"a b":1,"a b":2}]}')?.field).toBe('address[0]["a b"]')
  expect(firstDuplicateKey('{"address":{"0":1,"0":2}}')?.field).toBe('address["0"]')
  expect(firstDuplicateKey('{"k\\u0000":1,"k\\u0000":2}')?.field).toBe('["k\\u0000"]')
  expect(firstDuplicateKey('[[],{},[{}],{"a":[]}]')).toBeUndefined()
})
