/**
 * What a mined transaction says for attribution (verify, a stream's funding): the tag in its calldata, who sent it,
 * the contract it called and the vault deposits and withdrawals it made. Whether the tag is genuine (its MAC) is the
 * server's question, not the chain's. `minedTransaction` is the read itself; transfer.ts adds the token transfers.
 */
import { InvalidArgumentError, NotFoundError, UnavailableError, type ReadTagParameters, type ReadTagResult, type TokenTransfer, type VaultMove } from '@earn/core'
import {
  BaseError,
  erc20Abi,
  erc4626Abi,
  HttpRequestError,
  RpcRequestError,
  parseEventLogs,
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
  type Hash,
  type Hex,
  type Transaction,
  type TransactionReceipt,
} from 'viem'
import { requirePublicClient, type EvmClient } from './client.ts'
import { ask, chainUnavailable, classifyRpcError } from './rpc.ts'
import { findTag, findTags } from './tag.ts'

export async function readTag(client: EvmClient, p: ReadTagParameters): Promise<ReadTagResult> {
  return attributionOf(client, p.chainId, await minedTransaction(client, p))
}

/** What a mined transaction says for attribution; shared with reading its transfers (transfer.ts). */
export async function attributionOf(client: EvmClient, chainId: string, { transaction, receipt }: MinedTransaction): Promise<ReadTagResult> {
  // A reverted transaction moved nothing, so it attributes nothing: its tag is not reported.
  const mined = receipt.status === 'success'
  const moves = mined ? vaultMoves(receipt) : []
  return {
    tag: mined ? await attributedTag(client, chainId, transaction, moves, erc20Transfers(receipt)) : null,
    txHash: transaction.hash.toLowerCase(),
    from: transaction.from.toLowerCase(),
    to: transaction.to?.toLowerCase() ?? null,
    vaultMoves: moves,
  }
}

/**
 * The tag that counts: the one on the call that moved something, a vault's deposit or withdrawal or a token's
 * transfer, made by the caller the event names.
 *
 * Where the sender made that call itself (an account's own deposit), or nothing moved, the sender wrote the whole
 * input: its tag is the one `findTag` finds. Where a contract wallet made it (a Safe's `execTransaction`, an
 * ERC-4337 bundle, an EIP-7702 relay), the sender is whoever submitted the call the wallet's owner signed, and the
 * wallet ignores whatever the submitter appends: a tag there would claim the wallet's deposit for the submitter's
 * own distributor. Only a trace of the calls shows the one the wallet made; a node that does not trace
 * (`debug_traceTransaction` is often off or paid) leaves the input, which is unambiguous only while it carries one tag.
 */
async function attributedTag(client: EvmClient, chainId: string, transaction: Transaction, moves: VaultMove[], transfers: TokenTransfer[]): Promise<string | null> {
  const tags = findTags(transaction.input)
  if (tags.length === 0) return null
  const movers = [...moves.map((m) => `${m.vault}<${m.caller}`), ...transfers.map((t) => `${t.token}<${t.from}`)]
  const moved = (to: string | null | undefined, from: string) => to != null && movers.includes(`${to.toLowerCase()}<${from.toLowerCase()}`)
  if (movers.length === 0 || moved(transaction.to, transaction.from)) return findTag(transaction.input)
  const calls = await traceCalls(client, chainId, transaction.hash)
  if (calls) return calls.filter((c) => moved(c.to, c.from)).map((c) => findTag(c.input)).find((tag) => tag !== null) ?? null
  if (tags.length === 1) return tags[0]!
  throw new UnavailableError(
    `transaction ${transaction.hash.toLowerCase()} was sent through a contract wallet and carries ${tags.length} attribution tags; telling which one the wallet's own call carried needs a trace, and the RPC for EVM chain ${chainId} does not trace calls (debug_traceTransaction with callTracer)`,
    { chainId, txHash: 'carries several attribution tags; needs an RPC that traces calls' },
  )
}

interface CallFrame {
  from: string
  to?: string
  input: Hex
  error?: string
  calls?: CallFrame[]
}

/** Every call the transaction made that did not fail, in execution order; undefined where the node does not trace. */
async function traceCalls(client: EvmClient, chainId: string, hash: Hash): Promise<CallFrame[] | undefined> {
  const publicClient = requirePublicClient(client, chainId)
  let root: CallFrame
  try {
    root = await publicClient.request<{ Method: 'debug_traceTransaction'; Parameters: [Hash, { tracer: 'callTracer' }]; ReturnType: CallFrame }>({
      method: 'debug_traceTransaction',
      params: [hash, { tracer: 'callTracer' }],
    })
  } catch (error) {
    // The node answered, with an error (no such method, no such tracer, not on this plan): it does not trace.
    const answered = error instanceof BaseError && error.walk((e) => e instanceof RpcRequestError || (e instanceof HttpRequestError && e.status !== undefined && e.status >= 400 && e.status < 500))
    if (answered) return undefined
    if (classifyRpcError(error) === 'unavailable') throw chainUnavailable(chainId, error)
    throw error
  }
  const calls: CallFrame[] = []
  // A failed call's moves were undone, and so were those of every call it made.
  const walk = (frame: CallFrame) => {
    if (frame.error !== undefined) return
    calls.push(frame)
    for (const inner of frame.calls ?? []) walk(inner)
  }
  walk(root)
  return calls
}

/** The ERC-4626 deposits and withdrawals the receipt reports, by the contract that emitted them. */
function vaultMoves(receipt: TransactionReceipt): VaultMove[] {
  // strict: a log that only shares an event's signature but not its indexed layout is skipped.
  return parseEventLogs({ abi: erc4626Abi, eventName: ['Deposit', 'Withdraw'], logs: receipt.logs, strict: true }).map((log) => ({
    kind: log.eventName === 'Deposit' ? 'deposit' : 'withdraw',
    vault: log.address.toLowerCase(),
    // The EIP's Deposit `owner` (who gets the shares) is viem's `receiver`.
    owner: (log.eventName === 'Deposit' ? log.args.receiver : log.args.owner).toLowerCase(),
    caller: log.args.sender.toLowerCase(),
    shares: log.args.shares,
    assets: log.args.assets,
  }))
}

/** The ERC-20 transfers the receipt reports (token = the emitting contract). */
export function erc20Transfers(receipt: TransactionReceipt): TokenTransfer[] {
  if (receipt.status !== 'success') return []
  // strict: a log that only shares the event's signature (ERC-721's Transfer indexes its third argument) is skipped.
  return parseEventLogs({ abi: erc20Abi, eventName: 'Transfer', logs: receipt.logs, strict: true }).map((log) => ({
    token: log.address.toLowerCase(),
    from: log.args.from.toLowerCase(),
    to: log.args.to.toLowerCase(),
    amount: log.args.value,
  }))
}

export interface MinedTransaction {
  transaction: Transaction
  receipt: TransactionReceipt
}

/** The transaction and its receipt; 400 for a malformed hash, 404 when it is unknown or not mined yet. */
export async function minedTransaction(client: EvmClient, p: ReadTagParameters): Promise<MinedTransaction> {
  if (!/^0x[0-9a-fA-F]{64}$/.test(p.txHash))
    throw new InvalidArgumentError('txHash is not an EVM transaction hash', {
      txHash: 'must be 0x followed by 64 hexadecimal characters',
    })
  const hash = p.txHash.toLowerCase() as Hash
  const publicClient = requirePublicClient(client, p.chainId)
  const notFound = (why: string) => new NotFoundError(`transaction not found on chain ${p.chainId}`, { txHash: why })
  // Both asked at once (one round trip); which of them is missing says whether the hash is unknown or pending.
  const [transaction, receipt] = await Promise.allSettled([
    ask(p.chainId, () => publicClient.getTransaction({ hash })),
    ask(p.chainId, () => publicClient.getTransactionReceipt({ hash })),
  ])
  if (transaction.status === 'rejected') {
    if (transaction.reason instanceof TransactionNotFoundError) throw notFound(`no transaction ${hash} on chain ${p.chainId}`)
    throw transaction.reason
  }
  if (receipt.status === 'rejected') {
    // Known to the node but not in a block yet: nothing has happened on chain so far.
    if (receipt.reason instanceof TransactionReceiptNotFoundError) throw notFound(`transaction ${hash} is not mined yet`)
    throw receipt.reason
  }
  return { transaction: transaction.value, receipt: receipt.value }
}
