/**
 * A node in front of anvil that answers chosen methods with errors or bodies of its own (a rate-limiting provider, a
 * broken one): every such answer is the chain not answering (503), within the request's deadline, never a refusal
 * blamed on the caller's token and never a 500.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { InvalidArgumentError, UnavailableError } from '@earn/core'
import { read } from './balance.ts'
import { connect } from './client.ts'
import { startEarnChain, type EarnChain } from './fixtures.ts'
import { readTag } from './readTag.ts'
import { assertServesChain } from './rpc.ts'

let chain: EarnChain
beforeAll(async () => {
  chain = await startEarnChain()
})
afterAll(() => chain?.anvil.stop())

type Call = { id?: unknown; method: string }
/** anvil behind a node whose `answer` may answer a call itself (an HTTP response, or a JSON-RPC body for it). */
function node(answer: (call: Call) => Response | string | undefined) {
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const text = await request.text()
      const calls = [JSON.parse(text) as Call | Call[]].flat()
      const own = calls.map(answer)
      const first = own[0]
      if (first instanceof Response) return first
      if (own.every((a) => a === undefined)) return fetch(chain.anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text })
      const bodies = await Promise.all(
        calls.map(async (c, i) =>
          typeof own[i] === 'string'
            ? (own[i] as string).replace('"id":0', `"id":${JSON.stringify(c.id)}`)
            : JSON.stringify(await (await fetch(chain.anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(c) })).json()),
        ),
      )
      return new Response(text.trimStart().startsWith('[') ? `[${bodies.join(',')}]` : bodies[0]!, { headers: { 'content-type': 'application/json' } })
    },
  })
  const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=http://127.0.0.1:${server.port}`, EVM_RPC_TIMEOUT_MS: '1000' })
  return { client, stop: () => server.stop(true) }
}

const failure = (p: Promise<unknown>) => p.then(() => 'answered', (e: unknown) => e)
const tokenBalance = (n: ReturnType<typeof node>) => read(n.client, { chainId: chain.anvil.chainId, owner: chain.vault, token: chain.asset })
const reverted = (code = 3) => `{"jsonrpc":"2.0","id":0,"error":{"code":${code},"message":"execution reverted"}}`

describe('a node answering errors of its own', () => {
  test("a 429's Retry-After does not hold the request past its deadline", async () => {
    const n = node((c) => (c.method === 'eth_getTransactionByHash' ? new Response('busy', { status: 429, headers: { 'Retry-After': '30' } }) : undefined))
    try {
      const started = performance.now()
      expect(await failure(readTag(n.client, { chainId: chain.anvil.chainId, txHash: `0x${'ab'.repeat(32)}` }))).toBeInstanceOf(UnavailableError)
      // viem waited the 30 s named before its retry.
      expect(performance.now() - started).toBeLessThan(10_000)
    } finally {
      await n.stop()
    }
  })

  test("a Multicall3 read the node says reverted as a whole is the node failing, not the token refusing", async () => {
    const n = node((c) => (c.method === 'eth_call' ? reverted() : undefined))
    try {
      const error = await failure(tokenBalance(n))
      expect(error).toBeInstanceOf(UnavailableError)
      expect(error).not.toBeInstanceOf(InvalidArgumentError)
    } finally {
      await n.stop()
    }
  })

  test('a revert answered to what no contract can refuse (the chain id, a coin balance) is the node failing, not a 500', async () => {
    const n = node((c) => (c.method === 'eth_chainId' || c.method === 'eth_getBalance' ? reverted() : undefined))
    try {
      expect(await failure(assertServesChain(n.client.publicClient(chain.anvil.chainId)!, chain.anvil.chainId))).toBeInstanceOf(UnavailableError)
      expect(await failure(read(n.client, { chainId: chain.anvil.chainId, owner: chain.vault, token: 'native' }))).toBeInstanceOf(UnavailableError)
    } finally {
      await n.stop()
    }
  })

  test('an answer with "error": null and no result is the node failing', async () => {
    const n = node((c) => (c.method === 'eth_getBalance' ? '{"jsonrpc":"2.0","id":0,"error":null}' : undefined))
    try {
      expect(await failure(read(n.client, { chainId: chain.anvil.chainId, owner: chain.vault, token: 'native' }))).toBeInstanceOf(UnavailableError)
    } finally {
      await n.stop()
    }
  })

  test("an answer to the batcher's eth_call that is no JSON-RPC object is the node failing, not a 500", async () => {
    for (const body of ['null', '1', '"x"', '[]', '{"jsonrpc":"2.0","id":0,"error":"busy"}', '{"jsonrpc":"2.0","id":0,"error":null}', '{"jsonrpc":"2.0","id":0,"result":null}']) {
      const n = node((c) => (c.method === 'eth_call' ? new Response(body, { headers: { 'content-type': 'application/json' } }) : undefined))
      try {
        expect(await failure(tokenBalance(n)), body).toBeInstanceOf(UnavailableError)
      } finally {
        await n.stop()
      }
    }
  })

  test('an eth_call result nested 20,000 deep is the node failing, not a stack overflow', async () => {
    const n = node((c) => (c.method === 'eth_call' ? `{"jsonrpc":"2.0","id":0,"result":${'['.repeat(20_000)}1${']'.repeat(20_000)}}` : undefined))
    try {
      expect(await failure(tokenBalance(n))).toBeInstanceOf(UnavailableError)
    } finally {
      await n.stop()
    }
  })
})
