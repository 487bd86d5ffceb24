/** Server processes for benches: the tests' spawner (ready when a process logs its listening URL). */
import { readFileSync } from 'node:fs'
import { spawnListening, type ServerProcess } from '../test/process.ts'

export type Spawned = Pick<ServerProcess, 'url' | 'pid' | 'stop'>

// USER_HZ: 100 on every Linux build this runs on (sysconf is not reachable from Bun without FFI).
const CLOCK_TICKS = 100

/** CPU milliseconds (user + system, all threads) a process has used so far, from /proc (Linux). */
export function cpuMs(pid: number): number {
  // The fields after the command name (which may hold spaces, so split after its closing parenthesis).
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  const ticks = Number(fields[11]) + Number(fields[12]) // utime, stime
  return (ticks * 1000) / CLOCK_TICKS
}
/**
 * Connections the kernel has dropped because a listen queue was full (TcpExt ListenOverflows, Linux). A dropped
 * connection's SYN is sent again after ~1 s, which shows as a one-second request in a bench.
 */
export function listenOverflows(): number {
  const [names, values] = readFileSync('/proc/net/netstat', 'utf8').split('\n')
  return Number(values!.split(' ')[names!.split(' ').indexOf('ListenOverflows')])
}

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
