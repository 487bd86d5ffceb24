/**
 * One JSON-RPC request over HTTP, sent at once: what the Multicall3 batcher posts its aggregate3 eth_call with.
 * viem's http transport, on every request, first builds the TimeoutError it would throw (stringifying the whole
 * body, which for a batch of a hundred reads is kilobytes) and, with JSON-RPC batching on, holds the request for
 * a timer turn; on the build path both cost more than the reads themselves (measured: ~+15% builds a second).
 * Failures end as viem's do, so `classifyRpcError` reads them alike: no answer is `HttpRequestError` or
 * `TimeoutError`, a node's error `RpcRequestError`; viem's classes are built only when a request fails.
 */
import { HttpRequestError, RpcRequestError, TimeoutError, type PublicClient } from 'viem'
import type { InTurn } from '@earn/core'
import { boundedText } from './answers.ts'

export type JsonRpcPost = (method: string, params: unknown[]) => Promise<unknown>

export interface JsonRpcPostOptions {
  url: string
  timeoutMs: number
  /** Further tries after a failure the node may not repeat: no answer, an HTTP 408/429/5xx, a rate limit. */
  retryCount: number
  /** The first retry waits this long, each later one twice the one before (viem's default: 150 ms). */
  retryDelayMs?: number
  /** Told of every HTTP request, retries included (the per-chain request count). */
  onRequest?: () => void
  /** The chain's queue of lookups in flight (client.ts `LOOKUPS_IN_FLIGHT`); a request waits its turn within its timeout. */
  inTurn?: InTurn
}

/** HTTP statuses worth a second try: the node or a proxy in front of it was busy, not the request wrong. */
const RETRY_STATUSES = new Set([408, 429, 500, 502, 503, 504])
/** JSON-RPC codes of rate limits (standard, HTTP-like, QuickNode's). */
const RATE_LIMITED = new Set([-32005, 429, -32007])

function retryable(error: unknown): boolean {
  if (error instanceof TimeoutError) return true
  if (error instanceof HttpRequestError) return error.status === undefined || RETRY_STATUSES.has(error.status)
  return error instanceof RpcRequestError && RATE_LIMITED.has(error.code)
}

export function createJsonRpcPost(options: JsonRpcPostOptions): JsonRpcPost {
  const { url, timeoutMs } = options
  let id = 0

  type Body = { jsonrpc: '2.0'; id: number; method: string; params: unknown[] }
  const once = (body: Body): Promise<unknown> => {
    const signal = timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined
    return options.inTurn
      ? options.inTurn(() => sent(body, signal), signal).catch((e: unknown) => {
          // Its time ran out waiting for its turn: no answer, as a node that did not answer in time.
          throw e === signal?.reason ? new TimeoutError({ body, url }) : e
        })
      : sent(body, signal)
  }
  const sent = async (body: Body, signal: AbortSignal | undefined): Promise<unknown> => {
    options.onRequest?.()
    let payload: { result?: unknown; error?: { code: number; message: string; data?: unknown } } | undefined
    let response: Response
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal,
      })
      // Bounded as viem bounds its answers: a node streaming megabytes must not fill the server's memory.
      payload = response.ok ? JSON.parse(await boundedText(response)) : undefined
    } catch (e) {
      if (e instanceof Error && e.name === 'TimeoutError') throw new TimeoutError({ body, url })
      throw new HttpRequestError({ body, url, details: e instanceof Error ? e.message : String(e), cause: e instanceof Error ? e : undefined })
    }
    if (!response.ok) {
      // Its body is not read: let the connection go now rather than when the response is collected.
      void response.body?.cancel().catch(() => {})
      throw new HttpRequestError({ body, url, status: response.status, headers: response.headers, details: response.statusText })
    }
    // Only an object answers: `null`, a number or a string (which `in` throws on, a 500) is no JSON-RPC response.
    const answer = typeof payload === 'object' && payload !== null && !Array.isArray(payload) ? payload : undefined
    if (typeof answer?.error === 'object' && answer.error !== null) throw new RpcRequestError({ body, url, error: answer.error })
    if (answer === undefined || !('result' in answer))
      throw new HttpRequestError({ body, url, status: response.status, details: 'the answer is not a JSON-RPC response' })
    return answer.result
  }

  return async (method, params) => {
    const body = { jsonrpc: '2.0' as const, id: ++id, method, params }
    for (let attempt = 0; ; attempt++) {
      try {
        return await once(body)
      } catch (error) {
        if (attempt >= options.retryCount || !retryable(error)) throw error
        await Bun.sleep((options.retryDelayMs ?? 150) * 2 ** attempt)
      }
    }
  }
}

/**
 * The post for a public client's own HTTP endpoint, with its timeout and retries; `undefined` for any other
 * transport (a test's custom one), whose requests then go through viem.
 */
export function postFor(publicClient: PublicClient, onRequest?: () => void): JsonRpcPost | undefined {
  const transport = publicClient.transport as { type?: string; url?: string; timeout?: number; retryCount?: number; retryDelay?: number }
  if (transport.type !== 'http' || !transport.url) return undefined
  return createJsonRpcPost({
    url: transport.url,
    timeoutMs: transport.timeout ?? 10_000,
    retryCount: transport.retryCount ?? 3,
    retryDelayMs: transport.retryDelay,
    onRequest,
  })
}
