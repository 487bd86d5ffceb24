/**
 * A node's answers, checked for their method's shape before viem reads them. viem turns a quantity that is not hex
 * into a SyntaxError and a log list that is not one into a TypeError: thrown past its own error classes, they read as
 * this server's fault (a 500) where the node failed, which is a 503 like any chain that does not answer. Only what
 * viem formats or this plugin reads is checked, and a field that is absent or null passes: nodes differ in those.
 */
import { MAX_ANSWER_BYTES, readBoundedText } from '@earn/core'
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
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
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
  // A prestate trace (accounts by address, or their `pre` and `post`; no call frame's `type`) writes an account's nonce
  // as a JSON number, as geth does: its reader (transfer.ts storageBeforeAndAfter) checks what it takes. Walked, every
  // stream confirm on a tracing node had been a 503 (an audit).
  if (method === 'debug_traceTransaction' && isObject(result) && !('type' in result)) return undefined
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
export function inspectAnswer(requestBody: string, text: string): { problem?: string; refusedBatch?: boolean; bare?: boolean } {
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

/** The body as text, refused past `maxBytes` as a malformed answer. */
export const boundedText = (response: Response, maxBytes = MAX_ANSWER_BYTES): Promise<string> =>
  readBoundedText(response, () => new MalformedAnswerError(`the answer is over ${maxBytes} bytes`), maxBytes)
