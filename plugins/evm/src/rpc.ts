/**
 * Asking a chain can end three ways: an answer, a contract's refusal (it reverted or returned nothing), or no
 * answer at all. viem folds the last two together in places (a failed `verifyHash` is just `false`), and the
 * API must not: a refusal is a bad proof or a bad argument, while no answer is a 503 the client retries.
 */
import { UnavailableError } from '@earn/core'
import {
  AbiDecodingDataSizeTooSmallError,
  AbiDecodingZeroDataError,
  BaseError,
  ContractFunctionZeroDataError,
  HttpRequestError,
  RawContractError,
  RpcError,
  RpcRequestError,
  SocketClosedError,
  TimeoutError,
  WebSocketRequestError,
  type Hex,
  type PublicClient,
} from 'viem'

/** JSON-RPC code for "execution reverted" (EIP-1474 as nodes implement it). */
const EXECUTION_REVERTED = 3

/**
 * How nodes word a call the chain ran and the contract failed: a revert, or an exceptional halt (geth: "out of gas",
 * "invalid opcode", "stack underflow", "invalid jump destination", "return data out of bounds"; anvil names revm's
 * halt reason: "EVM error MemoryOOG", "EVM error OpcodeNotFound", …). The contract answered, with a failure: not a
 * chain that is down. Only halt reasons are named: anvil also says "EVM error" for a forked node's upstream fault.
 */
const EXECUTION_FAILED =
  /revert|out of gas|invalid opcode|invalid jump|stack (?:underflow|overflow|limit)|return data out of bounds|write protection|EVM error (?:\w*OOG|OutOfGas|OpcodeNotFound|Invalid\w*Opcode|InvalidJump|NotActivated|Stack(?:Underflow|Overflow)|OutOfOffset|StateChangeDuringStaticCall|CallNotAllowedInsideStatic|CallTooDeep|OutOfFunds)/i

export type RpcFailure = 'refused' | 'unavailable'

/**
 * The revert data a failed call's error carries (a node's JSON-RPC `error.data`, a Multicall3 sub-call's return),
 * when it says something: at least an error selector. A bare revert is how a contract lacking the function answers.
 */
export function revertData(error: unknown): Hex | undefined {
  if (!(error instanceof BaseError)) return undefined
  const carrier = error.walk((e) => {
    const data = (e as { data?: unknown }).data
    return typeof data === 'string' && /^0x[0-9a-fA-F]{8}/.test(data)
  }) as { data?: Hex } | null
  return carrier?.data
}

/**
 * A node's answer that answers nothing: an eth_call result that is not hex data, or a Multicall3 answer of the wrong
 * shape (empty, short, another number of results). The node failed, as one that did not answer: no contract refused
 * anything, so it must not read as a token that is not one.
 */
export class MalformedAnswerError extends BaseError {
  constructor(details: string) {
    super('the RPC answered with malformed data', { details, name: 'MalformedAnswerError' })
  }
}

/** `refused` when the chain ran the call and the contract said no; `unavailable` when the chain did not answer. */
export function classifyRpcError(error: unknown): RpcFailure | undefined {
  if (!(error instanceof BaseError)) return undefined
  const rpc = error.walk((e) => e instanceof RpcRequestError) as RpcRequestError | null
  // Nodes disagree on the code for a revert or another failed execution (3, -32000, -32603), but all of them name
  // the failure in the text.
  if (rpc) return rpc.code === EXECUTION_REVERTED || EXECUTION_FAILED.test(rpc.details) ? 'refused' : 'unavailable'
  const transport = error.walk(
    (e) =>
      e instanceof HttpRequestError ||
      e instanceof TimeoutError ||
      e instanceof WebSocketRequestError ||
      e instanceof SocketClosedError ||
      e instanceof RpcError ||
      e instanceof MalformedAnswerError,
  )
  if (transport) return 'unavailable'
  // Raised after a successful eth_call: a Multicall3 sub-call that failed, or return data that is empty or short.
  const refusal = error.walk(
    (e) =>
      e instanceof RawContractError ||
      e instanceof ContractFunctionZeroDataError ||
      e instanceof AbiDecodingZeroDataError ||
      e instanceof AbiDecodingDataSizeTooSmallError,
  )
  return refusal ? 'refused' : undefined
}

/**
 * The 503 for a chain that did not answer. Neither its text nor its cause carries the RPC URL (it may hold an
 * API key) or the request body (it may hold a signature): viem puts both in its messages, so only the short
 * message and the node's own details are kept for the logs.
 */
export function chainUnavailable(chainId: string, error: unknown): UnavailableError {
  return new UnavailableError(`the RPC for EVM chain ${chainId} did not answer; try again later`, { chainId }, {
    cause: redact(error),
  })
}

function redact(error: unknown): Error {
  if (!(error instanceof BaseError)) return new Error('chain request failed')
  const cause = new Error([error.shortMessage, error.details].filter(Boolean).join(' '))
  cause.name = error.name
  return cause
}

/**
 * Runs a chain request. No answer becomes `UnavailableError`; a contract's refusal goes to `onRefused`, by default
 * also `UnavailableError`: a request no contract can refuse (a balance, a receipt, the chain id) answered with a revert
 * is the node failing (rethrown as is, it was a 500). Anything else, a bug on our side, is rethrown unchanged.
 */
/**
 * The node answered the request with an error (no such method or tracer, no state that old, a plan without it): it
 * tells nothing, now or ever, where a transport failure is the chain not answering.
 */
export const answeredWithError = (error: unknown): boolean =>
  error instanceof BaseError && error.walk((e) => e instanceof RpcRequestError || (e instanceof HttpRequestError && e.status !== undefined && e.status >= 400 && e.status < 500)) !== null

export async function ask<T>(
  chainId: string,
  request: () => Promise<T>,
  onRefused: (error: unknown) => T = (error) => {
    throw chainUnavailable(chainId, error)
  },
): Promise<T> {
  try {
    return await request()
  } catch (error) {
    const failure = classifyRpcError(error)
    if (failure === 'unavailable') throw chainUnavailable(chainId, error)
    if (failure === 'refused') return onRefused(error)
    throw error
  }
}

/**
 * Confirms the RPC answers and serves the chain we expect, before a check whose failure viem would report as
 * plain `false`. A URL pointing at another chain is worse than none: a contract wallet at the same address there
 * may have another owner.
 */
export async function assertServesChain(client: PublicClient, chainId: string): Promise<void> {
  const served = await ask(chainId, () => client.getChainId())
  if (String(served) !== chainId)
    throw new UnavailableError(`the RPC configured for EVM chain ${chainId} serves chain ${served}`, { chainId })
}
