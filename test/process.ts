/** Real server and CLI processes, for tests that must cross a process boundary. */
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..')

export interface ServerProcess {
  url: string
  output(): string
  stop(signal?: NodeJS.Signals): Promise<number>
}

export async function startServer(env: Record<string, string>, timeoutMs = 20_000): Promise<ServerProcess> {
  const proc = Bun.spawn([process.execPath, join(ROOT, 'server/src/main.ts')], {
    cwd: ROOT,
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
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const m = out.match(/"msg":"listening","url":"([^"]+)"/)
    if (m) {
      return {
        url: m[1]!,
        output: () => out,
        async stop(signal = 'SIGTERM') {
          proc.kill(signal)
          return proc.exited
        },
      }
    }
    if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode}:\n${out}`)
    await Bun.sleep(20)
  }
  proc.kill('SIGKILL')
  throw new Error(`server did not start within ${timeoutMs} ms:\n${out}`)
}

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
