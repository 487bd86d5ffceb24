/**
 * The HTTP transport to the Solana RPC. kit's default transport reads an answer whole with the global fetch, so an
 * endpoint streaming megabytes (broken, or a compression bomb) filled memory and held the thread parsing it (an
 * 80 MB answer, ~40 s). This one is kit's, request for request (same headers, integers kept as bigints, identical
 * requests of one tick sent once), with the answer read to at most `MAX_SOLANA_ANSWER_BYTES` and parsed in one pass.
 */
import { inTurn, readBoundedText } from '@earn/core'
import { SOLANA_ERROR__RPC__TRANSPORT_HTTP_ERROR, SolanaError, type RpcTransport } from '@solana/kit'
import { stringifyJsonWithBigInts } from '@solana/rpc-spec-types'
import { AnswerTooLargeError, MalformedAnswerError } from './answers.ts'

/**
 * The plugin's answers are kilobytes (a few accounts, one transaction with its logs, which validators cut at 10 KB),
 * but for a wallet's token accounts, which anyone can open for any owner: read for their amounts alone (balance.ts),
 * ~210 bytes each, 4 MiB holds ~20,000 of one mint (~40 SOL of rent to open); read with their mints, every mint's
 * at once, ~15,000. At the other chains' 10 MiB, an answer
 * of integers, each made a bigint, held the thread ~3 s parsing; at 4 MiB, ~1.2 s at worst.
 */
export const MAX_SOLANA_ANSWER_BYTES = 4 * 1024 * 1024

const INTEGER = /^(-?)(\d+)(?:[eE]\+?(\d+))?$/
/** As kit's `parseJsonWithBigInts` reads an answer (integers bigints, up to 1,000 digits), from the parser's own source text rather than a rewritten copy (~7× faster). */
export function parseAnswer(text: string): unknown {
  try {
    return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) => {
      if (typeof value !== 'number' || context?.source === undefined) return value
      const integer = INTEGER.exec(context.source)
      if (!integer) return value
      const [, sign, digits, exponent] = integer
      if (digits!.length + Number(exponent ?? 0) > 1_000) throw new MalformedAnswerError('the Solana RPC answered an integer of more than 1,000 digits')
      return exponent ? BigInt(sign! + digits!) * 10n ** BigInt(exponent) : BigInt(context.source)
    })
  } catch (e) {
    if (e instanceof MalformedAnswerError) throw e
    // Not JSON, or JSON nested past what a parse with a reviver can walk (a RangeError at ~10,000 levels, 20 KB).
    throw new MalformedAnswerError(`the Solana RPC answered something other than JSON it could be read as (${e instanceof Error ? e.name : 'unreadable'})`)
  }
}

const HEADERS = {
  accept: 'application/json',
  'accept-encoding': 'br,gzip,deflate',
  'content-type': 'application/json; charset=utf-8',
  'solana-client': 'js/8.4.0',
}

/**
 * At most this many requests of one client in flight, the rest waiting their turn inside their own deadline. Every
 * balance is a request of its own (a portfolio makes one per catalog token), and Bun's fetch holds 256 requests in
 * flight for the whole process (core's `inTurn`), another chain's too.
 */
export const SOLANA_IN_FLIGHT = 128

export function httpTransport(url: string): RpcTransport {
  const limit = inTurn(SOLANA_IN_FLIGHT)
  return (({ payload, signal }) => limit(() => send(url, payload, signal), signal)) as RpcTransport
}

async function send(url: string, payload: unknown, signal: AbortSignal | undefined): Promise<unknown> {
  const response = await fetch(url, { method: 'POST', headers: HEADERS, body: stringifyJsonWithBigInts(payload), signal })
  if (!response.ok) {
    await response.body?.cancel().catch(() => {})
    // kit's own error for an HTTP failure, so rpc.ts reads it as the node's (503) as before.
    throw new SolanaError(SOLANA_ERROR__RPC__TRANSPORT_HTTP_ERROR, { headers: response.headers, message: response.statusText, statusCode: response.status })
  }
  const text = await readBoundedText(response, () => new AnswerTooLargeError(`the Solana RPC answered more than ${MAX_SOLANA_ANSWER_BYTES} bytes`), MAX_SOLANA_ANSWER_BYTES)
  return parseAnswer(text)
}

interface Shared {
  readonly response: Promise<unknown>
  readonly controller: AbortController
  consumers: number
}

/**
 * Identical requests made in one tick (the same blockhash or account for concurrent builds) leave as one, as kit's
 * transport does; the shared request is abandoned only when every caller has abandoned it.
 */
export function coalescing(inner: RpcTransport): RpcTransport {
  let tick: Map<string, Shared> | undefined
  return (async ({ payload, signal }) => {
    const { method, params } = payload as { method?: unknown; params?: unknown }
    if (typeof method !== 'string') return inner({ payload, signal })
    signal?.throwIfAborted()
    const key = stringifyJsonWithBigInts([method, params])
    if (!tick) {
      tick = new Map()
      queueMicrotask(() => (tick = undefined))
    }
    let shared = tick.get(key)
    if (!shared) {
      const controller = new AbortController()
      shared = { controller, consumers: 0, response: inner({ payload, signal: controller.signal }) }
      tick.set(key, shared)
    }
    const joined = shared
    joined.consumers++
    if (!signal) return joined.response
    return await new Promise<unknown>((resolve, reject) => {
      const leave = () => {
        signal.removeEventListener('abort', leave)
        if (--joined.consumers === 0) joined.controller.abort(signal.reason)
        reject(signal.reason)
      }
      signal.addEventListener('abort', leave)
      joined.response.then(resolve, reject).finally(() => signal.removeEventListener('abort', leave))
    })
  }) as RpcTransport
}
