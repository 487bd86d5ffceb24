/**
 * The batcher's own JSON-RPC post: answers from anvil, and every way a request can fail ending as viem's transport
 * would end it, so `classifyRpcError` tells a refusal from no answer the same way.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { encodeFunctionData, erc20Abi, HttpRequestError, RpcRequestError, TimeoutError, type Address, type Hex } from 'viem'
import { closedPortUrl, deployToken, startAnvil, type Anvil } from '../../../test/chains/evm.ts'
import { rejection } from '../../../test/thrown.ts'
import { inTurn } from '@earn/core'
import { createJsonRpcPost } from './post.ts'
import { classifyRpcError } from './rpc.ts'

let anvil: Anvil
let token: Address
beforeAll(async () => {
  anvil = await startAnvil()
  token = await deployToken(anvil)
})
afterAll(() => anvil?.stop())

describe('against anvil', () => {
  test("an answer is the result; each HTTP request is counted; the node's error is RpcRequestError, not retried", async () => {
    let requests = 0
    const post = createJsonRpcPost({ url: anvil.url, timeoutMs: 5000, retryCount: 1, onRequest: () => requests++ })
    expect(await post('eth_chainId', [])).toBe('0x7a69')
    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [token] })
    expect(await post('eth_call', [{ to: token, data }, 'latest'])).toBe(`0x${'0'.repeat(64)}` as Hex)
    expect(requests).toBe(2)

    // A call the token refuses: the node answers with an error, which is a refusal and is not asked again.
    const refused = await rejection(post('eth_call', [{ to: token, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [token, 1n] }) }, 'latest']))
    expect(refused).toBeInstanceOf(RpcRequestError)
    expect(classifyRpcError(refused)).toBe('refused')
    expect(requests).toBe(3)
  })
})

// No node can be made to answer 503 or to hang: these two are small HTTP servers standing in for a failing RPC.
describe('failures', () => {
  test('a refused connection is HttpRequestError, tried once more, and unavailable', async () => {
    let requests = 0
    const url = await closedPortUrl()
    const error = await rejection(createJsonRpcPost({ url, timeoutMs: 1000, retryCount: 1, retryDelayMs: 1, onRequest: () => requests++ })('eth_chainId', []))
    expect(error).toBeInstanceOf(HttpRequestError)
    expect(classifyRpcError(error)).toBe('unavailable')
    expect(requests).toBe(2)
  })

  test('a busy node (503) is asked again and its next answer taken; a 400 is not asked again', async () => {
    let served = 0
    const server = Bun.serve({
      port: 0,
      fetch: (request) => {
        served++
        if (new URL(request.url).pathname === '/bad') return new Response('no', { status: 400 })
        return served === 1 ? new Response('busy', { status: 503 }) : Response.json({ jsonrpc: '2.0', id: 1, result: '0x1' })
      },
    })
    try {
      const post = createJsonRpcPost({ url: `http://127.0.0.1:${server.port}/`, timeoutMs: 1000, retryCount: 1, retryDelayMs: 1 })
      expect(await post('eth_chainId', [])).toBe('0x1')
      expect(served).toBe(2)
      const bad = await rejection(createJsonRpcPost({ url: `http://127.0.0.1:${server.port}/bad`, timeoutMs: 1000, retryCount: 1, retryDelayMs: 1 })('eth_chainId', []))
      expect(bad).toMatchObject({ status: 400 })
      expect(bad).toBeInstanceOf(HttpRequestError)
      expect(served).toBe(3)
    } finally {
      server.stop(true)
    }
  })

  test('a node that never answers is TimeoutError after the timeout, each try, and unavailable', async () => {
    let requests = 0
    const server = Bun.serve({ port: 0, fetch: () => new Promise<Response>(() => {}) })
    try {
      const started = performance.now()
      const error = await rejection(createJsonRpcPost({ url: `http://127.0.0.1:${server.port}/`, timeoutMs: 200, retryCount: 1, retryDelayMs: 1, onRequest: () => requests++ })('eth_chainId', []))
      const elapsed = performance.now() - started
      expect(error).toBeInstanceOf(TimeoutError)
      expect(classifyRpcError(error)).toBe('unavailable')
      expect(requests).toBe(2)
      expect(elapsed).toBeGreaterThanOrEqual(390)
      expect(elapsed).toBeLessThan(2000)
    } finally {
      server.stop(true)
    }
  })

  test('a request whose timeout passes while it waits its turn is TimeoutError, unsent, and unavailable', async () => {
    let requests = 0
    const server = Bun.serve({ port: 0, fetch: () => new Promise<Response>(() => {}) })
    try {
      const turns = inTurn(1)
      // The one slot is taken for 500 ms (by the chain's other lookups).
      const held = turns(() => Bun.sleep(500))
      const post = createJsonRpcPost({ url: `http://127.0.0.1:${server.port}/`, timeoutMs: 200, retryCount: 0, inTurn: turns, onRequest: () => requests++ })
      const started = performance.now()
      const waited = await rejection(post('eth_chainId', []))
      expect(performance.now() - started).toBeLessThan(450)
      expect(waited).toBeInstanceOf(TimeoutError)
      expect(classifyRpcError(waited)).toBe('unavailable')
      expect(requests).toBe(0)
      await held
    } finally {
      server.stop(true)
    }
  })
})
