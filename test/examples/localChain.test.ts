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
