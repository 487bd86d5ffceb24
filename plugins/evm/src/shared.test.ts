/** The preflight hot path: concurrent reads batched, identical ones shared, builds without per-request estimates. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { UnavailableError } from '@earn/core'
import { createPublicClient, decodeFunctionData, http, multicall3Abi, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { closedPortUrl, mintToken, recordingProxy } from '../../../test/chains/evm.ts'
import { read } from './balance.ts'
import { connect, evmClientFromPublicClients } from './client.ts'
import { allowance } from './erc20.ts'
import { startEarnChain, type EarnChain } from './fixtures.ts'
import { share } from './shared.ts'
import { build } from './transactions.ts'

let chain: EarnChain
beforeAll(async () => {
  chain = await startEarnChain()
})
afterAll(() => chain?.anvil.stop())

const randomOwner = () => privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address

/** A client with no batching at all, so every read that is not shared is its own HTTP request. */
function unbatched(url: string) {
  return evmClientFromPublicClients({ [chain.anvil.chainId]: createPublicClient({ chain: chain.anvil.chain, transport: http(url) }) })
}

describe('batching', () => {
  test('64 concurrent balance reads for distinct owners make at most 3 HTTP requests', async () => {
    const owners = Array.from({ length: 64 }, randomOwner)
    for (const [i, owner] of owners.entries()) if (i % 16 === 0) await mintToken(chain.anvil, chain.asset, owner, BigInt(i + 1))
    const proxy = recordingProxy(chain.anvil.url)
    try {
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${proxy.url}` })
      const balances = await Promise.all(owners.map((owner) => read(client, { chainId: chain.anvil.chainId, owner, token: chain.asset })))
      expect(balances).toEqual(owners.map((_, i) => (i % 16 === 0 ? BigInt(i + 1) : 0n)))
      expect(client.rpcRequests(chain.anvil.chainId)).toBeLessThanOrEqual(3)
      expect(client.rpcRequests(chain.anvil.chainId)).toBe(proxy.requests.length)
      // One Multicall3 call carried all 64, after the one-time check that the chain has Multicall3 where it usually is.
      expect(proxy.requests.flat()).toEqual(['eth_getCode', 'eth_call'])
    } finally {
      await proxy.stop()
    }
  })

  test('reads from separate tasks (separate requests to the server) still share a Multicall3 call', async () => {
    const proxy = recordingProxy(chain.anvil.url)
    try {
      // The batch waits the public client's multicall wait for later reads: connect() sets MULTICALL_WAIT_MS (1 ms),
      // too short to rely on in a test on a loaded machine, so this client waits longer (50 ms was once passed by four
      // macrotasks on the CI machine).
      const publicClient = createPublicClient({ chain: chain.anvil.chain, transport: http(proxy.url), batch: { multicall: { wait: 500 } } })
      const client = evmClientFromPublicClients({ [chain.anvil.chainId]: publicClient })
      const reads = []
      for (let i = 0; i < 4; i++) {
        reads.push(read(client, { chainId: chain.anvil.chainId, owner: randomOwner(), token: chain.asset }))
        // A macrotask apart, as two HTTP requests to the server are.
        await new Promise((resolve) => setImmediate(resolve))
      }
      expect(await Promise.all(reads)).toEqual([0n, 0n, 0n, 0n])
      expect(proxy.count('eth_call')).toBe(1)
    } finally {
      await proxy.stop()
    }
  })
})

describe('identical reads waiting in one batch share one sub-call', () => {
  /** A client whose Multicall3 batch waits 50 ms: long enough, on a loaded machine, for the reads a test makes. */
  const batched = (url: string) =>
    evmClientFromPublicClients({ [chain.anvil.chainId]: createPublicClient({ chain: chain.anvil.chain, transport: http(url), batch: { multicall: { wait: 50 } } }) })
  /** The sub-calls of each aggregate3 eth_call the proxy saw. */
  const subCalls = (proxy: ReturnType<typeof recordingProxy>) =>
    proxy.calls
      .filter((c) => c.method === 'eth_call')
      .map((c) => decodeFunctionData({ abi: multicall3Abi, data: (c.params[0] as { data: Hex }).data }).args[0]!.length)

  test('20 identical concurrent balance reads are one sub-call of one request; the next read asks again', async () => {
    const owner = randomOwner()
    await mintToken(chain.anvil, chain.asset, owner, 7n)
    const proxy = recordingProxy(chain.anvil.url)
    try {
      const client = batched(proxy.url)
      const p = { chainId: chain.anvil.chainId, owner, token: chain.asset }
      expect(await Promise.all(Array.from({ length: 20 }, () => read(client, p)))).toEqual(Array(20).fill(7n))
      expect(subCalls(proxy)).toEqual([1])
      expect(client.state.inFlight.size).toBe(0)
      // Nothing settled is kept: a later read sees the chain as it is now.
      await mintToken(chain.anvil, chain.asset, owner, 1n)
      expect(await read(client, p)).toBe(8n)
      expect(subCalls(proxy)).toEqual([1, 1])
    } finally {
      await proxy.stop()
    }
  })

  test('native and token reads, and different owners, are not confused', async () => {
    const proxy = recordingProxy(chain.anvil.url)
    try {
      const client = batched(proxy.url)
      const [a, b] = [randomOwner(), randomOwner()]
      await mintToken(chain.anvil, chain.asset, b, 5n)
      const reads = await Promise.all([
        read(client, { chainId: chain.anvil.chainId, owner: a, token: chain.asset }),
        read(client, { chainId: chain.anvil.chainId, owner: b, token: chain.asset }),
        read(client, { chainId: chain.anvil.chainId, owner: b, token: 'native' }),
        read(client, { chainId: chain.anvil.chainId, owner: b, token: chain.asset.toLowerCase() }),
      ])
      expect(reads).toEqual([0n, 5n, 0n, 5n])
      // a's and b's token balances (b's asked twice, once) in ours; the coin's balance in viem's own Multicall3 call.
      expect(subCalls(proxy).toSorted()).toEqual([1, 2])
    } finally {
      await proxy.stop()
    }
  })

  test('the allowance read of a build shares the same path', async () => {
    const owner = randomOwner()
    const proxy = recordingProxy(chain.anvil.url)
    try {
      const client = batched(proxy.url)
      const p = { chainId: chain.anvil.chainId, token: chain.asset, owner, spender: chain.vault, field: 'tokenIn' } as const
      expect(await Promise.all(Array.from({ length: 10 }, () => allowance(client, p)))).toEqual(Array(10).fill(0n))
      expect(subCalls(proxy)).toEqual([1])
    } finally {
      await proxy.stop()
    }
  })

  test('without a batcher every read leaves at once, so none is joined', async () => {
    const proxy = recordingProxy(chain.anvil.url)
    try {
      const client = unbatched(proxy.url)
      const p = { chainId: chain.anvil.chainId, owner: randomOwner(), token: chain.asset }
      expect(await Promise.all(Array.from({ length: 5 }, () => read(client, p)))).toEqual(Array(5).fill(0n))
      expect(proxy.count('eth_call')).toBe(5)
    } finally {
      await proxy.stop()
    }
  })

  test('a failure reaches every sharer once, and is not kept either', async () => {
    const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${await closedPortUrl()}` })
    const p = { chainId: chain.anvil.chainId, owner: randomOwner(), token: chain.asset }
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => read(client, p)))
    for (const r of results) expect(r.status === 'rejected' && r.reason).toBeInstanceOf(UnavailableError)
    expect(client.state.inFlight.size).toBe(0)
    let runs = 0
    expect(await share(client, 'k', async () => ++runs)).toBe(1)
    expect(await share(client, 'k', async () => ++runs)).toBe(2)
  })
})

describe('the build hot path', () => {
  test('64 concurrent builds measure gas once (one simulation), then never again, in a few HTTP requests', async () => {
    const proxy = recordingProxy(chain.anvil.url)
    try {
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${proxy.url}` })
      const owners: PrivateKeyAccount[] = []
      // One at a time: each mints from the deployer, whose nonces must not race.
      for (let i = 0; i < 64; i++) owners.push(await chain.user(1_000_000n))
      const burst = () => Promise.all(owners.map((owner) => build(client, chain.deposit({ owner, amount: 1_000_000n }))))

      const first = await burst()
      for (const steps of first) expect(steps.map((s) => s.type)).toEqual(['approve', 'deposit'])
      expect(proxy.count('eth_simulateV1')).toBe(1)
      expect(proxy.count('eth_estimateGas')).toBe(0)
      const sources = first.map((steps) => steps.map((s) => s.metadata?.gasLimitSource).join(','))
      expect(sources.filter((s) => s === 'estimated,estimated')).toHaveLength(1)
      expect(sources.filter((s) => s === 'measured-once,measured-once')).toHaveLength(63)

      const before = proxy.requests.length
      const second = await burst()
      expect(second.every((s) => s.every((step) => step.metadata?.gasLimitSource === 'measured-once'))).toBe(true)
      expect(proxy.count('eth_simulateV1') + proxy.count('eth_estimateGas')).toBe(1)
      // 64 allowances plus the token and vault names: one Multicall3 call.
      expect(proxy.requests.length - before).toBeLessThanOrEqual(3)
      // Only reads: whether they left in one aggregate3 call or two depends on how fast the builds reach them.
      expect(new Set(proxy.requests.slice(before).flat())).toEqual(new Set(['eth_call']))
    } finally {
      await proxy.stop()
    }
  })
})
