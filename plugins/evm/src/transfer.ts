/**
 * Tagged transfers (a reward stream's funding) and reading what a mined transaction moved.
 *
 * An ERC-20 transfer is `transfer(to, amount)` with the tag appended to the calldata, as a deposit carries its
 * attribution tag (the token's ABI decoder ignores the trailing bytes); a native transfer sends the value with
 * the tag as its data. Gas is estimated for each build from the sender (creating a stream is rare, and a
 * measure reused across senders and tokens would buy nothing here), with the policy's headroom. A transfer the
 * simulation or the estimate shows reverting is refused (the caller checked the balance first); where the node
 * answers the estimate with neither a revert nor an outage, the step takes `TRANSFER_GAS`.
 *
 * Reading reports the ERC-20 `Transfer` events of the receipt (token = the emitting contract) and the
 * transaction's own native value; native value moved by contracts inside the call (a contract wallet's send) is
 * read from a call trace only when asked (`coinMovedInside`). A reverted transaction moved nothing: no transfers and
 * no tag.
 */
import {
  NATIVE_TOKEN,
  InvalidArgumentError,
  UnfitRecipientError,
  type ReadTagParameters,
  type ReadTransfersResult,
  type TokenTransfer,
  type TransferParameters,
  type UnsignedTransaction,
} from '@earn/core'
import { decodeErrorResult, encodeFunctionData, erc20Abi, hexToBigInt, isHex, parseEventLogs, type Address, type Hex, type PublicClient, type TransactionReceipt } from 'viem'
import { format, parse } from './address.ts'
import { requirePublicClient, type EvmClient } from './client.ts'
import { describeAmount, tokenLabel, type TokenLabel } from './erc20.ts'
import { lacksMethod, noAnswer, withHeadroom, type GasLimitSource } from './gas.ts'
import { attributionOf, minedTransaction } from './readTag.ts'
import { answeredWithError, chainUnavailable, classifyRpcError, revertData } from './rpc.ts'
import { appendTag } from './tag.ts'

/** Above an ERC-20 transfer to a fresh holder (~52k) and a native send to a contract wallet's fallback. */
export const TRANSFER_GAS = 100_000n
const UINT256_MAX = 2n ** 256n - 1n
/** Addresses below this are the zero address and the precompiles (and the room kept for more). */
const LOW_ADDRESSES = 0x10000n

interface Call {
  to: Address
  data: Hex
  value: bigint
}

export async function buildTransfer(client: EvmClient, p: TransferParameters): Promise<UnsignedTransaction<'transfer'>[]> {
  const publicClient = requirePublicClient(client, p.chainId)
  const from = parse(p.from, 'from')
  const to = parse(p.to, 'to')
  const token = p.token === NATIVE_TOKEN ? NATIVE_TOKEN : parse(p.token, 'token')
  if (p.amount <= 0n || p.amount > UINT256_MAX)
    throw new InvalidArgumentError('amount must be greater than zero and fit in 256 bits', { amount: 'must be between 1 and 2^256-1' })
  // Nothing sent to these is ever moved again: an ERC-20 holding its own tokens, the zero address, the precompiles
  // (0x01-0x11, 0x100, and the low range kept for more).
  if (token === to) throw new UnfitRecipientError("is the token's own contract")
  if (BigInt(to) < LOW_ADDRESSES) throw new UnfitRecipientError('is the zero address or a precompile')

  const call: Call =
    token === NATIVE_TOKEN
      ? { to, data: appendTag('0x', p.tag), value: p.amount }
      : { to: token, data: appendTag(encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, p.amount] }), p.tag), value: 0n }
  // Run first: where it ran, its gas is the measure, and no estimate is asked.
  const simulated = token === NATIVE_TOKEN ? undefined : await simulatedDelivery(client, publicClient, p.chainId, from, call, to)
  const delivered = simulated?.delivered
  const [label, gas] = await Promise.all([
    token === NATIVE_TOKEN ? nativeLabel(publicClient) : tokenLabel(client, p.chainId, token),
    simulated ? { gasLimit: withHeadroom(simulated.gasUsed), source: 'estimated' as const } : gasLimit(publicClient, p.chainId, from, call, token),
  ])
  // The recipient must receive the whole amount (a stream's funding is judged by the Transfer logs to it): a fee
  // taken on the way left the stream unconfirmable, its tokens at the treasury.
  if (delivered === 0n)
    throw new InvalidArgumentError(
      `token ${format(token as Address)} moves nothing on transfer: a transfer of ${p.amount} smallest units would bring ${format(to)} none (it returns false, say, or logs no Transfer); use another token`,
      { token: 'moves nothing on transfer' },
    )
  if (delivered !== undefined && delivered < p.amount)
    throw new InvalidArgumentError(
      `token ${format(token as Address)} delivers less than it is sent: a transfer of ${p.amount} smallest units would reach ${format(to)} as ${delivered} (a transfer fee, or balances that move otherwise than its Transfer logs say); use a token without one`,
      { token: 'charges a transfer fee' },
    )
  return [
    {
      type: 'transfer',
      transaction: { to: call.to, data: call.data, value: call.value.toString(), gasLimit: gas.gasLimit.toString(), chainId: Number(p.chainId) },
      description: `Transfer ${describeAmount(p.amount, label)} to ${format(to)}`,
      // Canonical lowercase, as every built transaction's metadata (docs/decisions.md); the description shows EIP-55.
      metadata: { token, to, amount: p.amount.toString(), gasLimitSource: gas.source },
    },
  ]
}

/**
 * What the transfer gives `to`, and the gas it used (at its peak, as gas.ts reads it), run on the current state where
 * the node can simulate; undefined where it cannot. Given is the lesser of its own Transfer logs to `to` (what confirm
 * reads) and what `to`'s balance rose by (what `to` holds after): a token may log the whole amount and credit less (an
 * audit's token took 1% silently, a share-based one rounded a wei away, and both streams went active short). A
 * transfer that fails there is the token's refusal: the caller has checked the balance, and a stream funded by a
 * transfer that cannot land stayed `pending` for good.
 */
async function simulatedDelivery(client: EvmClient, publicClient: PublicClient, chainId: string, from: Address, call: Call, to: Address): Promise<{ delivered: bigint; gasUsed: bigint } | undefined> {
  if (client.state.cannotSimulate.has(chainId)) return undefined
  const balance = { from, to: call.to, data: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [to] }) }
  let result
  let rose: bigint | undefined
  try {
    const [block] = await publicClient.simulateBlocks({ blocks: [{ calls: [balance, { from, to: call.to, data: call.data }, balance] }] })
    result = block?.calls[1]
    const [before, after] = [block?.calls[0], block?.calls[2]]
    if (before?.status === 'success' && after?.status === 'success' && before.data.length === 66 && after.data.length === 66)
      rose = hexToBigInt(after.data) - hexToBigInt(before.data)
  } catch (error) {
    // No answer at all: the chain is down now, and the estimate would wait out the same timeout again (as gas.ts).
    if (noAnswer(error)) throw chainUnavailable(chainId, error)
    // No simulation here (remembered, as gas.ts does), or it refused to run: the estimate below speaks for the transfer.
    if (lacksMethod(error)) client.state.cannotSimulate.add(chainId)
    return undefined
  }
  if (result?.status === 'failure') throw refusedTransfer(call.to, result.data)
  if (result?.status !== 'success') return undefined
  const logged = parseEventLogs({ abi: erc20Abi, eventName: 'Transfer', logs: result.logs ?? [], strict: true })
    .filter((log) => log.address.toLowerCase() === call.to && log.args.from.toLowerCase() === from && log.args.to.toLowerCase() === to)
    .reduce((sum, log) => sum + log.args.value, 0n)
  const delivered = rose !== undefined && rose < logged ? (rose > 0n ? rose : 0n) : logged
  return { delivered, gasUsed: (result as { maxUsedGas?: bigint }).maxUsedGas ?? result.gasUsed }
}

/**
 * The 400 for a transfer the chain would revert now though the balance covers it: the token refuses it (paused, a
 * blocked sender or recipient). `revert` is the revert data, or the error that carries it.
 */
function refusedTransfer(token: string, revert: unknown): InvalidArgumentError {
  const data = typeof revert === 'string' && isHex(revert) ? revert : revertData(revert)
  const said = reasonOf(data)
  const why = said ? `reverts (${said})` : 'reverts'
  // A coin cannot refuse, nor can the sender (a transaction's sender is an account with a key): the recipient, a
  // contract taking no call with data (as the tag is sent), does. A stream's treasury is the operator's to fix.
  if (token === NATIVE_TOKEN)
    return new UnfitRecipientError(`refuses a coin transfer carrying data (the tag): a transfer to it ${why} now`, 'no transaction sending it the native coin can land')
  return new InvalidArgumentError(`a transfer of token ${format(token as Address)} from this sender ${why} now, though its balance covers it (the token is paused, say, or blocks the sender or recipient): no transaction sending it can land`, {
    token: `the transfer ${why}`,
  })
}

/** A revert's reason in a few words: Error(string)'s text, a Panic's code, or a custom error's selector. */
function reasonOf(data: Hex | undefined): string {
  if (!data || data.length < 10) return ''
  try {
    const { errorName, args } = decodeErrorResult({ abi: [], data })
    if (errorName === 'Error') return String(args?.[0] ?? '').replace(/[^\x20-\x7e]/g, '').trim().slice(0, 120)
    if (errorName === 'Panic') return `panic ${String(args?.[0])}`
  } catch {
    // A custom error this server has no ABI for: its selector says which.
  }
  return `custom error ${data.slice(0, 10)}`
}

export async function readTransfers(client: EvmClient, p: ReadTagParameters): Promise<ReadTransfersResult> {
  const mined = await minedTransaction(client, p)
  const { transaction, receipt } = mined
  const attribution = attributionOf(client, p.chainId, mined)
  const from = attribution.from
  const shortfall = (token: string, account: string) => shortfallIn(client, p.chainId, receipt, token, account)
  if (receipt.status !== 'success') return { ...attribution, transfers: [], shortfall }
  const transfers: TokenTransfer[] = []
  if (transaction.value > 0n && transaction.to)
    transfers.push({ token: NATIVE_TOKEN, from, to: transaction.to.toLowerCase(), amount: transaction.value })
  // strict: a log that only shares the event's signature (ERC-721's Transfer indexes its third argument) is skipped.
  for (const log of parseEventLogs({ abi: erc20Abi, eventName: 'Transfer', logs: receipt.logs, strict: true }))
    transfers.push({ token: log.address.toLowerCase(), from: log.args.from.toLowerCase(), to: log.args.to.toLowerCase(), amount: log.args.value })
  return { ...attribution, transfers, shortfall }
}

const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef'

/**
 * `account`'s net of the token's Transfer logs (in less out). A log that is no ERC-20 Transfer (its value not one word)
 * is passed over, as viem's strict parsing passes over it.
 */
export function loggedNet(logs: readonly { address: string; topics: readonly unknown[]; data: string }[], token: string, account: string): bigint {
  const word = `0x${account.slice(2).padStart(64, '0')}`
  let net = 0n
  for (const { address, topics, data } of logs) {
    if (address.toLowerCase() !== token || topics.length !== 3 || topics[0] !== TRANSFER_TOPIC || !/^0x[0-9a-fA-F]{64}$/.test(data)) continue
    const amount = BigInt(data)
    if (String(topics[2]).toLowerCase() === word) net += amount
    if (String(topics[1]).toLowerCase() === word) net -= amount
  }
  return net
}

type StorageOverride = { address: Address; stateDiff: { slot: Hex; value: Hex }[] }[]
const ZERO_WORD = `0x${'0'.repeat(64)}` as Hex
const isWord = (v: unknown): v is Hex => typeof v === 'string' && /^0x[0-9a-fA-F]{1,64}$/.test(v)

/**
 * The storage the transaction found and the storage it left, as state overrides: `found` is the prestate trace (every
 * slot it read or wrote, as it found it), `diff` the same in diff mode (each slot it changed: one absent from `pre`
 * was empty, one absent from `post` was emptied). Read-only slots keep what the transaction saw in both (a rebasing
 * token's ratio, changed earlier in the block, had valued the shares the funding moved at the older one: an audit).
 * Undefined for answers of another shape.
 */
export function storageBeforeAndAfter(found: unknown, diff: unknown): { before: StorageOverride; after: StorageOverride } | undefined {
  const accounts = (v: unknown) => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, { storage?: unknown } | null>) : undefined)
  const storageOf = (account: { storage?: unknown } | null | undefined) => {
    const storage = account?.storage ?? {}
    return typeof storage === 'object' && storage !== null && !Array.isArray(storage) ? (storage as Record<string, unknown>) : undefined
  }
  const seen = accounts(found)
  const pre = accounts((diff as { pre?: unknown } | null)?.pre)
  const post = accounts((diff as { post?: unknown } | null)?.post)
  if (!seen || !pre || !post) return undefined
  const before: StorageOverride = []
  const after: StorageOverride = []
  for (const address of new Set([...Object.keys(seen), ...Object.keys(pre), ...Object.keys(post)])) {
    const [was, changedFrom, changedTo] = [storageOf(seen[address]), storageOf(pre[address]), storageOf(post[address])]
    if (!/^0x[0-9a-fA-F]{40}$/.test(address) || !was || !changedFrom || !changedTo) return undefined
    const b = new Map<string, unknown>(Object.entries(was))
    for (const [slot, value] of Object.entries(changedFrom)) b.set(slot, value)
    // A slot the transaction changed and the found state lacks was empty before it.
    for (const slot of Object.keys(changedTo)) if (!b.has(slot)) b.set(slot, ZERO_WORD)
    const a = new Map(b)
    for (const slot of Object.keys(changedFrom)) a.set(slot, ZERO_WORD)
    for (const [slot, value] of Object.entries(changedTo)) a.set(slot, value)
    if (!b.size) continue
    const override = (m: Map<string, unknown>) => {
      const out: { slot: Hex; value: Hex }[] = []
      for (const [slot, value] of m) {
        if (!/^0x[0-9a-fA-F]{64}$/.test(slot) || !isWord(value)) return undefined
        out.push({ slot: slot as Hex, value })
      }
      return out
    }
    const [ob, oa] = [override(b), override(a)]
    if (!ob || !oa) return undefined
    before.push({ address: address as Address, stateDiff: ob })
    after.push({ address: address as Address, stateDiff: oa })
  }
  return { before, after }
}

/**
 * How much less `account`'s balance of `token` rose by in this transaction than its logs say, by the chain's state: the
 * balance read on the state before the transaction's block with the storage the transaction found, and with the storage
 * it left (prestate traces, whole and in diff mode), in its block's number and time, so other transactions of the block
 * count for nothing. A token logging more
 * than it delivers (a fee switched on after a stream's creation, or charged only at a real gas price; shares rounded
 * down) had a stream confirmed short (an audit); measured over the whole block instead, a rebase or an unwrap beside it
 * refused an honest funding for good, and any other log of the token there switched the measure off (audits).
 * Undefined, so the logs alone count, where the node gives no such trace or state; one that does not answer is a 503.
 */
async function shortfallIn(client: EvmClient, chainId: string, receipt: TransactionReceipt, token: string, account: string): Promise<bigint | undefined> {
  const publicClient = requirePublicClient(client, chainId)
  if (receipt.blockNumber === 0n) return undefined
  const asked = async <T>(request: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await request()
    } catch (error) {
      if (answeredWithError(error) || classifyRpcError(error) === 'refused') return undefined
      if (classifyRpcError(error) === 'unavailable') throw chainUnavailable(chainId, error)
      throw error
    }
  }
  const trace = (diffMode: boolean) =>
    asked(() => publicClient.request({ method: 'debug_traceTransaction', params: [receipt.transactionHash, { tracer: 'prestateTracer', tracerConfig: { diffMode } }] } as never) as Promise<unknown>)
  const [found, diff, block] = await Promise.all([trace(false), trace(true), asked(() => publicClient.getBlock({ blockNumber: receipt.blockNumber }))])
  const storage = storageBeforeAndAfter(found, diff)
  if (!storage || !block) return undefined
  // Read as the transaction ran: in its block (an interest-bearing token's balance grows with the time).
  const balanceWith = (stateOverride: StorageOverride) =>
    asked(() =>
      publicClient.readContract({
        address: token as Address,
        abi: erc20Abi,
        functionName: 'balanceOf',
        args: [account as Address],
        blockNumber: receipt.blockNumber - 1n,
        stateOverride,
        blockOverrides: { number: block.number, time: block.timestamp },
      }),
    )
  const [before, after] = await Promise.all([balanceWith(storage.before), balanceWith(storage.after)])
  if (before === undefined || after === undefined) return undefined
  const shortfall = loggedNet(receipt.logs, token, account) - (after - before)
  return shortfall > 0n ? shortfall : 0n
}

async function gasLimit(publicClient: PublicClient, chainId: string, from: Address, call: Call, token: string): Promise<{ gasLimit: bigint; source: GasLimitSource }> {
  try {
    const measured = await publicClient.estimateGas({ account: from, to: call.to, data: call.data, value: call.value })
    return { gasLimit: withHeadroom(measured), source: 'estimated' }
  } catch (error) {
    const failure = classifyRpcError(error)
    if (failure === 'unavailable') throw chainUnavailable(chainId, error)
    if (failure === 'refused') throw refusedTransfer(token, error)
    // Neither a revert nor an outage (a node's odd answer): built with the default, as the wallet simulates anyway.
    return { gasLimit: TRANSFER_GAS, source: 'default' }
  }
}

const nativeLabel = async (publicClient: PublicClient): Promise<TokenLabel> => ({
  address: NATIVE_TOKEN as Address,
  display: NATIVE_TOKEN as Address,
  symbol: publicClient.chain?.nativeCurrency.symbol ?? 'ETH',
  decimals: publicClient.chain?.nativeCurrency.decimals ?? 18,
})
