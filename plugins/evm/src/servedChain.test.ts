import { afterAll, beforeAll, expect, test } from 'bun:test'
import { InvalidArgumentError, UnavailableError } from '@earn/core'
import { recordingProxy } from '../../../test/chains/evm.ts'
import { connect } from './client.ts'
import { startEarnChain, type EarnChain } from './fixtures.ts'
import { evm } from './index.ts'
import { SERVED_CHECK_MS } from './servedChain.ts'

let chain: EarnChain
beforeAll(async () => {
  chain = await startEarnChain()
})
afterAll(() => chain?.anvil.stop())

const read = (client: ReturnType<typeof connect>) => evm.balance.read(client, { chainId: chain.anvil.chainId, owner: `0x${'11'.repeat(20)}`, token: 'native' })

test("a chain's identity is asked once for many reads, again in the background before it lapses, and first once it has", async () => {
  const proxy = recordingProxy(chain.anvil.url, { delayMs: (call) => (call.method === 'eth_chainId' ? 300 : 0) })
  try {
    const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${proxy.url}` })
    // Cold: the reads wait for the one ask, together.
    await Promise.all(Array.from({ length: 20 }, () => read(client)))
    expect(proxy.count('eth_chainId')).toBe(1)
    await read(client)
    expect(proxy.count('eth_chainId')).toBe(1)
    // Past 20 s: asked again, in the background (this read is not held for it; here the two share one JSON-RPC batch,
    // whose answer the proxy holds back as a whole, so its time says nothing).
    client.state.servedChecked.set(chain.anvil.chainId, performance.now() - 25_000)
    await read(client)
    await Bun.sleep(400)
    expect(proxy.count('eth_chainId')).toBe(2)
    expect(performance.now() - client.state.servedChecked.get(chain.anvil.chainId)!).toBeLessThan(1_000)
    // Lapsed: the read waits for the answer.
    client.state.servedChecked.set(chain.anvil.chainId, performance.now() - SERVED_CHECK_MS)
    const started = performance.now()
    await read(client)
    expect(performance.now() - started).toBeGreaterThanOrEqual(290)
    expect(proxy.count('eth_chainId')).toBe(3)
  } finally {
    await proxy.stop()
  }
})

test('an RPC serving another chain is a 503 naming the chain, and the read is never sent', async () => {
  const proxy = recordingProxy(chain.anvil.url)
  try {
    const client = connect({ EVM_RPC_URLS: `8453=${proxy.url}` })
    const e = await evm.balance.read(client, { chainId: '8453', owner: `0x${'11'.repeat(20)}`, token: 'native' }).catch((x: unknown) => x)
    expect(e).toBeInstanceOf(UnavailableError)
    expect((e as UnavailableError).message).toBe(`the RPC configured for EVM chain 8453 serves chain ${chain.anvil.chainId}`)
    expect(proxy.requests.flat().filter((m) => m !== 'eth_chainId')).toEqual([])
  } finally {
    await proxy.stop()
  }
})

test('a malformed transaction hash is a 400 while the chain does not answer, before its identity is asked', async () => {
  const proxy = recordingProxy(chain.anvil.url)
  await proxy.stop()
  // Nothing listens at the proxy's address any more: the chain does not answer.
  const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${proxy.url}` })
  const e = await evm.transactions.readTransfers(client, { chainId: chain.anvil.chainId, txHash: '0x1234' }).catch((x: unknown) => x)
  expect(e).toBeInstanceOf(InvalidArgumentError)
  expect((e as InvalidArgumentError).context).toEqual({ txHash: 'must be 0x followed by 64 hexadecimal characters' })
  // A well-formed one still needs the chain: a 503.
  const down = await evm.transactions.readTransfers(client, { chainId: chain.anvil.chainId, txHash: `0x${'ab'.repeat(32)}` }).catch((x: unknown) => x)
  expect(down).toBeInstanceOf(UnavailableError)
})
