/**
 * `bun run start`: runs the server from a bundle of its own sources, built when none was built from these sources
 * (bundle.ts). One bundled file loads in about half the time of the several hundred modules it replaces, and the
 * cold start is what a restarted or scaled-out process pays. Nothing heavy is imported here.
 */
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fingerprint, keepMarkedInUse, pruneBundles } from './bundle.ts'

const ROOT = join(import.meta.dir, '..', '..')
const OUT_DIR = bundleDir(process.env.BUNDLE_DIR)

/** `BUNDLE_DIR`, or the default under node_modules; one of spaces stops the start, as a `DATA_DIR` of spaces does. */
function bundleDir(raw: string | undefined): string {
  if (raw === undefined || raw === '') return join(ROOT, 'node_modules', '.cache', 'earn-server')
  if (raw.trim() === '') {
    console.error('configuration error: BUNDLE_DIR: is only whitespace; unset it for the default, or name a directory')
    process.exit(1)
  }
  return resolve(raw)
}

/**
 * Several processes may start at once with no bundle for their sources (a scaled-out deployment after an upgrade).
 * Each builds in a directory of its own and renames it to the fingerprint's: a rename is atomic, so whoever finds the
 * bundle finds it whole, and a process that finds the name taken leaves the other's bundle (built from the same
 * sources) in place.
 */
async function build(target: string, name: string) {
  const staging = join(OUT_DIR, `.build-${process.pid}-${Date.now()}`)
  mkdirSync(staging, { recursive: true })
  try {
    const result = await Bun.build({
      entrypoints: [join(ROOT, 'server/src/main.ts')],
      outdir: staging,
      target: 'bun',
      // Identifiers kept: errors are told apart by their class's name (postgres.js's `PostgresError`, which the store
      // reads to answer 503 busy or unwritable), and logs name them; mangled, they were `Be` and the answers 500 under
      // `bun run start` alone (an audit). Bun's `keepNames` left the class renamed; ~40% more code, no slower start.
      // Bun still suffixes a top-level name two modules share (our InvalidAddressError is viem's name too: `…2` in a
      // log line); nothing tells errors apart by such a name.
      minify: { whitespace: true, syntax: true, identifiers: false },
      // Chain plugins become chunks of their own, parsed only when an ecosystem is first used.
      splitting: true,
      sourcemap: 'linked',
    })
    if (!result.success) {
      for (const log of result.logs) console.error(log)
      process.exit(1)
    }
    try {
      renameSync(staging, target)
    } catch (e) {
      const code = (e as { code?: unknown }).code
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw e
      // Taken: by another process's whole bundle, or by a directory someone emptied of it, which this one replaces.
      if (!existsSync(join(target, 'main.js'))) {
        rmSync(target, { recursive: true, force: true })
        renameSync(staging, target)
      }
    }
    try {
      pruneBundles(OUT_DIR, name)
    } catch {
      // Old bundles left behind take room, nothing else: not worth failing a start over.
    }
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
}

let bundle = ''
try {
  const name = fingerprint(ROOT)
  const target = join(OUT_DIR, name)
  bundle = join(target, 'main.js')
  if (!existsSync(bundle)) await build(target, name)
  // Marks the bundle as in use (its directory's time), now and daily: pruning keeps what a process runs from. Where it
  // may not be touched (a read-only image), pruning goes by when it was built.
  keepMarkedInUse(target)
} catch (e) {
  // A directory that cannot hold the bundle (not a directory, not writable): one line naming the variable, no stack.
  const code = (e as { code?: unknown } | null)?.code
  const message = e instanceof Error ? e.message.split('\n', 1)[0]! : String(e)
  // A file system error is the directory's (BUNDLE_DIR); a build error is the sources' or their dependencies'.
  const where = typeof code === 'string' ? ` in ${OUT_DIR} (BUNDLE_DIR)` : ''
  console.error(`startup error: building the server bundle${where}: ${message}${typeof code === 'string' && !message.includes(code) ? ` (${code})` : ''}`)
  // A failed build (a missing dependency: `bun install` not run) says what it could not resolve, one line each.
  for (const cause of e instanceof AggregateError ? e.errors : []) console.error(`  ${String(cause instanceof Error ? cause.message : cause).split('\n', 1)[0]}`)
  process.exit(1)
}

await import(bundle)
