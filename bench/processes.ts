/** Server processes for benches: spawned with an environment, ready when they log their listening URL. */
export interface Spawned {
  url: string
  stop(): Promise<void>
}

export async function spawnServer(cmd: string[], env: Record<string, string>, cwd: string): Promise<Spawned> {
  const proc = Bun.spawn(cmd, { cwd, env: { ...process.env, PORT: '0', LOG_REQUESTS: '0', ...env }, stdout: 'pipe', stderr: 'pipe' })
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
  const deadline = performance.now() + 20_000
  while (performance.now() < deadline) {
    const m = out.match(/"msg":"listening","url":"([^"]+)"/)
    if (m)
      return {
        url: m[1]!,
        async stop() {
          proc.kill('SIGTERM')
          await proc.exited
        },
      }
    if (proc.exitCode !== null) throw new Error(`${cmd.join(' ')} exited with ${proc.exitCode}:\n${out}`)
    await Bun.sleep(20)
  }
  proc.kill('SIGKILL')
  throw new Error(`${cmd.join(' ')} did not start:\n${out}`)
}

export async function runCli(args: string[], env: Record<string, string>, cwd: string): Promise<any> {
  const proc = Bun.spawn([process.execPath, 'server/src/cli.ts', ...args, '--json'], { cwd, env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'pipe' })
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  if (code !== 0) throw new Error(`cli ${args.join(' ')} failed: ${stderr}`)
  return JSON.parse(stdout)
}
