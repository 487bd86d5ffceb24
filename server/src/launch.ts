/**
 * `bun run start`: runs the server from a bundle of its own sources, rebuilt when a source is newer.
 * One bundled file loads in about half the time of the several hundred modules it replaces, and the
 * cold start is what a restarted or scaled-out process pays. Nothing heavy is imported here.
 */
import { mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'

const ROOT = join(import.meta.dir, '..', '..')
const OUT_DIR = process.env.BUNDLE_DIR ? resolve(process.env.BUNDLE_DIR) : join(ROOT, 'node_modules', '.cache', 'earn-server')
const BUNDLE = join(OUT_DIR, 'main.js')
const SOURCES = ['core/src', 'server/src', 'plugins/evm/src', 'plugins/solana/src', 'plugins/ton/src']
const INPUTS = ['package.json', 'bun.lock']

function newest(path: string): number {
  const stat = statSync(path, { throwIfNoEntry: false })
  if (!stat) return 0
  if (!stat.isDirectory()) return stat.mtimeMs
  let latest = stat.mtimeMs
  for (const entry of readdirSync(path)) latest = Math.max(latest, newest(join(path, entry)))
  return latest
}

function fresh(): boolean {
  const built = statSync(BUNDLE, { throwIfNoEntry: false })?.mtimeMs
  if (built === undefined) return false
  return [...SOURCES, ...INPUTS].every((p) => newest(join(ROOT, p)) < built)
}

/**
 * Several processes may start at once on a stale bundle (a scaled-out deployment after an upgrade). Each builds in a
 * directory of its own and then moves the files in, the chunks before the entry: a rename is atomic, so whoever finds
 * main.js finds it whole, with the chunks it names. Chunk names are content hashes, so builds of the same sources
 * replace each other's files with the same bytes, and a running process's older chunks stay where it loads them.
 */
async function build() {
  const staging = join(OUT_DIR, `.build-${process.pid}-${Date.now()}`)
  mkdirSync(staging, { recursive: true })
  try {
    const result = await Bun.build({
      entrypoints: [join(ROOT, 'server/src/main.ts')],
      outdir: staging,
      target: 'bun',
      minify: true,
      // Chain plugins become chunks of their own, parsed only when an ecosystem is first used.
      splitting: true,
      sourcemap: 'linked',
    })
    if (!result.success) {
      for (const log of result.logs) console.error(log)
      process.exit(1)
    }
    const files = readdirSync(staging).sort((a, b) => Number(a === 'main.js') - Number(b === 'main.js'))
    for (const file of files) renameSync(join(staging, file), join(OUT_DIR, file))
  } finally {
    rmSync(staging, { recursive: true, force: true })
  }
}

try {
  if (!fresh()) await build()
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

await import(BUNDLE)
