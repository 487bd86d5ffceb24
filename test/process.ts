/** Real server and CLI processes, for tests that must cross a process boundary. */
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..')

export interface ServerProcess {
  url: string
  pid: number
  output(): string
  stop(signal?: NodeJS.Signals): Promise<number>
}

/**
 * Spawns any server command (ours, a bench baseline) and resolves once it logs its listening URL.
 * PORT=0 and LOG_REQUESTS=0 unless `env` says otherwise.
 */
export async function spawnListening(
  cmd: string[],
  env: Record<string, string>,
  options: { cwd?: string; timeoutMs?: number } = {},
): Promise<ServerProcess> {
  const proc = Bun.spawn(cmd, {
    cwd: options.cwd ?? ROOT,
    env: { ...process.env, PORT: '0', LOG_REQUESTS: '0', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  let out = ''
  const decoder = new TextDecoder()
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const reader = stream.getReader()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      out += decoder.decode(value, { stream: true })
    }
  }
  void pump(proc.stdout)
  void pump(proc.stderr)
  const timeoutMs = options.timeoutMs ?? 20_000
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const m = out.match(/"msg":"listening","url":"([^"]+)"/)
    if (m) {
      return {
        url: m[1]!,
        pid: proc.pid,
        output: () => out,
        async stop(signal = 'SIGTERM') {
          proc.kill(signal)
          return proc.exited
        },
      }
    }
    if (proc.exitCode !== null) throw new Error(`${cmd.join(' ')} exited with ${proc.exitCode}:\n${out}`)
    await Bun.sleep(20)
  }
  proc.kill('SIGKILL')
  throw new Error(`${cmd.join(' ')} did not start within ${timeoutMs} ms:\n${out}`)
}

/** The server's output once it matches `pattern` (a line printed after the listening one), or as it is after `timeoutMs`. */
export async function outputMatching(server: ServerProcess, pattern: RegExp, timeoutMs = 5_000): Promise<string> {
  const deadline = Date.now() + timeoutMs
  while (!pattern.test(server.output()) && Date.now() < deadline) await Bun.sleep(20)
  return server.output()
}

/** The output once the first start's demo banner is printed (once the chain plugins have loaded: the demo is made then). */
export const withDemoBanner = (server: ServerProcess) => outputMatching(server, /distributor id/, 20_000)

/** Our server from its sources, as the tests run it. */
export const startServer = (env: Record<string, string>, timeoutMs = 20_000) =>
  spawnListening([process.execPath, join(ROOT, 'server/src/main.ts')], env, { timeoutMs })

export async function runCli(args: string[], env: Record<string, string>) {
  const proc = Bun.spawn([process.execPath, join(ROOT, 'server/src/cli.ts'), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  return { code, stdout, stderr, json: () => JSON.parse(stdout) }
}
