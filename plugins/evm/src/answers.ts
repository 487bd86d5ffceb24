/**
 * A node's answers, checked for their method's shape before viem reads them. viem turns a quantity that is not hex
 * into a SyntaxError and a log list that is not one into a TypeError: thrown past its own error classes, they read as
 * this server's fault (a 500) where the node failed, which is a 503 like any chain that does not answer. Only what
 * viem formats or this plugin reads is checked, and a field that is absent or null passes: nodes differ in those.
 */
import { type InTurn, MAX_ANSWER_BYTES, readBoundedText } from '@earn/core'
import { MalformedAnswerError } from './rpc.ts'

type Check = (value: unknown) => boolean

/**
 * Hex data: `0x` and whole bytes. Two checks, not one pattern of byte pairs: JSC gives up on `(?:[0-9a-f]{2})*` past
 * ~2 MB and answers false, so a wallet or token answering megabytes read as the node answering garbage.
 */
export const isHexData = (value: unknown): value is `0x${string}` => typeof value === 'string' && value.length % 2 === 0 && /^0x[0-9a-fA-F]*$/.test(value)

const hexOf = (pattern: RegExp): Check => (v) => typeof v === 'string' && pattern.test(v)
const quantity = hexOf(/^0x[0-9a-fA-F]{1,64}$/)
const data = hexOf(/^0x[0-9a-fA-F]*$/)
const address = hexOf(/^0x[0-9a-fA-F]{40}$/)
const hash = hexOf(/^0x[0-9a-fA-F]{64}$/)
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const orNull = (check: Check): Check => (v) => v === null || check(v)
const arrayOf = (check: Check): Check => (v) => Array.isArray(v) && v.every(check)
const log: Check = (v) => isObject(v) && address(v.address) && data(v.data) && arrayOf(hash)(v.topics)

/** Fields of blocks, transactions, receipts, logs, simulated calls and trace frames, wherever they appear. */
const FIELDS: Record<string, Check> = Object.fromEntries([
  ...[
    'number', 'timestamp', 'gasLimit', 'gasUsed', 'baseFeePerGas', 'blobGasUsed', 'excessBlobGas', 'difficulty',
    'totalDifficulty', 'size', 'blockNumber', 'chainId', 'gas', 'gasPrice', 'maxFeePerGas', 'maxPriorityFeePerGas',
    'maxFeePerBlobGas', 'value', 'v', 'yParity', 'nonce', 'transactionIndex', 'logIndex', 'cumulativeGasUsed',
    'effectiveGasPrice', 'blobGasPrice', 'maxUsedGas',
  ].map((name) => [name, quantity]),
  ...['from', 'to', 'address', 'contractAddress', 'miner'].map((name) => [name, address]),
  ...['hash', 'blockHash', 'transactionHash', 'parentHash'].map((name) => [name, hash]),
  ...['data', 'input', 'output', 'returnData'].map((name) => [name, data]),
  ['logs', arrayOf(log)],
  ['topics', arrayOf(hash)],
  ['calls', Array.isArray],
])

/** The result's own shape per method; methods not named here are left to viem. */
const RESULTS: Record<string, Check> = {
  ...Object.fromEntries(
    ['eth_chainId', 'eth_blockNumber', 'eth_getBalance', 'eth_estimateGas', 'eth_gasPrice', 'eth_maxPriorityFeePerGas', 'eth_getTransactionCount'].map((m) => [m, quantity]),
  ),
  eth_call: data,
  eth_getCode: data,
  eth_getLogs: arrayOf(log),
  eth_getBlockByNumber: orNull(isObject),
  eth_getBlockByHash: orNull(isObject),
  eth_getTransactionByHash: orNull(isObject),
  eth_getTransactionReceipt: orNull(isObject),
  eth_simulateV1: arrayOf(isObject),
  debug_traceTransaction: isObject,
}

/** What is wrong with `result` as an answer to `method`, or undefined. */
export function malformedResult(method: string, result: unknown): string | undefined {
  const check = RESULTS[method]
  if (check && !check(result)) return `${method} answered something other than its result`
  // Depth-first without recursion: a call trace nests as deep as the calls did.
  const stack: unknown[] = [result]
  while (stack.length) {
    const value = stack.pop()
    if (Array.isArray(value)) {
      for (const item of value) if (typeof item === 'object' && item !== null) stack.push(item)
    } else if (isObject(value)) {
      for (const key in value) {
        const field = value[key]
        if (field === null || field === undefined) continue
        const fieldCheck = Object.hasOwn(FIELDS, key) ? FIELDS[key] : undefined
        if (fieldCheck && !fieldCheck(field)) return `${method} answered a ${key} of the wrong form`
        if (typeof field === 'object') stack.push(field)
      }
    }
  }
  return undefined
}

/**
 * What is wrong with a JSON-RPC answer (`text`) to `requestBody` (one request or a batch), or undefined. An answer's
 * error passes: viem reads those as the node's refusals.
 */
export function malformedAnswer(requestBody: string, text: string): string | undefined {
  return inspectAnswer(requestBody, text).problem
}

/**
 * A batch refused for its size names the batch in an error: geth answers `[{id: <first id>, error: "batch too
 * large"}]`, others one error object for the whole, or an error for each request. A revert's reason is a contract's
 * words, not the node's, and a rate limit naming the batch (`method X in batch triggers rate limit`) is not about
 * its size: halving that batch would send more requests to a node asking for fewer.
 */
const NAMES_THE_BATCH = /batch/i
const NOT_ITS_SIZE = /revert|rate.?limit|too many requests|throttl|per second|quota|credits|capacity/i

/** `malformedAnswer`, and whether a batch of two or more was refused for being one (see NAMES_THE_BATCH). */
function inspectAnswer(requestBody: string, text: string): { problem?: string; refusedBatch?: boolean; bare?: boolean } {
  let request: unknown
  let answer: unknown
  try {
    request = JSON.parse(requestBody)
    answer = JSON.parse(text)
  } catch {
    return { problem: 'the answer is not JSON' }
  }
  if (Array.isArray(request) && request.length > 1)
    for (const a of [answer].flat())
      if (isObject(a) && isObject(a.error) && typeof a.error.message === 'string' && NAMES_THE_BATCH.test(a.error.message) && !NOT_ITS_SIZE.test(a.error.message))
        return { refusedBatch: true }
  const methods = new Map<unknown, string>()
  for (const r of [request].flat()) if (isObject(r) && typeof r.method === 'string') methods.set(r.id, r.method)
  for (const a of [answer].flat()) {
    if (!isObject(a) || !('result' in a || 'error' in a)) return { problem: 'the answer is not a JSON-RPC response' }
    // An error object passes; `"error": null` beside no result is nothing viem can read (a TypeError, a 500).
    if (isObject(a.error)) continue
    if (!('result' in a)) return { problem: 'the answer carries neither a result nor an error object' }
    const method = methods.get(a.id)
    const problem = method === undefined ? undefined : malformedResult(method, a.result)
    if (problem) return { problem }
  }
  // viem pairs a batch's answers with its requests by position once sorted by id: an answer missing or repeated gave
  // each request after it the next one's result (an audit: every balance read as the next address's).
  if (Array.isArray(request)) {
    // A batch of one answered with that one answer bare, as some gateways do: it is the answer, in its array.
    if (request.length === 1 && isObject(answer) && isObject(request[0]) && answer.id === request[0].id) return { bare: true }
    if (!Array.isArray(answer)) {
      // One error for the whole batch is each request's; one result is none of theirs.
      if (!isObject(answer) || !isObject(answer.error) || 'result' in answer) return { problem: 'a batch was answered with one result' }
    } else {
      const asked = new Set(request.map((r: unknown) => (isObject(r) ? r.id : undefined)))
      const answered = new Set(answer.map((a: unknown) => (isObject(a) ? a.id : undefined)))
      if (answer.length !== request.length || answered.size !== answer.length || ![...answered].every((id) => asked.has(id)))
        return { problem: 'a batch was answered with other requests than it held' }
    }
  }
  return {}
}

/** How long a node's refusal of a batch size holds the batches under it. */
export const BATCH_CAP_MS = 10 * 60_000

/** Thrown for a batch the node refused for its size: sent again in smaller ones (checkedFetch). */
class BatchRefusedError extends Error {}

/** The body as text, refused past `maxBytes` as a malformed answer. */
export const boundedText = (response: Response, maxBytes = MAX_ANSWER_BYTES): Promise<string> =>
  readBoundedText(response, () => new MalformedAnswerError(`the answer is over ${maxBytes} bytes`), maxBytes)

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
