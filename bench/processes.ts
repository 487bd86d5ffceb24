/** Server processes for benches: the tests' spawner (ready when a process logs its listening URL). */
import { spawnListening, type ServerProcess } from '../test/process.ts'

export type Spawned = Pick<ServerProcess, 'url' | 'stop'>

export const spawnServer = (cmd: string[], env: Record<string, string>, cwd: string): Promise<Spawned> =>
  spawnListening(cmd, env, { cwd })

export async function runCli(args: string[], env: Record<string, string>, cwd: string): Promise<any> {
  const proc = Bun.spawn([process.execPath, 'server/src/cli.ts', ...args, '--json'], { cwd, env: { ...process.env, ...env }, stdout: 'pipe', stderr: 'pipe' })
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  if (code !== 0) throw new Error(`cli ${args.join(' ')} failed: ${stderr}`)
  return JSON.parse(stdout)
}

/**
 * Waits until the named /readyz checks of a server answer "ok": its chain plugins load in the background after
 * start ("ecosystems"), which would otherwise fall in a measured run; a Redis meter can start degraded ("meter").
 */
export async function waitForChecks(server: Spawned, names: string[], timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs
  let checks: Record<string, string> = {}
  for (;;) {
    checks = ((await (await fetch(server.url + '/readyz')).json()) as { checks: Record<string, string> }).checks
    if (names.every((n) => checks[n] === 'ok')) return
    if (Date.now() > deadline) throw new Error(`${server.url} not ready: ${JSON.stringify(checks)}`)
    await Bun.sleep(100)
  }
}
