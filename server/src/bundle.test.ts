import { afterAll, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fingerprint, keepMarkedInUse, pruneBundles } from './bundle.ts'

const root = mkdtempSync(join(tmpdir(), 'earn-bundle-unit-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const write = (path: string, text: string, time?: number) => {
  mkdirSync(join(root, path, '..'), { recursive: true })
  writeFileSync(join(root, path), text)
  if (time !== undefined) utimesSync(join(root, path), time, time)
}

test("a fingerprint follows the sources' bytes, not their times; tests are not sources", () => {
  const inputs = ['src', 'package.json']
  write('src/a.ts', 'export const limit = 1000', 1_000)
  write('src/b/c.ts', 'export {}', 1_000)
  write('package.json', '{}', 1_000)
  const first = fingerprint(root, inputs)
  expect(first).toMatch(/^[0-9a-f]{16}$/)
  // The same bytes at another time (a copy, an archive unpacked): the same bundle.
  utimesSync(join(root, 'src/a.ts'), 2_000, 2_000)
  expect(fingerprint(root, inputs)).toBe(first)
  // One byte changed, the size and the time as before (a release unpacked with its files' old times): another.
  write('src/a.ts', 'export const limit = 2000', 1_000)
  const second = fingerprint(root, inputs)
  expect(second).not.toBe(first)
  // A file moved: another.
  rmSync(join(root, 'src/b/c.ts'))
  write('src/c.ts', 'export {}', 1_000)
  expect(fingerprint(root, inputs)).not.toBe(second)
  const third = fingerprint(root, inputs)
  write('src/a.test.ts', 'test()')
  expect(fingerprint(root, inputs)).toBe(third)
})

test('a `*` input is every directory there: a fourth plugin is a source, its node_modules are not', () => {
  const inputs = ['plugins/*/src']
  write('plugins/evm/src/a.ts', 'export {}')
  const before = fingerprint(root, inputs)
  write('plugins/mock/src/index.ts', 'export const message = 1')
  const added = fingerprint(root, inputs)
  expect(added).not.toBe(before)
  write('plugins/mock/src/index.ts', 'export const message = 2')
  expect(fingerprint(root, inputs)).not.toBe(added)
  const edited = fingerprint(root, inputs)
  write('plugins/node_modules/src/x.ts', 'export {}')
  write('plugins/mock/node_modules/dep/src/x.ts', 'export {}')
  expect(fingerprint(root, inputs)).toBe(edited)
  expect(fingerprint(root, ['nothing/*/src'])).toBe(fingerprint(root, []))
})

test("pruning keeps the current bundle, the two newest others and any run from within a month, and touches nothing else (an earlier release's flat layout included)", () => {
  const dir = join(root, 'out')
  const names = ['0000000000000001', '0000000000000002', '0000000000000003', '0000000000000004', '000000000000000a']
  names.forEach((name, i) => {
    mkdirSync(join(dir, name), { recursive: true })
    writeFileSync(join(dir, name, 'main.js'), '')
    utimesSync(join(dir, name), 1_000 + i, 1_000 + i)
  })
  for (const file of ['main.js', 'main.js.map', 'chunk-abc123.js', 'notes.txt']) writeFileSync(join(dir, file), '')
  mkdirSync(join(dir, '.build-1-2'))
  // The current one is the oldest: kept all the same. Started from within the month: kept, however many.
  pruneBundles(dir, '0000000000000001', 2, 1_000 + 30 * 24 * 60 * 60 * 1000)
  expect(readdirSync(dir).filter((n) => /^0/.test(n))).toHaveLength(5)
  pruneBundles(dir, '0000000000000001', 2, 1_010 + 31 * 24 * 60 * 60 * 1000)
  expect(readdirSync(dir).sort()).toEqual(['.build-1-2', '0000000000000001', '0000000000000004', '000000000000000a', 'chunk-abc123.js', 'main.js', 'main.js.map', 'notes.txt'])
})

test('a running process keeps marking its bundle in use, so pruning never takes the bundle it runs from', async () => {
  const dir = join(root, 'marked')
  const bundle = join(dir, '0000000000000005')
  mkdirSync(bundle, { recursive: true })
  const timer = keepMarkedInUse(bundle, 30)
  try {
    expect(statSync(bundle).mtimeMs).toBeGreaterThan(Date.now() - 5_000)
    // Started long ago: the next mark brings it back to now.
    utimesSync(bundle, 1_000, 1_000)
    await Bun.sleep(100)
    expect(statSync(bundle).mtimeMs).toBeGreaterThan(Date.now() - 5_000)
    for (const other of ['0000000000000006', '0000000000000007']) mkdirSync(join(dir, other))
    pruneBundles(dir, '0000000000000006', 0, Date.now() + 29 * 24 * 60 * 60 * 1000)
    expect(readdirSync(dir).sort()).toEqual(['0000000000000005', '0000000000000006', '0000000000000007'])
  } finally {
    clearInterval(timer)
  }
  // Where the directory cannot be touched, no timer.
  expect(keepMarkedInUse(join(dir, 'missing'))).toBeUndefined()
})
