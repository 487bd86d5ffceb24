import { afterAll, beforeAll, describe, expect, setSystemTime, test } from 'bun:test'
import { inTurn, UnavailableError } from '@earn/core'
import { HttpRequestError, parseUnits, type Hex } from 'viem'
import { boundedText, malformedAnswer, malformedResult } from './answers.ts'
import { BATCH_CAP_MS, checkedFetch } from './checkedFetch.ts'
import { connect } from './client.ts'
import { startEarnChain, type EarnChain } from './fixtures.ts'
import { flows, servesChain } from './portfolio.ts'
import { build } from './transactions.ts'

let chain: EarnChain
let txHash: Hex
const raw = async (method: string, params: unknown[]) => {
  const response = await fetch(chain.anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) })
  return ((await response.json()) as { result: unknown }).result
}

beforeAll(async () => {
  chain = await startEarnChain()
  const owner = await chain.user(parseUnits('10', 6))
  const hashes = await chain.sendAll(owner, await build(chain.client(), chain.deposit({ owner, amount: parseUnits('10', 6) })))
  txHash = hashes.at(-1)!
})
afterAll(() => chain?.anvil.stop())

describe('malformedResult', () => {
  test("anvil's own answers pass, a deposit's block, transaction, receipt, logs and call trace among them", async () => {
    const receipt = (await raw('eth_getTransactionReceipt', [txHash])) as { blockNumber: Hex; logs: unknown[] }
    expect(receipt.logs.length).toBeGreaterThan(0)
    const answers: [string, unknown][] = [
      ['eth_chainId', await raw('eth_chainId', [])],
      ['eth_blockNumber', await raw('eth_blockNumber', [])],
      ['eth_getBlockByNumber', await raw('eth_getBlockByNumber', [receipt.blockNumber, true])],
      ['eth_getBlockByNumber', await raw('eth_getBlockByNumber', ['0xffffff', false])],
      ['eth_getTransactionByHash', await raw('eth_getTransactionByHash', [txHash])],
      ['eth_getTransactionReceipt', receipt],
      ['eth_getLogs', await raw('eth_getLogs', [{ fromBlock: '0x0', toBlock: 'latest' }])],
      ['eth_getCode', await raw('eth_getCode', [chain.vault, 'latest'])],
      ['eth_getBalance', await raw('eth_getBalance', [chain.vault, 'latest'])],
      ['debug_traceTransaction', await raw('debug_traceTransaction', [txHash, { tracer: 'callTracer' }])],
    ]
    expect(answers.map(([method, result]) => malformedResult(method, result))).toEqual(answers.map(() => undefined))
  })

  test('a quantity, a log list, a log, a block number or an address of the wrong form is named', async () => {
    const receipt = (await raw('eth_getTransactionReceipt', [txHash])) as Record<string, unknown> & { logs: Record<string, unknown>[] }
    expect(malformedResult('eth_chainId', 'zz')).toBe('eth_chainId answered something other than its result')
    expect(malformedResult('eth_blockNumber', null)).toBe('eth_blockNumber answered something other than its result')
    expect(malformedResult('eth_getLogs', null)).toBe('eth_getLogs answered something other than its result')
    expect(malformedResult('eth_getLogs', [{ foo: 1 }])).toBe('eth_getLogs answered something other than its result')
    expect(malformedResult('eth_getBlockByNumber', { number: 'zz' })).toBe('eth_getBlockByNumber answered a number of the wrong form')
    expect(malformedResult('eth_getTransactionReceipt', { ...receipt, logs: [{ ...receipt.logs[0], topics: [7] }] })).toBe(
      'eth_getTransactionReceipt answered a logs of the wrong form',
    )
    expect(malformedResult('eth_getTransactionReceipt', { ...receipt, from: 12 })).toBe('eth_getTransactionReceipt answered a from of the wrong form')
    expect(malformedResult('debug_traceTransaction', { type: 'CALL', calls: [{ type: 'CALL', calls: [{ gasUsed: 'lots' }] }] })).toBe(
      'debug_traceTransaction answered a gasUsed of the wrong form',
    )
    // A method this module does not know is viem's to read.
    expect(malformedResult('eth_unknown', 'zz')).toBeUndefined()
  })

  test('a batch answer is matched to its requests by id; an error passes, a body that is not JSON-RPC does not', () => {
    const request = JSON.stringify([
      { jsonrpc: '2.0', id: 1, method: 'eth_chainId' },
      { jsonrpc: '2.0', id: 2, method: 'eth_blockNumber' },
    ])
    expect(malformedAnswer(request, JSON.stringify([{ id: 2, result: '0x10' }, { id: 1, result: '0x1' }]))).toBeUndefined()
    expect(malformedAnswer(request, JSON.stringify([{ id: 2, result: '0x10' }, { id: 1, result: 'one' }]))).toBe('eth_chainId answered something other than its result')
    expect(malformedAnswer(request, JSON.stringify([{ id: 1, error: { code: -32000, message: 'busy' } }, { id: 2, result: '0x10' }]))).toBeUndefined()
    expect(malformedAnswer(request, '<html>')).toBe('the answer is not JSON')
    expect(malformedAnswer(request, '{"jsonrpc":"2.0"}')).toBe('the answer is not a JSON-RPC response')
  })

  test('a body past the limit is refused, declared or streamed', async () => {
    expect(await boundedText(new Response('x'.repeat(10)), 10)).toBe('x'.repeat(10))
    await expect(boundedText(new Response('x'.repeat(11)), 10)).rejects.toThrow('the answer is over 10 bytes')
    await expect(boundedText(new Response('x', { headers: { 'content-length': '11' } }), 10)).rejects.toThrow('the answer is over 10 bytes')
    // A compressed body declares its size on the wire, not what it inflates to: counted as it arrives.
    await expect(boundedText(new Response('x'.repeat(11), { headers: { 'content-length': '5', 'content-encoding': 'gzip' } }), 10)).rejects.toThrow('the answer is over 10 bytes')
    const stream = new ReadableStream({
      pull(controller) {
        controller.enqueue(new Uint8Array(8))
      },
    })
    await expect(boundedText(new Response(stream), 100)).rejects.toThrow('the answer is over 100 bytes')
  })
})

/** anvil behind a proxy that answers `method` with `result` and forwards everything else. */
function corrupting(method: string, result: unknown) {
  type Call = { id?: unknown; method: string }
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const parsed = (await request.json()) as Call | Call[]
      const answer = async (call: Call) =>
        call.method === method
          ? { jsonrpc: '2.0', id: call.id, result }
          : (await fetch(chain.anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(call) })).json()
      return Response.json(Array.isArray(parsed) ? await Promise.all(parsed.map(answer)) : await answer(parsed))
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) }
}

describe('a node answering a method with the wrong form is a chain that did not answer (503), not a fault of ours', () => {
  const cases: [string, string, unknown][] = [
    ['servesChain', 'eth_chainId', 'zz'],
    ['flows', 'eth_blockNumber', null],
    ['flows', 'eth_blockNumber', 'zz'],
    ['flows', 'eth_getLogs', null],
    ['flows', 'eth_getLogs', [{ foo: 1 }]],
  ]
  for (const [what, method, result] of cases)
    test(`${what}: ${method} answering ${JSON.stringify(result)}`, async () => {
      const proxy = corrupting(method, result)
      try {
        const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${proxy.url}`, EVM_RPC_TIMEOUT_MS: '2000' })
        const owner = (await chain.user()).address
        const asked = what === 'servesChain' ? servesChain(client, chain.anvil.chainId) : flows(client, { chainId: chain.anvil.chainId, vaultAddress: chain.vault, owner })
        const error = await asked.catch((e: unknown) => e)
        expect(error).toBeInstanceOf(UnavailableError)
        expect((error as UnavailableError).context).toEqual({ chainId: chain.anvil.chainId })
      } finally {
        await proxy.stop()
      }
    })

  test('flows: the finalized block answered in the wrong form is no finalized block, as an error is: the depth alone decides', async () => {
    const proxy = corrupting('eth_getBlockByNumber', { number: 'zz' })
    try {
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${proxy.url}`, EVM_RPC_TIMEOUT_MS: '2000' })
      const owner = (await chain.user()).address
      expect(await flows(client, { chainId: chain.anvil.chainId, vaultAddress: chain.vault, owner })).toEqual({ deposited: 0n, withdrawn: 0n })
    } finally {
      await proxy.stop()
    }
  })
})

describe('checkedFetch in a queue', () => {
  test("a refusal's body is read inside the turn, past 64 KiB replaced by a line: an error page is never a batch to split", async () => {
    let requests = 0
    const node = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => (requests++, new Response('x'.repeat(1 << 20), { status: 500 })) })
    try {
      const limited = checkedFetch(fetch, inTurn(1))
      const body = JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }, { jsonrpc: '2.0', id: 2, method: 'eth_chainId', params: [] }])
      const small = await limited(`http://127.0.0.1:${node.port}`, { method: 'POST', body })
      expect([small.status, small.headers.get('content-type'), await small.text()]).toEqual([500, 'text/plain', 'the refusal came with a body of more than 64 KiB, not kept'])
      // Sent once: a megabyte error page is the node's refusal, not a malformed answer whose calls go again alone.
      expect(requests).toBe(1)
    } finally {
      node.stop(true)
    }
  })

  test("viem keeps a refusal's status whatever its body: a node's 405 with a large JSON body is a refusal, not silence", async () => {
    const node = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => Response.json({ error: 'method not allowed', pad: 'x'.repeat(70_000) }, { status: 405 }) })
    try {
      const publicClient = connect({ EVM_RPC_URLS: `31337=http://127.0.0.1:${node.port}` }).publicClient('31337')!
      const error = await publicClient.request({ method: 'eth_chainId' }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(HttpRequestError)
      expect((error as HttpRequestError).status).toBe(405)
    } finally {
      node.stop(true)
    }
  })
})

describe('checkedFetch and batches refused for their size', () => {
  const batch = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i + 1, method: 'eth_chainId', params: [] })))

  test("a revert's reason naming a batch is the contract's words: the answer goes to viem as it came, sent once", async () => {
    let requests = 0
    const answer = [{ jsonrpc: '2.0', id: 1, error: { code: 3, message: 'execution reverted: batch closed' } }, { jsonrpc: '2.0', id: 2, result: '0x1' }]
    const node = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => (requests++, Response.json(answer)) })
    try {
      const response = await checkedFetch(fetch)(`http://127.0.0.1:${node.port}`, { method: 'POST', body: batch(2) })
      expect(await response.json()).toEqual(answer)
      expect(requests).toBe(1)
    } finally {
      node.stop(true)
    }
  })

  /** A node in front of anvil whose batches `answer` rewrites (after a refusal past `cap` requests, if set). */
  function rewriting(answer: (anvilAnswer: { id: number }[]) => unknown, cap = Number.POSITIVE_INFINITY) {
    const sizes: number[] = []
    const node = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(request) {
        const body = (await request.json()) as unknown
        sizes.push(Array.isArray(body) ? body.length : 1)
        if (Array.isArray(body) && body.length > cap) return new Response('too large', { status: 413 })
        const up = (await (await fetch(chain.anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json()) as { id: number }[]
        return Response.json(Array.isArray(body) ? answer(up) : up)
      },
    })
    return { url: `http://127.0.0.1:${node.port}`, sizes, stop: () => node.stop(true) }
  }
  // Eight addresses holding 1000 + i wei each.
  const holders = Array.from({ length: 8 }, (_, i) => `0x${'5'.repeat(38)}${i.toString(16).padStart(2, '0')}` as const)
  beforeAll(async () => {
    for (const [i, address] of holders.entries()) await raw('anvil_setBalance', [address, `0x${(1000 + i).toString(16)}`])
  })
  const balances = async (url: string) => {
    const publicClient = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${url}`, EVM_RPC_TIMEOUT_MS: '2000' }).publicClient(chain.anvil.chainId)!
    return Promise.all(holders.map((address) => publicClient.getBalance({ address }).catch(() => 'failed')))
  }
  const right = holders.map((_, i) => BigInt(1000 + i))

  test("a batch answered without one of its requests, or with one repeated, is sent again one request at a time: never another request's result", async () => {
    for (const answer of [(up: { id: number }[]) => up.slice(1), (up: { id: number }[]) => [up[0], up[0], ...up.slice(2)]]) {
      const node = rewriting(answer)
      try {
        expect(await balances(node.url)).toEqual(right)
        expect(node.sizes).toEqual([8, 1, 1, 1, 1, 1, 1, 1, 1])
      } finally {
        node.stop()
      }
    }
  })

  test('a piece of a refused batch answered with one result object is sent again one request at a time, its result copied to none', async () => {
    const node = rewriting((up) => up[0], 4)
    try {
      expect(await balances(node.url)).toEqual(right)
    } finally {
      node.stop()
    }
  })

  test('a batch of one answered bare, as some gateways do, is read as its one answer (viem sends a lone lookup as a batch of one)', async () => {
    const node = rewriting((up) => (up.length === 1 ? up[0] : up))
    try {
      const publicClient = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${node.url}`, EVM_RPC_TIMEOUT_MS: '2000' }).publicClient(chain.anvil.chainId)!
      expect(await publicClient.getBalance({ address: holders[3]! })).toBe(1003n)
      expect(node.sizes).toEqual([1])
    } finally {
      node.stop()
    }
  })

  test('a rate limit naming the batch is no refusal of its size: not halved, nor are later batches', async () => {
    let limited = true
    const node = rewriting((up) => (limited ? up.map(({ id }) => ({ jsonrpc: '2.0', id, error: { code: -32005, message: 'method eth_getBalance in batch triggers rate limit' } })) : up))
    try {
      const first = await balances(node.url)
      expect(first.every((b) => b === 'failed')).toBe(true)
      // Each try (viem's one retry included) went as the whole batch.
      expect(new Set(node.sizes)).toEqual(new Set([8]))
      limited = false
      node.sizes.length = 0
      expect(await balances(node.url)).toEqual(right)
      expect(node.sizes).toEqual([8])
    } finally {
      node.stop()
    }
  })

  test('the cut a refusal taught holds BATCH_CAP_MS, then a whole batch is tried again', async () => {
    let cap = 4
    const sizes: number[] = []
    const node = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(request) {
        const body = (await request.json()) as unknown[]
        sizes.push(body.length)
        return body.length > cap ? new Response('too large', { status: 413 }) : Response.json(body.map((c) => ({ jsonrpc: '2.0', id: (c as { id: number }).id, result: '0x7a69' })))
      },
    })
    try {
      const checked = checkedFetch(fetch)
      const send = () => checked(`http://127.0.0.1:${node.port}`, { method: 'POST', body: batch(8) })
      await send()
      expect(sizes).toEqual([8, 4, 4])
      // The node's limit raised meanwhile: within the time, still cut; past it, asked whole.
      cap = 100
      sizes.length = 0
      setSystemTime(new Date(Date.now() + BATCH_CAP_MS - 1_000))
      await send()
      expect(sizes).toEqual([4, 4])
      sizes.length = 0
      setSystemTime(new Date(Date.now() + 2_000))
      await send()
      expect(sizes).toEqual([8])
    } finally {
      setSystemTime()
      node.stop(true)
    }
  })

  test('a node that takes no batches at all has each request sent alone, and the next batch too, without asking again', async () => {
    const bodies: unknown[] = []
    const node = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(request) {
        const body = (await request.json()) as { id: number } | { id: number }[]
        bodies.push(body)
        return Array.isArray(body)
          ? Response.json({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Batch requests are not supported' } })
          : Response.json({ jsonrpc: '2.0', id: body.id, result: '0x7a69' })
      },
    })
    try {
      const checked = checkedFetch(fetch)
      const answers = async (n: number) => (await (await checked(`http://127.0.0.1:${node.port}`, { method: 'POST', body: batch(n) })).json()) as { id: number; result: string }[]
      expect(await answers(4)).toEqual([1, 2, 3, 4].map((id) => ({ jsonrpc: '2.0', id, result: '0x7a69' })))
      // 4 refused, 2 and 2 refused, then four single requests (objects, not batches of one).
      expect(bodies.map((b) => (Array.isArray(b) ? b.length : 'single'))).toEqual([4, 2, 2, 'single', 'single', 'single', 'single'])
      bodies.length = 0
      expect((await answers(3)).map((a) => a.id)).toEqual([1, 2, 3])
      expect(bodies.map((b) => (Array.isArray(b) ? b.length : 'single'))).toEqual(['single', 'single', 'single'])
    } finally {
      node.stop(true)
    }
  })
})
