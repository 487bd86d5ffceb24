import { describe, expect, test } from 'bun:test'
import { UnavailableError } from '@earn/core'
import { createPublicClient, http, parseAbi, type Address } from 'viem'
import { ALONE_IN_FLIGHT, connect, LOG_SCAN_BATCH, LOOKUP_BATCH, LOG_SCANS_IN_FLIGHT, LOOKUPS_IN_FLIGHT, DEPLOYLESS_BATCH_BYTES, MULTICALL3_ADDRESS, runsCallersCode, evmClientFromPublicClients, MULTICALL_BATCH_BYTES, MULTICALL_WAIT_MS } from './client.ts'
import { parseRpcUrls } from './env.ts'
import { evm } from './index.ts'
import { recordingProxy, startAnvil } from '../../../test/chains/evm.ts'
import { anotherServer } from '../../../test/anotherServer.ts'

describe('connect', () => {
  test('no EVM_RPC_URLS, or an empty one, means no chains', () => {
    for (const env of [{}, { EVM_RPC_URLS: '' }, { EVM_RPC_URLS: '  ' }]) {
      const client = connect(env)
      expect(client.chainIds).toEqual([])
      expect(client.publicClient('1')).toBeUndefined()
    }
  })

  test('makes one public client per configured chain, lazily, with batching on', () => {
    const client = connect({ EVM_RPC_URLS: '1=https://eth.example/v2/KEY, 8453=http://127.0.0.1:1,' })
    expect(client.chainIds).toEqual(['1', '8453'])
    const mainnet = client.publicClient('1')
    expect(mainnet).toBeDefined()
    expect(client.publicClient('1')).toBe(mainnet!)
    expect(mainnet!.chain?.id).toBe(1)
    // viem knows mainnet's Multicall3, so concurrent eth_calls fold into one.
    expect(mainnet!.chain?.contracts?.multicall3?.address).toBe('0xca11bde05977b3631167028862be2a173976ca11')
    expect(mainnet!.batch?.multicall).toEqual({ wait: MULTICALL_WAIT_MS, batchSize: MULTICALL_BATCH_BYTES, deployless: false })
    expect(mainnet!.transport.url).toBe('https://eth.example/v2/KEY')
    expect(client.publicClient('8453')!.chain?.id).toBe(8453)
    expect(client.publicClient('10')).toBeUndefined()
  })

  test('a chain viem does not know gets a bare definition with its id', () => {
    const c = connect({ EVM_RPC_URLS: '987654321=http://127.0.0.1:1' }).publicClient('987654321')
    expect(c?.chain?.id).toBe(987654321)
    expect(c?.chain?.contracts?.multicall3).toBeUndefined()
    // No Multicall3 address to trust there, so batched calls carry its code along.
    // At most 768 bytes of calls a batch, as viem counts them: init code is capped at 49,152 bytes.
    expect(c?.batch?.multicall).toMatchObject({ deployless: true, batchSize: DEPLOYLESS_BATCH_BYTES })
  })

  test.each([
    ['1', 'entry 1 is not chainId=url'],
    ['mainnet=https://eth.example', 'chain id must be a positive decimal integer'],
    ['0=https://eth.example', 'chain id must be a positive decimal integer'],
    ['1=https://a.example,1=https://b.example', 'chain 1 is listed twice'],
    ['1=not a url', 'is not a valid URL'],
    ['1=wss://eth.example', 'must be http or https'],
    // Two URLs joined with the wrong separator parse as one URL of an odd host.
    ['1=https://a.example;8453=https://b.example', 'the URL for chain 1 names no single host'],
    ['1=https://*.example', 'the URL for chain 1 names no single host'],
  ])('refuses EVM_RPC_URLS=%p, naming the variable', (value, text) => {
    expect(() => connect({ EVM_RPC_URLS: value })).toThrow(/EVM_RPC_URLS/)
    expect(() => connect({ EVM_RPC_URLS: value })).toThrow(text)
  })

  test('reads swap routers from EVM_SWAP_ROUTERS, canonical, per chain', () => {
    const router = '0x7a250d5630B4cF539739dF2C5dAcb4c659F2488D'
    const client = connect({ EVM_RPC_URLS: '1=https://eth.example,8453=https://base.example', EVM_SWAP_ROUTERS: `1=${router}` })
    expect(client.swapRouter('1')).toBe(router.toLowerCase() as Address)
    expect(client.swapRouter('8453')).toBeUndefined()
    expect(connect({ EVM_RPC_URLS: '1=https://eth.example' }).swapRouter('1')).toBeUndefined()
  })

  test.each([
    ['1=0x1234', 'the router for chain 1 is not an EVM address'],
    ['1', 'entry 1 is not chainId=router'],
    ['10=0x7a250d5630b4cf539739df2c5dacb4c659f2488d', 'names chain 10, which has no RPC in EVM_RPC_URLS'],
  ])('refuses EVM_SWAP_ROUTERS=%p, naming the variable', (value, text) => {
    const env = { EVM_RPC_URLS: '1=https://eth.example', EVM_SWAP_ROUTERS: value }
    expect(() => connect(env)).toThrow(/EVM_SWAP_ROUTERS/)
    expect(() => connect(env)).toThrow(text)
  })

  test('counts the HTTP requests it sends per chain, and no others', async () => {
    const client = connect({ EVM_RPC_URLS: '1=http://127.0.0.1:1' })
    expect(client.rpcRequests('1')).toBe(0)
    expect(client.rpcRequests('8453')).toBeUndefined()
    await client.publicClient('1')!.getChainId().catch(() => undefined)
    expect(client.rpcRequests('1')).toBeGreaterThanOrEqual(1)
  })

  test('two clients never share working state', () => {
    const env = { EVM_RPC_URLS: '1=https://eth.example' }
    expect(connect(env).state.gasMeasured).not.toBe(connect(env).state.gasMeasured)
    expect(connect(env).state.inFlight).not.toBe(connect(env).state.inFlight)
  })

  test('an error never repeats the URL, which may carry an API key', () => {
    expect(() => parseRpcUrls('1=https://user:secret@eth.example,x=https://secret.example')).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('secret') }),
    )
  })
})

describe('evmClientFromPublicClients', () => {
  test('serves exactly the clients it was given', () => {
    const anvil = createPublicClient({ transport: http('http://127.0.0.1:1') })
    const client = evmClientFromPublicClients({ '31337': anvil })
    expect(client.chainIds).toEqual(['31337'])
    expect(client.publicClient('31337')).toBe(anvil)
    expect(client.publicClient('1')).toBeUndefined()
    expect(client.rpcRequests('31337')).toBeUndefined()
  })

  test('takes swap routers as an option, checked like the variable', () => {
    const anvil = createPublicClient({ transport: http('http://127.0.0.1:1') })
    const router = '0x7a250d5630B4cF539739dF2C5dAcb4c659F2488D'
    expect(evmClientFromPublicClients({ '31337': anvil }, { swapRouters: { '31337': router } }).swapRouter('31337')).toBe(
      router.toLowerCase() as Address,
    )
    expect(() => evmClientFromPublicClients({ '31337': anvil }, { swapRouters: { '31337': 'nope' } })).toThrow(/not an EVM address/)
  })
})

describe('a node that sends its answer a byte at a time', () => {
  test('fails within the timeout (and its one retry) as unavailable, where viem alone waited for good', async () => {
    // Headers at once, then a space every 200 ms for as long as the request is read: viem's timeout ends at the headers.
    const node = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch() {
        let timer: Timer | undefined
        const body = new ReadableStream({
          start: (c) => void (timer = setInterval(() => c.enqueue(new TextEncoder().encode(' ')), 200)),
          cancel: () => clearInterval(timer),
        })
        return new Response(body, { headers: { 'content-type': 'application/json' } })
      },
    })
    try {
      const client = connect({ EVM_RPC_URLS: `31337=http://127.0.0.1:${node.port}`, EVM_RPC_TIMEOUT_MS: '1000' })
      const started = performance.now()
      const e = await evm.balance.read(client, { chainId: '31337', owner: `0x${'11'.repeat(20)}`, token: 'native' }).catch((x: unknown) => x)
      expect(e).toBeInstanceOf(UnavailableError)
      expect(performance.now() - started).toBeLessThan(4_000)
    } finally {
      await node.stop(true)
    }
  }, 20_000)
})

describe("the server's transport", () => {
  test('batches lookups sent in one tick, and sends what runs code a caller names in an HTTP request of its own', async () => {
    const anvil = await startAnvil()
    const proxy = recordingProxy(anvil.url)
    try {
      const publicClient = connect({ EVM_RPC_URLS: `${anvil.chainId}=${proxy.url}` }).publicClient(anvil.chainId)!
      const [from, to] = [anvil.deployer.address, `0x${'22'.repeat(20)}` as Address]
      await Promise.all([
        publicClient.getBalance({ address: to }),
        publicClient.getTransactionCount({ address: to }),
        publicClient.call({ to, data: '0x', batch: false }),
        publicClient.estimateGas({ account: from, to, value: 1n }),
        publicClient.request({ method: 'eth_createAccessList', params: [{ from, to, value: '0x1' }] } as never).catch(() => undefined),
      ])
      expect(proxy.requests).toContainEqual(['eth_getBalance', 'eth_getTransactionCount'])
      for (const method of ['eth_call', 'eth_estimateGas', 'eth_createAccessList']) expect(proxy.requests).toContainEqual([method])
      expect(proxy.requests.filter((r) => r.length > 1).flat()).toEqual(['eth_getBalance', 'eth_getTransactionCount'])
    } finally {
      proxy.stop()
      await anvil.stop()
    }
  })

  test("viem's own reads through the chain's Multicall3 (a coin balance, a quote) stay lookups: never queued behind calls slow to answer", async () => {
    // Chain 1, whose Multicall3 viem knows: getBalance and readContract go through it as eth_calls.
    const anvil = await startAnvil({ args: ['--chain-id', '1'] })
    expect([anvil.chainId, await anvil.publicClient.getChainId()]).toEqual(['1', 1])
    const slow: Address = `0x${'5a'.repeat(20)}`
    const proxy = recordingProxy(anvil.url, { delayMs: (call) => (call.method === 'eth_call' && (call.params[0] as { to?: string })?.to === slow ? 3_000 : 0) })
    try {
      const publicClient = connect({ EVM_RPC_URLS: `1=${proxy.url}` }).publicClient('1')!
      const held = Array.from({ length: ALONE_IN_FLIGHT }, () => publicClient.call({ to: slow, data: '0x', batch: false }))
      await Bun.sleep(100)
      const started = performance.now()
      const [balance, block] = await Promise.all([
        publicClient.getBalance({ address: anvil.deployer.address }),
        publicClient.readContract({ address: MULTICALL3_ADDRESS, abi: parseAbi(['function getBlockNumber() view returns (uint256)']), functionName: 'getBlockNumber' }),
      ])
      expect(performance.now() - started).toBeLessThan(1_500)
      expect(balance).toBeGreaterThan(0n)
      expect(block).toBeGreaterThanOrEqual(0n)
      expect(proxy.calls.some((c) => c.method === 'eth_call' && (c.params[0] as { to?: string })?.to?.toLowerCase() === MULTICALL3_ADDRESS.toLowerCase())).toBe(true)
      await Promise.all(held)
    } finally {
      proxy.stop()
      await anvil.stop()
    }
  })

  test('runsCallersCode: an eth_call to the chain\'s Multicall3 is a lookup unless it carries an authorization list or state overrides', () => {
    const m = MULTICALL3_ADDRESS
    expect(runsCallersCode('eth_getBalance', [], m)).toBe(false)
    expect(runsCallersCode('eth_call', [{ to: m.toLowerCase(), data: '0x' }, 'latest'], m)).toBe(false)
    expect(runsCallersCode('eth_call', [{ to: m, data: '0x', authorizationList: [] }, 'latest'], m)).toBe(true)
    expect(runsCallersCode('eth_call', [{ to: m, data: '0x' }, 'latest', {}], m)).toBe(true)
    expect(runsCallersCode('eth_call', [{ to: `0x${'11'.repeat(20)}`, data: '0x' }, 'latest'], m)).toBe(true)
    expect(runsCallersCode('eth_call', [{ data: '0x60' }, 'latest'], m)).toBe(true)
    expect(runsCallersCode('eth_call', [{ to: m, data: '0x' }, 'latest'], undefined)).toBe(true)
    expect(runsCallersCode('eth_estimateGas', [{ to: m, data: '0x' }], m)).toBe(true)
  })

  test('sends at most LOOKUPS_IN_FLIGHT lookups (JSON-RPC batches, Multicall3 posts) at once: a hung node does not hold requests to other servers', async () => {
    const anvil = await startAnvil()
    // A node answering each request after 1 s, and another service the process talks to (another chain's node).
    const proxy = recordingProxy(anvil.url, { delayMs: 1_000 })
    const other = anotherServer()
    try {
      const client = connect({ EVM_RPC_URLS: `${anvil.chainId}=${proxy.url}`, EVM_RPC_TIMEOUT_MS: '20000' })
      const publicClient = client.publicClient(anvil.chainId)!
      const noToken: Address = `0x${'33'.repeat(20)}`
      // The batcher first asks whether the chain has Multicall3, once.
      await evm.balance.read(client, { chainId: anvil.chainId, owner: noToken, token: noToken }).catch(() => {})
      // Each in a tick of its own, so each leaves in a request of its own: more than Bun's 256 fetch slots.
      const reads: Promise<unknown>[] = []
      for (let i = 0; i < 300; i++) {
        const owner: Address = `0x${(i + 1).toString(16).padStart(40, '0')}`
        reads.push(
          i % 2
            ? publicClient.getBalance({ address: owner })
            : evm.balance.read(client, { chainId: anvil.chainId, owner, token: noToken }).catch((e: unknown) => e),
        )
        await Bun.sleep(1)
      }
      expect(await other.answerMs()).toBeLessThan(300)
      const answers = await Promise.all(reads)
      expect(answers.filter((a) => a === 0n)).toHaveLength(150)
      // The Multicall3 reads were asked (an address without code: the chain answered, no ERC-20 there).
      expect(answers.filter((a) => a instanceof Error && a.message.includes('ERC-20'))).toHaveLength(150)
      expect(proxy.maxInFlight()).toBeLessThanOrEqual(LOOKUPS_IN_FLIGHT)
    } finally {
      other.stop()
      proxy.stop()
      await anvil.stop()
    }
  }, 60_000)

  test('a batch sent again one request at a time (its answer malformed) takes a turn for each of them', async () => {
    // A gateway that takes no batches (an HTML page for each) and answers single requests after 1 s: no node answers
    // so, hence a stand-in.
    let [inFlight, most, hits] = [0, 0, 0]
    const gateway = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(req) {
        hits++
        const body = (await req.json()) as { id: number } | unknown[]
        if (Array.isArray(body)) return new Response('<html>no batches here</html>', { headers: { 'content-type': 'text/html' } })
        inFlight++
        most = Math.max(most, inFlight)
        await Bun.sleep(1_000)
        inFlight--
        return Response.json({ jsonrpc: '2.0', id: body.id, result: '0x7' })
      },
    })
    const other = anotherServer()
    try {
      const client = connect({ EVM_RPC_URLS: `31337=http://127.0.0.1:${gateway.port}`, EVM_RPC_TIMEOUT_MS: '30000' })
      const publicClient = client.publicClient('31337')!
      // Ten batches of thirty, each a tick's: 300 single requests, more than Bun's 256 fetch slots.
      const reads: Promise<bigint>[] = []
      for (let batch = 0; batch < 10; batch++) {
        for (let i = 0; i < 30; i++) reads.push(publicClient.getBalance({ address: `0x${(batch * 30 + i + 1).toString(16).padStart(40, '0')}` }))
        await Bun.sleep(5)
      }
      await Bun.sleep(200)
      expect(await other.answerMs()).toBeLessThan(300)
      expect(await Promise.all(reads)).toEqual(reads.map(() => 7n))
      expect(most).toBe(LOOKUPS_IN_FLIGHT)
      // The chain's request count is of the HTTP requests that reached it: the ten batches and their 300 singles.
      expect([hits, client.rpcRequests('31337')]).toEqual([310, 310])
    } finally {
      other.stop()
      gateway.stop(true)
    }
  }, 60_000)

  test('a lookup holds its turn until its answer is read: a node sending headers at once and the body later', async () => {
    // Headers at once, the body a second later (a proxy that flushes headers, then waits on the node): no node here
    // answers so, hence a stand-in. Bun's fetch slot is held until the body is read.
    let [open, most] = [0, 0]
    const answer = (call: { id: number }) => ({ jsonrpc: '2.0', id: call.id, result: '0x7' })
    const node = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(req) {
        const body = (await req.json()) as { id: number } | { id: number }[]
        const text = JSON.stringify(Array.isArray(body) ? body.map(answer) : answer(body))
        open++
        most = Math.max(most, open)
        const stream = new ReadableStream({
          async start(controller) {
            // A first byte (JSON may start with a space) makes the server send the headers now.
            controller.enqueue(new TextEncoder().encode(' '))
            await Bun.sleep(1_000)
            controller.enqueue(new TextEncoder().encode(text))
            controller.close()
            open--
          },
        })
        return new Response(stream, { headers: { 'content-type': 'application/json' } })
      },
    })
    const other = anotherServer()
    try {
      const publicClient = connect({ EVM_RPC_URLS: `31337=http://127.0.0.1:${node.port}`, EVM_RPC_TIMEOUT_MS: '30000' }).publicClient('31337')!
      // Each in a tick of its own, so each leaves in a request of its own: more than Bun's 256 fetch slots.
      const reads: Promise<bigint>[] = []
      for (let i = 0; i < 300; i++) {
        reads.push(publicClient.getBalance({ address: `0x${(i + 1).toString(16).padStart(40, '0')}` }))
        await Bun.sleep(1)
      }
      expect(await other.answerMs()).toBeLessThan(300)
      expect(await Promise.all(reads)).toEqual(reads.map(() => 7n))
      expect(most).toBeLessThanOrEqual(LOOKUPS_IN_FLIGHT)
    } finally {
      other.stop()
      node.stop(true)
    }
  }, 60_000)

  test("a log scan the node is slow over goes apart: the lookups of the same tick are not held by it", async () => {
    const anvil = await startAnvil()
    // A node taking longer than the timeout over eth_getLogs (a batch waits for its slowest member).
    const proxy = recordingProxy(anvil.url, { delayMs: (call) => (call.method === 'eth_getLogs' ? 3_000 : 0) })
    try {
      const publicClient = connect({ EVM_RPC_URLS: `${anvil.chainId}=${proxy.url}`, EVM_RPC_TIMEOUT_MS: '2000' }).publicClient(anvil.chainId)!
      const scan = publicClient.getLogs({ fromBlock: 0n, toBlock: 'latest' }).catch((e: unknown) => e)
      const started = performance.now()
      // A verify's lookups, in the same tick.
      const [head, balance] = await Promise.all([publicClient.getBlockNumber({ cacheTime: 0 }), publicClient.getBalance({ address: anvil.deployer.address })])
      expect(performance.now() - started).toBeLessThan(1_000)
      expect(head).toBeGreaterThanOrEqual(0n)
      expect(balance).toBeGreaterThan(0n)
      // The scan itself fails on its own: the node did not answer it in time.
      expect(((await scan) as Error).name).toBe('TimeoutError')
    } finally {
      proxy.stop()
      await anvil.stop()
    }
  }, 30_000)

  test('log scans wait in a queue of their own: a hundred slow ones do not hold the lookups', async () => {
    const anvil = await startAnvil()
    const proxy = recordingProxy(anvil.url, { delayMs: (call) => (call.method === 'eth_getLogs' ? 2_000 : 0) })
    try {
      const publicClient = connect({ EVM_RPC_URLS: `${anvil.chainId}=${proxy.url}` }).publicClient(anvil.chainId)!
      // A hundred portfolios' scans, each tick's its own request: past the lookups' 64 and the scans' 16.
      const scans: Promise<unknown>[] = []
      for (let i = 0; i < 100; i++) {
        scans.push(publicClient.getLogs({ fromBlock: 0n, toBlock: 'latest' }).catch((e: unknown) => e))
        await Bun.sleep(1)
      }
      const started = performance.now()
      expect(await publicClient.getBlockNumber({ cacheTime: 0 })).toBeGreaterThanOrEqual(0n)
      expect(performance.now() - started).toBeLessThan(1_000)
      expect(proxy.maxInFlight()).toBeLessThanOrEqual(LOG_SCANS_IN_FLIGHT + 1)
      await Promise.all(scans)
    } finally {
      proxy.stop()
      await anvil.stop()
    }
  }, 60_000)

  test('a tick of many log scans leaves in batches of at most LOG_SCAN_BATCH', async () => {
    const anvil = await startAnvil()
    const proxy = recordingProxy(anvil.url)
    try {
      const publicClient = connect({ EVM_RPC_URLS: `${anvil.chainId}=${proxy.url}` }).publicClient(anvil.chainId)!
      // A hundred portfolios' scans in one tick.
      await Promise.all(Array.from({ length: 100 }, (_, i) => publicClient.getLogs({ fromBlock: 0n, toBlock: BigInt(i) })))
      const scanBatches = proxy.requests.filter((r) => r.includes('eth_getLogs'))
      expect(scanBatches.map((r) => r.length)).toEqual([LOG_SCAN_BATCH, LOG_SCAN_BATCH, LOG_SCAN_BATCH, 100 - 3 * LOG_SCAN_BATCH])
    } finally {
      proxy.stop()
      await anvil.stop()
    }
  })

  test('a tick of many lookups leaves in batches of at most LOOKUP_BATCH', async () => {
    const anvil = await startAnvil()
    const proxy = recordingProxy(anvil.url)
    try {
      const publicClient = connect({ EVM_RPC_URLS: `${anvil.chainId}=${proxy.url}` }).publicClient(anvil.chainId)!
      await Promise.all(Array.from({ length: 100 }, (_, i) => publicClient.getTransactionCount({ address: `0x${(i + 1).toString(16).padStart(40, '0')}` })))
      expect(proxy.requests.map((r) => r.length)).toEqual([LOOKUP_BATCH, LOOKUP_BATCH, LOOKUP_BATCH, 100 - 3 * LOOKUP_BATCH])
    } finally {
      proxy.stop()
      await anvil.stop()
    }
  })

  // How nodes refuse a batch over their cap: geth answers an array of one error carrying the first request's id,
  // others one error object, or an error per request past the cap; a gateway may answer HTTP 413.
  const refusals: [string, (calls: { id?: unknown }[]) => Response][] = [
    ['geth', (calls) => Response.json([{ jsonrpc: '2.0', id: calls[0]!.id, error: { code: -32600, message: 'batch too large' } }])],
    ['one error object', () => Response.json({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Batch size limit exceeded' } })],
    ['an error per request', (calls) => Response.json(calls.map((c) => ({ jsonrpc: '2.0', id: c.id, error: { code: -32005, message: 'batch limit 5 exceeded' } })))],
    ['HTTP 413', () => new Response('request entity too large', { status: 413 })],
  ]
  for (const [style, refuse] of refusals)
    test(`a node capping batches (${style}): the refused batch is sent again in halves, and later ones leave cut to what it took`, async () => {
      const anvil = await startAnvil()
      const sizes: number[] = []
      const node = Bun.serve({
        hostname: '127.0.0.1',
        port: 0,
        async fetch(request) {
          const body = (await request.json()) as { id?: unknown }[] | { id?: unknown }
          const calls = [body].flat()
          sizes.push(calls.length)
          if (calls.length > 5) return refuse(calls)
          return new Response(await (await fetch(anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).text(), { headers: { 'content-type': 'application/json' } })
        },
      })
      try {
        const publicClient = connect({ EVM_RPC_URLS: `${anvil.chainId}=http://127.0.0.1:${node.port}` }).publicClient(anvil.chainId)!
        const tick = (n: number) => Promise.all(Array.from({ length: n }, (_, i) => publicClient.getTransactionCount({ address: `0x${(i + 1).toString(16).padStart(40, '0')}` })))
        // 20 refused, then 10 (its halves), then pieces of 5, each answered: every lookup gets its own answer.
        expect(await tick(20)).toEqual(Array.from({ length: 20 }, () => 0))
        expect(sizes).toEqual([20, 10, 10, 5, 5, 5, 5])
        // The next tick leaves in pieces of 5 at once: no refusal to learn from again.
        sizes.length = 0
        expect(await tick(12)).toEqual(Array.from({ length: 12 }, () => 0))
        expect(sizes.sort((a, b) => a - b)).toEqual([2, 5, 5])
      } finally {
        node.stop(true)
        await anvil.stop()
      }
    })

  test('sends at most ALONE_IN_FLIGHT of those at once, the rest waiting their turn (so they keep to kept-alive connections)', async () => {
    const anvil = await startAnvil()
    const proxy = recordingProxy(anvil.url, { delayMs: 20 })
    try {
      const publicClient = connect({ EVM_RPC_URLS: `${anvil.chainId}=${proxy.url}` }).publicClient(anvil.chainId)!
      const answers = await Promise.all(Array.from({ length: 3 * ALONE_IN_FLIGHT }, () => publicClient.call({ to: `0x${'22'.repeat(20)}`, data: '0x', batch: false })))
      expect(answers).toHaveLength(3 * ALONE_IN_FLIGHT)
      expect(proxy.count('eth_call')).toBe(3 * ALONE_IN_FLIGHT)
      expect(proxy.maxInFlight()).toBe(ALONE_IN_FLIGHT)
    } finally {
      proxy.stop()
      await anvil.stop()
    }
  })
})
