/**
 * Concurrent view calls on one chain, folded into one Multicall3 `aggregate3` eth_call: the balance and allowance
 * reads of many simultaneous builds cost one round trip. viem's client batching does the same, but on the build
 * path its per-call work (generic ABI coding of every sub-call and of the answer, request formatting, a scheduler
 * per call) was the largest share of a build's CPU. The calls here are plain (to, data) pairs, so the aggregate3
 * calldata is assembled as hex and the answer sliced. Each sub-call ends as viem's batched `call` would end it:
 * a failed sub-call throws `RawContractError` with its revert data, empty return data is `undefined`, and an
 * eth_call the chain did not answer fails every call of its batch with the transport's error.
 */
import { BaseError, RawContractError, RpcRequestError, type Address, type Hex, type PublicClient } from 'viem'
import { isHexData } from './answers.ts'
import type { JsonRpcPost } from './post.ts'
import { classifyRpcError, MalformedAnswerError } from './rpc.ts'

export interface CallBatcher {
  /** The call's return data (`undefined` when empty), answered from the next aggregate3 call. */
  call(to: Address, data: Hex): Promise<Hex | undefined>
  /** How many batches have left so far: a call made while it reads n leaves in a later batch than any counted. */
  readonly sent: number
}

export interface CallBatcherOptions {
  /** How long the first call of a batch waits for others. */
  waitMs: number
  /** Calldata bytes of the sub-calls per aggregate3 call; a call that would pass it starts the next batch. */
  maxBytes: number
  /**
   * Where the chain's Multicall3 is, asked once per batch (the answer may come from a one-time probe). `null`: the
   * chain has none there, and each call goes through viem's `call`, which batches deployless.
   */
  multicall3(): Promise<Address | null>
  /** How the aggregate3 eth_call is sent (see `post.ts`); without one, through the public client. */
  post?: JsonRpcPost
  /**
   * Whether a contract is one the operator vouches for (the catalog's vaults and tokens, the swap routers). Calls
   * to any other (a swap's `tokenIn`, named by a caller) go in a batch of their own contract's: one that runs slowly,
   * or past the node's time limit, then delays or fails only the calls that name it. Unset: every call shares one.
   */
  vouched?(to: Address): boolean
}

interface Pending {
  to: Address
  data: Hex
  resolve(data: Hex | undefined): void
  reject(error: unknown): void
}

const AGGREGATE3 = '0x82ad56cb'
const word = (n: number) => n.toString(16).padStart(64, '0')
/** Hex (no 0x) right-padded with zeros to whole 32-byte words, as ABI `bytes` are. */
const padded = (hex: string) => hex + '0'.repeat((64 - (hex.length % 64)) % 64)
// The words every sub-call repeats, made once: the address padding, allowFailure = true, and the offset of callData
// within the tuple (after its three head words).
const ADDRESS_PAD = '0'.repeat(24)
const ALLOW_FAILURE_AND_OFFSET = word(1) + word(0x60)

/** `aggregate3((address target, bool allowFailure, bytes callData)[])` with every call allowed to fail. */
export function encodeAggregate3(calls: readonly { to: Address; data: Hex }[]): Hex {
  const heads: string[] = []
  const tails: string[] = []
  let offset = 32 * calls.length
  for (const c of calls) {
    const body = c.data.slice(2)
    // target, allowFailure and callData's offset, then callData (length and padded bytes).
    const tuple = `${ADDRESS_PAD}${c.to.slice(2).toLowerCase()}${ALLOW_FAILURE_AND_OFFSET}${word(body.length / 2)}${padded(body)}`
    heads.push(word(offset))
    tails.push(tuple)
    offset += tuple.length / 2
  }
  return `${AGGREGATE3}${word(0x20)}${word(calls.length)}${heads.join('')}${tails.join('')}`
}

/**
 * aggregate3's `(bool success, bytes returnData)[]`, checked against the number of calls sent. An answer of another
 * shape (empty: no Multicall3 where one was expected) is the node's fault, not any sub-call's: `MalformedAnswerError`.
 */
export function decodeAggregate3(result: unknown, count: number): { success: boolean; returnData: Hex }[] {
  // Described by its type alone: a node's JSON nested thousands deep overflowed the stack when written out (a 500).
  if (typeof result !== 'string' || !isHexData(result))
    throw new MalformedAnswerError(`eth_call answered ${typeof result === 'string' ? 'a string that is not hex data' : `${result === null ? 'null' : Array.isArray(result) ? 'an array' : `a ${typeof result}`}, not hex data`}`)
  if (result === '0x') throw new MalformedAnswerError('aggregate3 answered no data (no Multicall3 at its address?)')
  const hex = result.slice(2)
  const at = (byte: number) => {
    if (hex.length < (byte + 32) * 2) throw new MalformedAnswerError(`aggregate3 answered ${hex.length / 2} bytes, too few for ${count} results`)
    return Number.parseInt(hex.slice(byte * 2, byte * 2 + 64), 16)
  }
  const array = at(0)
  if (at(array) !== count) throw new MalformedAnswerError(`aggregate3 answered ${at(array)} results for ${count} calls`)
  const start = array + 32
  const results: { success: boolean; returnData: Hex }[] = []
  for (let i = 0; i < count; i++) {
    const tuple = start + at(start + 32 * i)
    const bytes = tuple + at(tuple + 32)
    const length = at(bytes)
    if (hex.length < (bytes + 32 + length) * 2) throw new MalformedAnswerError(`aggregate3 answered ${hex.length / 2} bytes, too few for ${count} results`)
    results.push({ success: at(tuple) === 1, returnData: `0x${hex.slice((bytes + 32) * 2, (bytes + 32 + length) * 2)}` })
  }
  return results
}


/**
 * The node ran the call and it failed as a whole: out of gas or memory, which with every sub-call allowed to fail
 * only something one sub-call did can cause (returning megabytes, say). Not the chain being down.
 */
function failedInExecution(error: unknown): boolean {
  const rpc = error instanceof BaseError ? (error.walk((e) => e instanceof RpcRequestError) as RpcRequestError | null) : null
  return rpc !== null && /gas|oog|memory/i.test(rpc.details)
}

export function createCallBatcher(publicClient: PublicClient, options: CallBatcherOptions): CallBatcher {
  let timer: ReturnType<typeof setTimeout> | undefined
  let sent = 0

  // The calls of a batch come from different requests, and some name contracts their caller chose: one such
  // contract must not fail the others' reads. A batch that fails as a whole is asked again in halves, down to the
  // call alone; a sub-call that failed beside others is asked again alone, since it may only have run short of
  // the gas an earlier sub-call burnt. Honest batches neither fail nor hold failed sub-calls, so cost nothing more.
  const send = async (calls: Pending[]) => {
    try {
      const multicall3 = await options.multicall3()
      if (multicall3 === null) {
        // viem then batches them itself (deployless), and a batch that fails as a whole (one call's return bomb) fails
        // every call in it: such a call is asked again alone. A call's own revert (`RawContractError`, its return
        // data) and a chain that did not answer are final.
        for (const c of calls)
          publicClient.call({ to: c.to, data: c.data }).then(
            (r) => c.resolve(r.data),
            (error: unknown) =>
              classifyRpcError(error) === 'unavailable' || (error instanceof BaseError && error.walk((e) => e instanceof RawContractError))
                ? c.reject(error)
                : publicClient.call({ to: c.to, data: c.data, batch: false }).then((r) => c.resolve(r.data), c.reject),
          )
        return
      }
      const params = [{ to: multicall3, data: encodeAggregate3(calls) }, 'latest'] as const
      let answer: unknown
      try {
        answer = await (options.post ? options.post('eth_call', [...params]) : publicClient.request({ method: 'eth_call', params: [...params] }))
      } catch (error) {
        // aggregate3 with every call allowed to fail cannot revert as a whole: a node saying so failed, as one that
        // did not answer, and no contract in the batch refused anything (read as one, a 400 blamed the client's token).
        if (!failedInExecution(error))
          throw classifyRpcError(error) === 'refused' ? new MalformedAnswerError(`aggregate3 failed as a whole without running out of gas or memory (${error instanceof BaseError ? error.shortMessage : 'no reason'})`) : error
        if (calls.length === 1) return calls[0]!.reject(new RawContractError({ data: '0x' }))
        const half = calls.length >> 1
        void send(calls.slice(0, half))
        void send(calls.slice(half))
        return
      }
      const results = decodeAggregate3(answer, calls.length)
      for (let i = 0; i < calls.length; i++) {
        const { success, returnData } = results[i]!
        if (success) calls[i]!.resolve(returnData === '0x' ? undefined : returnData)
        else if (calls.length > 1) void send([calls[i]!])
        else calls[i]!.reject(new RawContractError({ data: returnData }))
      }
    } catch (error) {
      for (const c of calls) c.reject(error)
    }
  }

  // Every batch that has not left, the vouched calls' under '' and each other contract's under its address.
  const batches = new Map<string, { calls: Pending[]; bytes: number }>()
  const leave = (key: string) => {
    const b = batches.get(key)!
    batches.delete(key)
    sent++
    void send(b.calls)
  }
  const flush = () => {
    clearTimeout(timer)
    timer = undefined
    for (const key of [...batches.keys()]) leave(key)
  }

  return {
    get sent() {
      return sent
    },
    call(to, data) {
      return new Promise((resolve, reject) => {
        const size = (data.length - 2) / 2
        const key = options.vouched === undefined || options.vouched(to) ? '' : to.toLowerCase()
        let b = batches.get(key)
        if (b && b.bytes + size > options.maxBytes) {
          leave(key)
          b = undefined
        }
        if (!b) batches.set(key, (b = { calls: [], bytes: 0 }))
        b.calls.push({ to, data, resolve, reject })
        b.bytes += size
        timer ??= setTimeout(flush, options.waitMs)
      })
    },
  }
}
