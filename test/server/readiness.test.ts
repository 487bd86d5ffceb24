/** /readyz asks every configured chain, through each plugin's health check. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { evmClientFromPublicClients } from '@earn/plugin-evm'
import { createPublicClient, http } from 'viem'
import { closedPortUrl, startAnvil, type Anvil } from '../chains/evm.ts'
import { createHarness } from '../harness.ts'

let anvil: Anvil
beforeAll(async () => {
  anvil = await startAnvil()
})
afterAll(() => anvil.stop())

describe('readiness and chains', () => {
  test('a configured chain that answers is ok; one that does not makes the server unready', async () => {
    const up = await createHarness({ clients: { evm: evmClientFromPublicClients({ [anvil.chainId]: anvil.publicClient }) } })
    const ready = await up.get('/readyz', { key: null })
    expect(ready.status).toBe(200)
    expect(ready.body.checks[`chain:evm:${anvil.chainId}`]).toBe('ok')
    await up.close()

    const deadRpc = await closedPortUrl()
    const down = await createHarness({
      clients: { evm: evmClientFromPublicClients({ '8453': createPublicClient({ transport: http(deadRpc, { retryCount: 0 }) }) }) },
    })
    const unready = await down.get('/readyz', { key: null })
    expect(unready.status).toBe(503)
    expect(unready.body.status).toBe('unavailable')
    expect(unready.body.checks['chain:evm:8453']).toStartWith('unavailable')
    expect(unready.text).not.toContain(deadRpc)
    await down.close()
  })

  test('an RPC that serves another chain than configured is not ready', async () => {
    const wrong = await createHarness({ clients: { evm: evmClientFromPublicClients({ '1': anvil.publicClient }) } })
    const r = await wrong.get('/readyz', { key: null })
    expect(r.status).toBe(503)
    expect(r.body.checks['chain:evm:1']).toBe(`unavailable: the RPC serves chain ${anvil.chainId}`)
    await wrong.close()
  })
})
