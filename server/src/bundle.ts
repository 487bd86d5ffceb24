/**
 * Which bundle `bun run start` runs: the one built from exactly the sources on disk. A bundle lives in a directory
 * named by its sources' fingerprint (a hash of each file's path and bytes), so sources that differ in any byte find
 * no bundle and build one. Timestamps cannot say this: an archive, `cp -a`, an image layer or a reproducible build
 * keeps each file's time from before, and a release unpacked over a newer build of an older one looked older than
 * that bundle and ran the old code. Nothing heavy is imported here.
 */
import { type Dirent, readdirSync, readFileSync, rmSync, statSync, utimesSync } from 'node:fs'
import { join } from 'node:path'

/**
 * What the bundle is built from, relative to the repository root: the sources, and what resolves their imports. A `*`
 * segment is every directory there: a plugin added beside the three (README, "Adding an ecosystem") is a source too,
 * and its edits must build a bundle of their own.
 */
export const BUNDLE_INPUTS = ['core/src', 'core/package.json', 'server/src', 'server/package.json', 'plugins/*/src', 'plugins/*/package.json', 'package.json', 'bun.lock']

/** A fingerprint directory's name: 16 hex digits of the sources' SHA-256. */
const FINGERPRINT = /^[0-9a-f]{16}$/

/** The fingerprint of the inputs under `root` (tests are not bundled, so they are left out). */
export function fingerprint(root: string, inputs: readonly string[] = BUNDLE_INPUTS): string {
  const hasher = new Bun.CryptoHasher('sha256')
  const add = (relative: string) => {
    const path = join(root, relative)
    const stat = statSync(path, { throwIfNoEntry: false })
    if (!stat) return
    if (stat.isDirectory()) {
      for (const entry of readdirSync(path).sort()) add(join(relative, entry))
      return
    }
    if (relative.endsWith('.test.ts')) return
    hasher.update(`${relative}\0${stat.size}\0`)
    hasher.update(readFileSync(path))
  }
  for (const input of inputs.flatMap((i) => expand(root, i))) add(input)
  return hasher.digest('hex').slice(0, 16)
}

/** `input` with each `*` segment replaced by every directory there (sorted, so the order never varies). */
function expand(root: string, input: string): string[] {
  const star = input.split('/').indexOf('*')
  if (star < 0) return [input]
  const parts = input.split('/')
  const parent = parts.slice(0, star).join('/')
  let dirs: Dirent[]
  try {
    dirs = readdirSync(join(root, parent), { withFileTypes: true })
  } catch {
    return []
  }
  return dirs
    .filter((d) => d.isDirectory() && d.name !== 'node_modules')
    .map((d) => d.name)
    .sort()
    .flatMap((name) => expand(root, [...parts.slice(0, star), name, ...parts.slice(star + 1)].join('/')))
}

/** How long a bundle no process has run from is kept, beyond the newest ones. */
const UNUSED_FOR_MS = 30 * 24 * 60 * 60 * 1000
/** How often a running process marks its bundle as in use: well inside `UNUSED_FOR_MS`. */
const MARK_EVERY_MS = 24 * 60 * 60 * 1000

/** Marks `dir` as in use now (its time), false where it may not be touched (a read-only image). */
export function markInUse(dir: string): boolean {
  try {
    utimesSync(dir, new Date(), new Date())
    return true
  } catch {
    return false
  }
}

/**
 * A process marks its bundle when it starts and then daily while it runs: a process loads some chunks only on first
 * use (viem's secp256k1 for the first EVM signature check, a Redis client, a wallet's rare paths), so a bundle is in
 * use for as long as any process runs from it, however long ago it started. The timer does not keep a process alive.
 */
export function keepMarkedInUse(dir: string, everyMs = MARK_EVERY_MS): Timer | undefined {
  if (!markInUse(dir)) return undefined
  return setInterval(() => markInUse(dir), everyMs).unref()
}

/**
 * Removes bundles of other sources that no process has run from for `UNUSED_FOR_MS`, all but the newest `keep`
 * (keepMarkedInUse). A bundle removed under a process running from it failed what it loads on first use (an audit:
 * every EVM sign-in then read as a bad signature). Files of the flat layout earlier releases wrote are left alone. Only
 * names this module writes are touched: BUNDLE_DIR may be a directory that holds other files.
 */
export function pruneBundles(dir: string, current: string, keep = 2, now = Date.now()): void {
  const others = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && FINGERPRINT.test(e.name) && e.name !== current)
    .map((e) => ({ name: e.name, time: statSync(join(dir, e.name), { throwIfNoEntry: false })?.mtimeMs ?? 0 }))
    .sort((a, b) => b.time - a.time)
  for (const old of others.slice(keep)) if (now - old.time > UNUSED_FOR_MS) rmSync(join(dir, old.name), { recursive: true, force: true })
}
