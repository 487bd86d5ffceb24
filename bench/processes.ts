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
