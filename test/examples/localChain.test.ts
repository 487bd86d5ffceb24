/**
 * examples/local-chain.ts, run as an operator runs it: a stop by signal, Ctrl-C's or a supervisor's, stops its chains.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'

setDefaultTimeout(60_000)

const answers = (url: string) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}' }).then(
    (r) => r.ok,
    () => false,
  )

test.each(['SIGINT', 'SIGTERM', 'SIGHUP'] as const)('%s stops both chains: its anvil answers no more', async (signal) => {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, '../../examples/local-chain.ts')], { stdout: 'pipe', stderr: 'inherit' })
  let printed = ''
  const reader = child.stdout.getReader()
  while (!printed.includes('Ctrl-C')) {
    const { value, done } = await reader.read()
    if (done) break
    printed += new TextDecoder().decode(value)
  }
  const anvil = /anvil \(chain \d+\) at (http:\/\/\S+),/.exec(printed)?.[1]
  expect(anvil, printed).toBeDefined()
  expect(await answers(anvil!)).toBe(true)
  child.kill(signal)
  expect(await child.exited).toBe(0)
  // Under SIGTERM the anvil had been left running, orphaned, holding its port.
  expect(await answers(anvil!)).toBe(false)
})

test('a signal while the chains are still starting leaves no anvil behind', async () => {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, '../../examples/local-chain.ts')], { stdout: 'ignore', stderr: 'inherit' })
  // Its anvil, as soon as it is spawned (long before the script prints anything).
  let anvil: number | undefined
  for (let i = 0; i < 400 && anvil === undefined; i++) {
    const found = Bun.spawnSync(['pgrep', '-P', String(child.pid), 'anvil']).stdout.toString().trim()
    if (found) anvil = Number(found.split('\n')[0])
    else await Bun.sleep(10)
  }
  expect(anvil).toBeDefined()
  // Still starting: its chain not up, nothing deployed.
  await Bun.sleep(200)
  child.kill('SIGTERM')
  await child.exited
  // Running or sleeping, not gone or a zombie waiting to be reaped.
  const alive = () => /^[RSD]/.test(Bun.spawnSync(['ps', '-o', 'stat=', '-p', String(anvil)]).stdout.toString().trim())
  for (let i = 0; i < 100 && alive(); i++) await Bun.sleep(20)
  // Before the handlers were installed first, bun died by the signal and its anvil ran on, reparented to init.
  expect(alive()).toBe(false)
})
