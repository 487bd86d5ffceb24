/**
 * Cold start of `bun run start` on the embedded default (fresh DATA_DIR: migrations and the demo
 * organization included) to its first answered request, and its idle memory once ready (chain
 * plugins loaded); beside the same figures for a hello-world Elysia server in the same run. Also the
 * first answer of a real API call (membership check with the key of an organization the CLI made in
 * the store before the start), which needs the EVM plugin. Targets: first answer under 300 ms, idle
 * memory under 150 MiB.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..')
const RUNS = Number(process.env.RUNS ?? 5)

function treeRssKiB(pid: number): number {
  let total = 0
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    total += Number(status.match(/VmRSS:\s+(\d+)/)?.[1] ?? 0)
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const children = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim()
      for (const child of children ? children.split(' ') : []) total += treeRssKiB(Number(child))
    }
  } catch {}
  return total
}

async function freePort(): Promise<number> {
  const s = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = s.port!
  s.stop(true)
  return port
}

/** Polls until `url` answers 200; the time since `since`, or NaN after 20 s. */
async function until(url: string, since: number, headers: Record<string, string> = {}): Promise<number> {
  while (performance.now() - since < 20_000) {
    try {
      if ((await fetch(url, { headers })).ok) return performance.now() - since
    } catch {}
    await Bun.sleep(2)
  }
  return NaN
}

interface Run {
  firstMs: number
  apiMs: number
  readyMs: number
  rssMiB: number
}

/**
 * One cold start: its first answer, readiness and idle memory; with `apiKey`, the first answer of a real API call
 * too (whose EVM plugin the request loads itself if the warm-up has not yet).
 */
async function coldStart(cmd: string[], env: Record<string, string>, measure: { ready: boolean; apiKey?: string }): Promise<Run> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const started = performance.now()
  const proc = Bun.spawn(cmd, { cwd: ROOT, env: { ...process.env, ...env, PORT: String(port), LOG_REQUESTS: '0' }, stdout: 'ignore', stderr: 'ignore' })
  const firstMs = await until(`${base}/healthz`, started)
  const apiMs = measure.apiKey ? await until(`${base}/v2/membership/?address=0x000000000000000000000000000000000000dEaD`, started, { 'x-api-key': measure.apiKey }) : NaN
  const readyMs = measure.ready ? await until(`${base}/readyz`, started) : NaN
  await Bun.sleep(500) // settle, then read idle memory
  const rssMiB = treeRssKiB(proc.pid) / 1024
  proc.kill('SIGTERM')
  await proc.exited
  return { firstMs, apiMs, readyMs, rssMiB }
}

/** A key for the API call: an organization made by the CLI in `dir` (the demo is printed only once the plugins load). */
async function organizationKey(dir: string): Promise<string> {
  const proc = Bun.spawn([process.execPath, 'run', 'cli', 'org', 'create', '--name', 'Bench'], { cwd: ROOT, env: { ...process.env, DATA_DIR: dir }, stdout: 'pipe', stderr: 'inherit' })
  const out = await new Response(proc.stdout).text()
  if ((await proc.exited) !== 0) throw new Error('org create failed')
  return out.match(/publishableKey: (pk_live_\w+)/)![1]!
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const summary = (runs: Run[]) => ({
  firstMs: median(runs.map((r) => r.firstMs)),
  apiMs: median(runs.map((r) => r.apiMs)),
  readyMs: median(runs.map((r) => r.readyMs)),
  rssMiB: median(runs.map((r) => r.rssMiB)),
})

// Build the server bundle once, as the first `bun run start` after an install or an edit does.
const warm = mkdtempSync(join(tmpdir(), 'earn-bench-'))
await coldStart([process.execPath, 'run', 'start'], { DATA_DIR: warm }, { ready: false })
rmSync(warm, { recursive: true, force: true })

const earn: Run[] = []
const hello: Run[] = []
for (let i = 0; i < RUNS; i++) {
  const dir = mkdtempSync(join(tmpdir(), 'earn-bench-'))
  const fresh = await coldStart([process.execPath, 'run', 'start'], { DATA_DIR: dir }, { ready: true })
  rmSync(dir, { recursive: true, force: true })
  // The API call's start: on a store the CLI has made (and migrated) with an organization whose key it uses.
  const keyed = mkdtempSync(join(tmpdir(), 'earn-bench-'))
  const { apiMs } = await coldStart([process.execPath, 'run', 'start'], { DATA_DIR: keyed }, { ready: false, apiKey: await organizationKey(keyed) })
  rmSync(keyed, { recursive: true, force: true })
  earn.push({ ...fresh, apiMs })
  hello.push(await coldStart([process.execPath, join(import.meta.dir, 'hello.ts')], {}, { ready: false }))
}

const e = summary(earn)
const h = summary(hello)
console.log(`startup bench (${RUNS} runs, medians; from spawning \`bun run start\` on a fresh DATA_DIR)`)
console.log(`  earn api     first answer ${e.firstMs.toFixed(0)} ms   first API answer ${e.apiMs.toFixed(0)} ms   ready ${e.readyMs.toFixed(0)} ms   idle RSS ${e.rssMiB.toFixed(1)} MiB`)
console.log(`  hello elysia first answer ${h.firstMs.toFixed(0)} ms   idle RSS ${h.rssMiB.toFixed(1)} MiB`)
console.log(`  ratio to hello-world: first answer ${(e.firstMs / h.firstMs).toFixed(2)}x, memory ${(e.rssMiB / h.rssMiB).toFixed(2)}x`)
console.log(`  targets: first answer < 300 ms ${e.firstMs < 300 ? 'met' : 'MISSED'}, idle memory < 150 MiB ${e.rssMiB < 150 ? 'met' : 'MISSED'}`)
