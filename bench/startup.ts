/**
 * Cold start of `bun run start` on the embedded default (fresh DATA_DIR: migrations and the demo
 * organization included) to its first answered request, and its idle memory; beside the same
 * figures for a hello-world Elysia server in the same run. Targets: under 300 ms, under 150 MiB.
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

async function coldStart(cmd: string[], env: Record<string, string>) {
  const port = await freePort()
  const started = performance.now()
  const proc = Bun.spawn(cmd, { cwd: ROOT, env: { ...process.env, ...env, PORT: String(port), LOG_REQUESTS: '0' }, stdout: 'ignore', stderr: 'ignore' })
  const url = `http://127.0.0.1:${port}/healthz`
  let firstMs = NaN
  while (performance.now() - started < 20_000) {
    try {
      const r = await fetch(url)
      if (r.ok) {
        firstMs = performance.now() - started
        break
      }
    } catch {}
    await Bun.sleep(2)
  }
  await Bun.sleep(1000) // settle, then read idle memory
  const rssMiB = treeRssKiB(proc.pid) / 1024
  proc.kill('SIGTERM')
  await proc.exited
  return { firstMs, rssMiB }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const earn: { firstMs: number; rssMiB: number }[] = []
const hello: { firstMs: number; rssMiB: number }[] = []
for (let i = 0; i < RUNS; i++) {
  const dir = mkdtempSync(join(tmpdir(), 'earn-bench-'))
  earn.push(await coldStart([process.execPath, 'run', 'start'], { DATA_DIR: dir }))
  rmSync(dir, { recursive: true, force: true })
  hello.push(await coldStart([process.execPath, join(import.meta.dir, 'hello.ts')], {}))
}

const e = { firstMs: median(earn.map((r) => r.firstMs)), rssMiB: median(earn.map((r) => r.rssMiB)) }
const h = { firstMs: median(hello.map((r) => r.firstMs)), rssMiB: median(hello.map((r) => r.rssMiB)) }
console.log(`startup bench (${RUNS} runs, medians; cold start = spawn of \`bun run start\` on a fresh DATA_DIR to the first 200)`)
console.log(`  earn api     first answer ${e.firstMs.toFixed(0)} ms   idle RSS ${e.rssMiB.toFixed(1)} MiB`)
console.log(`  hello elysia first answer ${h.firstMs.toFixed(0)} ms   idle RSS ${h.rssMiB.toFixed(1)} MiB`)
console.log(`  ratio to hello-world: start ${(e.firstMs / h.firstMs).toFixed(2)}x, memory ${(e.rssMiB / h.rssMiB).toFixed(2)}x`)
console.log(`  targets: start < 300 ms ${e.firstMs < 300 ? 'met' : 'MISSED'}, memory < 150 MiB ${e.rssMiB < 150 ? 'met' : 'MISSED'}`)
