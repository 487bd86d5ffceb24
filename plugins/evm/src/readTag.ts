/**
 * What a mined transaction says for attribution (verify, a stream's funding): the tag in its calldata, who sent it,
 * the contract it called, the vault deposits and withdrawals it made, and the tags on the calls inside it. Whether the tag is genuine (its MAC) is the
 * server's question, not the chain's. `minedTransaction` is the read itself; transfer.ts adds the token transfers.
 */
import { InvalidArgumentError, NATIVE_TOKEN, NotConfirmedYetError, NotFoundError, type ReadTagParameters, type ReadTagResult, type TokenTransfer, type VaultMove } from '@earn/core'
import {
  erc4626Abi,
  parseEventLogs,
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
  type Hash,
  type Hex,
  type PublicClient,
  type Transaction,
  type TransactionReceipt,
} from 'viem'
import { requirePublicClient, type EvmClient } from './client.ts'
import { answeredWithError, ask, chainUnavailable, classifyRpcError } from './rpc.ts'
import { findTag } from './tag.ts'

export async function readTag(client: EvmClient, p: ReadTagParameters): Promise<ReadTagResult> {
  return attributionOf(client, p.chainId, await minedTransaction(client, p))
}

/** What a mined transaction says for attribution; shared with reading its transfers (transfer.ts). */
export function attributionOf(client: EvmClient, chainId: string, { transaction, receipt }: MinedTransaction): ReadTagResult {
  // A reverted transaction moved nothing, so it attributes nothing: its tag is not reported.
  const mined = receipt.status === 'success'
  const trace = lazyTrace(client, chainId, transaction.hash)
  return {
    tag: mined ? findTag(transaction.input) : null,
    txHash: transaction.hash.toLowerCase(),
    from: transaction.from.toLowerCase(),
    to: transaction.to?.toLowerCase() ?? null,
    vaultMoves: mined ? vaultMoves(receipt) : [],
    tagsOn: mined ? callTags(transaction, trace) : async () => [],
    coinMovedInside: mined ? () => coinMovedInside(trace) : async () => [],
  }
}

/** The transaction's call trace, asked of the node once and only when a question needs it. */
function lazyTrace(client: EvmClient, chainId: string, hash: Hash): () => Promise<Trace | undefined> {
  let trace: Promise<Trace | undefined> | undefined
  return () => (trace ??= traceCalls(client, chainId, hash))
}

/** Coin sent by calls inside the transaction: its own value (the root call's) is the transaction's, read apart. */
async function coinMovedInside(trace: () => Promise<Trace | undefined>): Promise<TokenTransfer[] | undefined> {
  const traced = await trace()
  if (!traced) return undefined
  return traced.calls
    .filter((c) => c !== traced.root && c.to && c.value && BigInt(c.value) > 0n)
    .map((c) => ({ token: NATIVE_TOKEN, from: c.from.toLowerCase(), to: c.to!.toLowerCase(), amount: BigInt(c.value!) }))
}

/**
 * The tags on the calls one address made to another in the transaction: what the core holds a move to, since only
 * the caller's own call says whose the move is. The sender's call to the transaction's target is its input, which
 * the sender wrote. Any other call, a contract wallet's (a Safe's `execTransaction`, an ERC-4337 bundle, an
 * EIP-7702 relay), sits inside an input someone else wrote around what the wallet's owner signed: a submitter may
 * append a tag of its own there, or encode the arguments so that the wallet's tag no longer reads as one, and put
 * calls of its own with other tags ahead of the wallet's. Only a trace of the calls shows the wallet's own, so one
 * is asked for (once per read, and only then); a node that gives none leaves it unknown.
 */
function callTags(transaction: Transaction, trace: () => Promise<Trace | undefined>): NonNullable<ReadTagResult['tagsOn']> {
  const sender = transaction.from.toLowerCase()
  const target = transaction.to?.toLowerCase()
  // Each pair's answer once, from the trace's calls grouped once: asked again for every move, the whole trace's input
  // was searched again each time (an audit's 1,200 zero deposits of 3 KB calls held the thread ~90 s for 3 units).
  const answers = new Map<string, Promise<string[] | undefined>>()
  let byPair: Promise<Map<string, Hex[]> | undefined> | undefined
  const pairs = () =>
    (byPair ??= trace().then((traced) => {
      if (!traced) return undefined
      const grouped = new Map<string, Hex[]>()
      for (const c of traced.calls) {
        const key = `${c.from.toLowerCase()}>${c.to?.toLowerCase()}`
        const inputs = grouped.get(key)
        if (inputs) inputs.push(c.input)
        else grouped.set(key, [c.input])
      }
      return grouped
    }))
  return (call) => {
    const from = call.from.toLowerCase()
    const to = call.to.toLowerCase()
    const key = `${from}>${to}`
    let answer = answers.get(key)
    if (!answer) {
      answer = from === sender && to === target ? Promise.resolve(tagsIn([transaction.input])) : pairs().then((grouped) => grouped && tagsIn(grouped.get(key) ?? []))
      answers.set(key, answer)
    }
    return answer
  }
}

const tagsIn = (inputs: Hex[]): string[] => [...new Set(inputs.map(findTag).filter((tag) => tag !== null))]

interface CallFrame {
  type: string
  from: string
  to?: string | null
  input: Hex
  /** Wei sent with the call, hex. */
  value?: string | null
  error?: string | null
  calls?: CallFrame[] | null
}

interface Trace {
  /** The transaction's own call. */
  root: CallFrame
  /** Every plain call that did not fail, the root's included where it is one, in execution order. */
  calls: CallFrame[]
}

/** A node's answer is checked before use: a frame of another shape makes the trace unknown, never a crash. */
function isCallFrame(frame: unknown): frame is CallFrame {
  if (typeof frame !== 'object' || frame === null) return false
  const f = frame as Record<string, unknown>
  return (
    typeof f.type === 'string' &&
    typeof f.from === 'string' &&
    typeof f.input === 'string' &&
    (f.to === undefined || f.to === null || typeof f.to === 'string') &&
    (f.value === undefined || f.value === null || (typeof f.value === 'string' && /^0x[0-9a-fA-F]{1,64}$/.test(f.value))) &&
    (f.calls === undefined || f.calls === null || (Array.isArray(f.calls) && f.calls.every(isCallFrame)))
  )
}

/**
 * Every plain call (CALL: the callee runs as itself) the transaction made that did not fail, in execution order;
 * undefined where the node gives no call trace (no such method or tracer, a plan without it, a result that is no
 * call frame, a refusal of the moment).
 */
async function traceCalls(client: EvmClient, chainId: string, hash: Hash): Promise<Trace | undefined> {
  const publicClient = requirePublicClient(client, chainId)
  let root: unknown
  try {
    root = await publicClient.request<{ Method: 'debug_traceTransaction'; Parameters: [Hash, { tracer: 'callTracer' }]; ReturnType: unknown }>({
      method: 'debug_traceTransaction',
      params: [hash, { tracer: 'callTracer' }],
    })
  } catch (error) {
    // The node answered, with an error: it gives no trace, now or ever; the caller says which calls stay unknown.
    if (answeredWithError(error)) return undefined
    if (classifyRpcError(error) === 'unavailable') throw chainUnavailable(chainId, error)
    throw error
  }
  if (!isCallFrame(root)) return undefined
  const calls: CallFrame[] = []
  // A failed call's moves were undone, and so were those of every call it made.
  const walk = (frame: CallFrame) => {
    // Some nodes write `error: null` (or "") on calls that succeeded.
    if (frame.error) return
    if (frame.type.toUpperCase() === 'CALL') calls.push(frame)
    for (const inner of frame.calls ?? []) walk(inner)
  }
  walk(root)
  return { root, calls }
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

export interface MinedTransaction {
  transaction: Transaction
  receipt: TransactionReceipt
}

/** Refuses what cannot be an EVM transaction hash, before any chain is asked (a 400 while the chain is down, too). */
export function assertTransactionHash(txHash: string): void {
  if (!/^0x[0-9a-fA-F]{64}$/.test(txHash))
    throw new InvalidArgumentError('txHash is not an EVM transaction hash', {
      txHash: 'must be 0x followed by 64 hexadecimal characters',
    })
}

/** The transaction and its receipt; 400 for a malformed hash, 404 when it is unknown or not mined yet. */
export async function minedTransaction(client: EvmClient, p: ReadTagParameters): Promise<MinedTransaction> {
  assertTransactionHash(p.txHash)
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
  // What the RPC answered is read as viem shaped it; an answer that is not a transaction and its receipt for this hash
  // (a broken or misconfigured endpoint) is the chain's failure, not a verdict.
  if (!isMined(transaction.value, receipt.value, hash)) throw chainUnavailable(p.chainId, new Error('the RPC answered something other than the transaction and its receipt'))
  await confirmedEnough(client, publicClient, p.chainId, receipt.value)
  return { transaction: transaction.value, receipt: receipt.value }
}

/**
 * A transaction counts once its block has the confirmations the operator asks of the chain (`EVM_CONFIRMATIONS`):
 * a reorganisation can drop a block the moment after, and with it a stream's funding, confirmed and active by then
 * and never paid. Until then it is what a transaction not mined yet is: not found on chain, retry.
 */
async function confirmedEnough(client: EvmClient, publicClient: PublicClient, chainId: string, receipt: TransactionReceipt) {
  const needed = client.confirmations(chainId)
  if (needed <= 1) return
  const head = await ask(chainId, () => publicClient.getBlockNumber({ cacheTime: 0 }))
  const has = head >= receipt.blockNumber ? head - receipt.blockNumber + 1n : 0n
  if (has < BigInt(needed))
    throw new NotConfirmedYetError(`transaction not found on chain ${chainId} with the ${needed} confirmations this server waits for`, {
      txHash: `mined in block ${receipt.blockNumber}, ${has} of ${needed} confirmations so far; retry after ${BigInt(needed) - has} more block(s)`,
    })
}

const HEX = /^0x[0-9a-fA-F]*$/
const ADDRESS = /^0x[0-9a-fA-F]{40}$/

function isMined(transaction: unknown, receipt: unknown, hash: Hash): boolean {
  const t = transaction as Partial<Transaction> | null
  const r = receipt as Partial<TransactionReceipt> | null
  if (typeof t !== 'object' || t === null || typeof r !== 'object' || r === null) return false
  return (
    typeof t.hash === 'string' &&
    t.hash.toLowerCase() === hash &&
    typeof t.from === 'string' &&
    ADDRESS.test(t.from) &&
    (t.to === null || t.to === undefined || (typeof t.to === 'string' && ADDRESS.test(t.to))) &&
    typeof t.input === 'string' &&
    HEX.test(t.input) &&
    typeof t.value === 'bigint' &&
    typeof r.transactionHash === 'string' &&
    r.transactionHash.toLowerCase() === hash &&
    // A receipt from before Byzantium (2017) has a state root and no status: mined, its outcome unknown (read as not a success).
    (r.status === 'success' || r.status === 'reverted' || (r.status === null && typeof (r as { root?: unknown }).root === 'string')) &&
    Array.isArray(r.logs)
  )
}
