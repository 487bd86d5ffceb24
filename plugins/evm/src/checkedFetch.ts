/**
 * The fetch viem's http transport sends the EVM plugin's requests through: answers checked for their methods' shapes
 * (answers.ts) before viem reads them, JSON-RPC batches split where a node answers one badly or refuses it for its
 * size, and each request in its queue's turn (client.ts) until its answer is read.
 */
import { type InTurn, MAX_ANSWER_BYTES } from '@earn/core'
import { boundedText, inspectAnswer, isObject } from './answers.ts'
import { MalformedAnswerError } from './rpc.ts'

/** How long a node's refusal of a batch size holds the batches under it. */
export const BATCH_CAP_MS = 10 * 60_000

/** Thrown for a batch the node refused for its size: sent again in smaller ones (checkedFetch). */
class BatchRefusedError extends Error {}

/**
 * A fetch for viem's http transport that hands it only answers of their methods' shapes; a malformed one is thrown,
 * which viem reports as an `HttpRequestError`: the chain did not answer. A JSON-RPC batch (one tick's requests, from
 * different clients) whose answer is too large or malformed as a whole is sent again one request at a time, so only
 * the request that answers so fails: three verifies of transactions whose receipts carried ~4 MB of logs took the
 * batch past its 10 MiB bound and an honest verify beside them with it (an audit; what runs a client's code, a
 * simulation, a call, never joins a batch: client.ts). Batching stays: without it, hundreds of requests in flight
 * opened a connection each past fetch's pool (a node's listen queue overflowed, verify throughput fell by a third).
 *
 * A batch the node refuses for its size (an HTTP 413, or an error naming the batch) is sent again in halves, and later
 * batches, for BATCH_CAP_MS, leave in pieces no larger than the largest half: nodes cap batches (geth at 1,000,
 * hosted ones at 100, 50, some free tiers at 3), and a batch over the cap failed every request in it.
 */
export function checkedFetch(inner: typeof fetch, limit?: InTurn): typeof fetch {
  const once = checkedOnce(inner)
  // In a queue (client.ts: the chain's lookups, or its calls running a caller's code), each request holds its turn
  // until its whole answer is read, as it holds one of Bun's fetch slots: a node sending headers at once and the body
  // later had hundreds open past the cap.
  const checked = limit
    ? (((input: RequestInfo | URL, init?: RequestInit) => limit(async () => readWhole(await once(input, init)), init?.signal)) as typeof fetch)
    : once
  // The most requests a batch may hold, as far as the node's refusals tell; after BATCH_CAP_MS it is asked again, in
  // case the node's limit was raised (or a refusal was not about the size after all).
  let batchCap = Number.POSITIVE_INFINITY
  let cappedAt = 0
  const refusedForSize = (calls: readonly object[]) => {
    batchCap = Math.min(batchCap, Math.max(1, Math.floor(calls.length / 2)))
    cappedAt = Date.now()
  }
  const currentCap = () => {
    if (batchCap !== Number.POSITIVE_INFINITY && Date.now() - cappedAt > BATCH_CAP_MS) batchCap = Number.POSITIVE_INFINITY
    return batchCap
  }

  const sendBatch = async (input: RequestInfo | URL, init: RequestInit | undefined) => {
    const response = await checked(input, init)
    if (response.status === 413) throw new BatchRefusedError()
    return response
  }

  /** Each call's answer (JSON text), never thrown: what fails, fails as that call's own error. */
  const answerEach = async (input: RequestInfo | URL, init: RequestInit | undefined, calls: readonly Call[]): Promise<string[]> => {
    const cap = currentCap()
    if (calls.length > cap) {
      const pieces: Call[][] = []
      for (let i = 0; i < calls.length; i += cap) pieces.push(calls.slice(i, i + cap))
      return (await Promise.all(pieces.map((piece) => answerEach(input, init, piece)))).flat()
    }
    if (calls.length === 1) return [await answerAlone(input, init, calls[0]!)]
    try {
      const response = await sendBatch(input, { ...init, body: JSON.stringify(calls) })
      if (!response.ok) return calls.map((call) => failed(call, `the RPC answered HTTP ${response.status}`))
      const answers = JSON.parse(await response.text()) as unknown
      // One error for the whole batch is each request's (inspectAnswer let no other single answer through).
      if (!Array.isArray(answers)) return calls.map((call) => JSON.stringify({ ...(answers as object), id: call.id }))
      const byId = new Map(answers.map((a) => [(a as Call).id, JSON.stringify(a)]))
      return calls.map((call) => byId.get(call.id) ?? failed(call, 'the RPC answered the batch without this request'))
    } catch (error) {
      if (error instanceof BatchRefusedError) {
        refusedForSize(calls)
        return answerEach(input, init, calls)
      }
      if (error instanceof MalformedAnswerError) return Promise.all(calls.map((call) => answerAlone(input, init, call)))
      return calls.map((call) => failed(call, 'the RPC did not answer'))
    }
  }
  const answerAlone = async (input: RequestInfo | URL, init: RequestInit | undefined, call: Call): Promise<string> => {
    try {
      const response = await checked(input, { ...init, body: JSON.stringify(call) })
      return response.ok ? await response.text() : failed(call, `the RPC answered HTTP ${response.status}`)
    } catch (alone) {
      return failed(call, alone instanceof MalformedAnswerError ? `the RPC answered with malformed data: ${alone.details ?? alone.shortMessage}` : 'the RPC did not answer')
    }
  }

  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const calls = batchOf(init?.body)
    if (calls === undefined) return checked(input, init)
    let answers: string[] | undefined
    if (calls.length <= currentCap())
      try {
        return await sendBatch(input, init)
      } catch (error) {
        if (error instanceof BatchRefusedError) refusedForSize(calls)
        else if (error instanceof MalformedAnswerError) answers = await Promise.all(calls.map((call) => answerAlone(input, init, call)))
        else throw error
      }
    const each = answers ?? (await answerEach(input, init, calls))
    // Together they must still fit the bound viem holds the batch's answer to: the smallest first, so a request whose
    // answer is megabytes is the one left out (its own failure), never the small ones beside it.
    let room = MAX_ANSWER_BYTES - 1024
    for (const i of each.map((_, i) => i).sort((a, b) => each[a]!.length - each[b]!.length)) {
      room -= each[i]!.length + 1
      if (room < 0) each[i] = failed(calls[i]!, 'the RPC answered with malformed data: the answer is too large to share a batch with others')
    }
    return new Response(`[${each.join(',')}]`, { headers: { 'content-type': 'application/json' } })
  }) as typeof fetch
}

/**
 * An answer whose body has been read: a checked answer's already is; a refusal's is read here, for viem's error
 * message, and past 64 KiB replaced by a line of text (an error page, never an answer to split a batch over; viem
 * keeps the status, which tells a node's refusal from its silence).
 */
async function readWhole(response: Response): Promise<Response> {
  if (response.ok) return response
  const headers = new Headers(response.headers)
  // The body is decoded and rebuilt here: its length and encoding are no longer the node's.
  for (const name of ['content-length', 'content-encoding']) headers.delete(name)
  let text = await boundedText(response, 65_536).catch(() => undefined)
  if (text === undefined) {
    text = 'the refusal came with a body of more than 64 KiB, not kept'
    headers.set('content-type', 'text/plain')
  }
  return new Response(text, { status: response.status, statusText: response.statusText, headers })
}

type Call = { id?: unknown }

/** The calls of a JSON-RPC batch of two or more, else undefined. */
function batchOf(body: unknown): Call[] | undefined {
  if (typeof body !== 'string' || !body.startsWith('[')) return undefined
  try {
    const calls: unknown = JSON.parse(body)
    return Array.isArray(calls) && calls.length > 1 && calls.every(isObject) ? (calls as Call[]) : undefined
  } catch {
    return undefined
  }
}

/** A request that failed on its own, as a node's error for it: neither a revert nor a refusal, so a 503. */
const failed = (call: Call, message: string) => JSON.stringify({ jsonrpc: '2.0', id: call.id, error: { code: -32603, message } })

function checkedOnce(inner: typeof fetch): typeof fetch {
  return (async (input: RequestInfo | URL, init?: RequestInit) => {
    const response = await inner(input, init)
    // viem waits whatever a refusal's Retry-After names before its one retry (an audit: `Retry-After: 3600` held a
    // verify for the hour): without it, viem's own backoff applies, within the request's deadline.
    if (!response.ok && response.headers.has('retry-after')) {
      const headers = new Headers(response.headers)
      headers.delete('retry-after')
      return new Response(response.body, { status: response.status, statusText: response.statusText, headers })
    }
    if (!response.ok) return response
    const text = await boundedText(response)
    const { problem, refusedBatch, bare } = inspectAnswer(typeof init?.body === 'string' ? init.body : '', text)
    if (refusedBatch) throw new BatchRefusedError()
    if (problem) throw new MalformedAnswerError(problem)
    return new Response(bare ? `[${text}]` : text, { status: response.status, statusText: response.statusText, headers: { 'content-type': 'application/json' } })
  }) as typeof fetch
}
