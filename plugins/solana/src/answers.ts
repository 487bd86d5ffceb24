/**
 * What the node answers, checked before anything reads it. kit types an answer but does not check it, so a broken
 * or misconfigured endpoint (an HTML page, `{}` for a balance, a blockhash missing, a negative balance) would
 * otherwise surface as a TypeError deep in a build (a 500), a transaction that can never land, or a balance
 * believed. An answer that is not what the method returns is the node's failure: `MalformedAnswerError`, which
 * rpc.ts maps to 503 like a node that did not answer. Checked on the parsed JSON, where kit has made every integer
 * a bigint.
 */
import * as kit from '@solana/kit'
import { getBase58Encoder, type RpcTransport } from '@solana/kit'

export class MalformedAnswerError extends Error {
  override name = 'MalformedAnswerError'
}

/** An answer past the transport's bound (transport.ts): the node may be right, and a narrower question fit. */
export class AnswerTooLargeError extends MalformedAnswerError {
  override name = 'AnswerTooLargeError'
}

type Json = Record<string, unknown>
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)
const U64_LIMIT = 2n ** 64n
const isU64 = (v: unknown): boolean => typeof v === 'bigint' && v >= 0n && v < U64_LIMIT
const BASE58 = /^[1-9A-HJ-NP-Za-km-z]+$/
const isBytes58 = (v: unknown, length: number): boolean =>
  typeof v === 'string' && v.length <= 90 && BASE58.test(v) && getBase58Encoder().encode(v).length === length
const isAddress = (v: unknown) => isBytes58(v, 32)
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/
const isBase64Tuple = (v: unknown): boolean => Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && v[0].length % 4 === 0 && BASE64.test(v[0]) && v[1] === 'base64'
const isU64String = (v: unknown): boolean => typeof v === 'string' && /^\d{1,20}$/.test(v) && BigInt(v) < U64_LIMIT
const arrayOf = (v: unknown, item: (x: unknown) => boolean): boolean => Array.isArray(v) && v.every(item)
const optional = (v: unknown, check: (x: unknown) => boolean): boolean => v === undefined || v === null || check(v)
/** `{context, value}`, the shape of every answer read at a commitment. */
const withValue = (check: (value: unknown) => boolean) => (result: unknown) => isObject(result) && check(result.value)

const isAccount = (v: unknown): boolean =>
  v === null || (isObject(v) && isBase64Tuple(v.data) && isAddress(v.owner) && isU64(v.lamports) && typeof v.executable === 'boolean')

/** A token account read for its amount alone (balance.ts: 8 bytes of data, base64). */
/** A token account read for a slice of its data (balance.ts): the slice asked for, whole (every token account is longer). */
const isSliceOf = (length: number) => (v: unknown): boolean =>
  isObject(v) && isAddress(v.pubkey) && isObject(v.account) && isBase64Tuple(v.account.data) && Buffer.from((v.account.data as string[])[0]!, 'base64').length === length
const sliceLength = (config: unknown): number => Number((isObject(config) && isObject(config.dataSlice) && config.dataSlice.length) || 0)

const isTokenBalance = (v: unknown): boolean =>
  isObject(v) && isAddress(v.mint) && optional(v.owner, isAddress) && isObject(v.uiTokenAmount) && isU64String(v.uiTokenAmount.amount)

const isMeta = (v: unknown): boolean =>
  isObject(v) &&
  isU64(v.fee) &&
  arrayOf(v.preBalances, isU64) &&
  arrayOf(v.postBalances, isU64) &&
  optional(v.preTokenBalances, (b) => arrayOf(b, isTokenBalance)) &&
  optional(v.postTokenBalances, (b) => arrayOf(b, isTokenBalance)) &&
  optional(v.loadedAddresses, (a) => isObject(a) && arrayOf(a.writable, isAddress) && arrayOf(a.readonly, isAddress))

/** Each method the plugin calls, and what its result must be (`params` as sent). */
const RESULTS: Readonly<Record<string, (result: unknown, params: readonly unknown[]) => boolean>> = {
  getBalance: withValue(isU64),
  getAccountInfo: withValue(isAccount),
  getSlot: isU64,
  getEpochInfo: (r) => isObject(r) && isU64(r.epoch),
  getGenesisHash: (r) => isBytes58(r, 32),
  getLatestBlockhash: withValue((v) => isObject(v) && isBytes58(v.blockhash, 32) && isU64(v.lastValidBlockHeight)),
  getMultipleAccounts: (r, params) => isObject(r) && Array.isArray(r.value) && Array.isArray(params[0]) && r.value.length === params[0].length && r.value.every(isAccount),
  getTokenAccountsByOwner: (r, params) => withValue((v) => arrayOf(v, isSliceOf(sliceLength(params[2]))))(r),
  getTransaction: (r) => r === null || (isObject(r) && isBase64Tuple(r.transaction) && optional(r.meta, isMeta)),
}

/**
 * The JSON-RPC error codes kit knows. Given another (a provider's -32000 or -32429 for "too many requests", 429), kit's
 * error builder threw a TypeError looking up its message (a 500 for every read while the provider limited us), and a
 * code in the range of kit's codec errors would read as a fault of ours.
 */
const KNOWN_ERROR_CODES = new Set(Object.entries(kit).flatMap(([name, value]) => (name.startsWith('SOLANA_ERROR__JSON_RPC__') && typeof value === 'number' ? [value] : [])))
// A sent transaction's preflight failure, whose `data` kit reads unchecked (a TypeError without it): the plugin sends none.
KNOWN_ERROR_CODES.delete(kit.SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE)

/** A transport that hands kit only answers of the method's shape, and errors of codes it knows (it turns them into its errors). */
export function checkedTransport(inner: RpcTransport): RpcTransport {
  return (async (config) => {
    let response: unknown
    try {
      response = await inner(config)
    } catch (e) {
      // A body that is not JSON (an HTML error page with a 200): the node did not answer.
      if (e instanceof SyntaxError) throw new MalformedAnswerError('the Solana RPC answered something other than JSON')
      throw e
    }
    // Not compared by id: kit's transport shares one answer among identical requests in flight, each with its own id.
    const payload = config.payload as { method?: unknown; params?: unknown }
    if (!isObject(response) || !('result' in response || 'error' in response))
      throw new MalformedAnswerError('the Solana RPC answered something other than a JSON-RPC response')
    if ('error' in response) {
      const { code, message } = (isObject(response.error) ? response.error : {}) as { code?: unknown; message?: unknown }
      // Integers come as bigints here (kit reads the code with Number()).
      if ((typeof code === 'bigint' || typeof code === 'number') && KNOWN_ERROR_CODES.has(Number(code))) return response
      throw new MalformedAnswerError(`the Solana RPC answered ${String(payload.method)} with error ${String(code)} (${String(message).slice(0, 200)}), not one of JSON-RPC's or Solana's`)
    }
    const check = typeof payload.method === 'string' ? RESULTS[payload.method] : undefined
    if (check && !check(response.result, Array.isArray(payload.params) ? payload.params : []))
      throw new MalformedAnswerError(`the Solana RPC answered ${payload.method} with something other than its result`)
    return response
  }) as RpcTransport
}
