/**
 * Tagged transfers (a reward stream's funding) and reading what a mined transaction moved.
 *
 * An ERC-20 transfer is `transfer(to, amount)` with the tag appended to the calldata, as a deposit carries its
 * attribution tag (the token's ABI decoder ignores the trailing bytes); a native transfer sends the value with
 * the tag as its data. Gas is estimated for each build from the sender (creating a stream is rare, and a
 * measure reused across senders and tokens would buy nothing here), with the policy's headroom; where the
 * estimate fails (the call would revert now) the step takes `TRANSFER_GAS`.
 *
 * Reading reports the ERC-20 `Transfer` events of the receipt (token = the emitting contract) and the
 * transaction's own native value; native value moved by contracts inside the call (a contract wallet's send) is
 * read from a call trace only when asked (`coinMovedInside`). A reverted transaction moved nothing: no transfers and
 * no tag.
 */
import {
  NATIVE_TOKEN,
  InvalidArgumentError,
  type ReadTagParameters,
  type ReadTransfersResult,
  type TokenTransfer,
  type TransferParameters,
  type UnsignedTransaction,
} from '@earn/core'
import { encodeFunctionData, erc20Abi, parseEventLogs, type Address, type Hex, type PublicClient } from 'viem'
import { format, parse } from './address.ts'
import { requirePublicClient, type EvmClient } from './client.ts'
import { describeAmount, tokenLabel, type TokenLabel } from './erc20.ts'
import { withHeadroom, type GasLimitSource } from './gas.ts'
import { attributionOf, minedTransaction } from './readTag.ts'
import { chainUnavailable, classifyRpcError } from './rpc.ts'
import { appendTag } from './tag.ts'

/** Above an ERC-20 transfer to a fresh holder (~52k) and a native send to a contract wallet's fallback. */
export const TRANSFER_GAS = 100_000n
const UINT256_MAX = 2n ** 256n - 1n

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

  const call: Call =
    token === NATIVE_TOKEN
      ? { to, data: appendTag('0x', p.tag), value: p.amount }
      : { to: token, data: appendTag(encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, p.amount] }), p.tag), value: 0n }
  const [label, gas, delivered] = await Promise.all([
    token === NATIVE_TOKEN ? nativeLabel(publicClient) : tokenLabel(client, p.chainId, token),
    gasLimit(publicClient, p.chainId, from, call),
    token === NATIVE_TOKEN ? undefined : simulatedDelivery(client, publicClient, p.chainId, from, call, to),
  ])
  // The recipient must receive the whole amount (a stream's funding is judged by the Transfer logs to it): a fee
  // taken on the way left the stream unconfirmable, its tokens at the treasury.
  if (delivered !== undefined && delivered < p.amount)
    throw new InvalidArgumentError(
      `token ${format(token as Address)} delivers less than it is sent: a transfer of ${p.amount} smallest units would reach ${format(to)} as ${delivered} (a transfer fee); use a token without one`,
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
 * What the transfer's own Transfer logs give `to`, run on the current state where the node can simulate (the
 * sequence gas.ts measures with); undefined where it cannot, or the transfer fails there (the balance preflight
 * has spoken for that).
 */
async function simulatedDelivery(client: EvmClient, publicClient: PublicClient, chainId: string, from: Address, call: Call, to: Address): Promise<bigint | undefined> {
  if (client.state.cannotSimulate.has(chainId)) return undefined
  try {
    const [block] = await publicClient.simulateBlocks({ blocks: [{ calls: [{ from, to: call.to, data: call.data }] }] })
    const result = block?.calls[0]
    if (result?.status !== 'success') return undefined
    return parseEventLogs({ abi: erc20Abi, eventName: 'Transfer', logs: result.logs ?? [], strict: true })
      .filter((log) => log.address.toLowerCase() === call.to && log.args.from.toLowerCase() === from && log.args.to.toLowerCase() === to)
      .reduce((sum, log) => sum + log.args.value, 0n)
  } catch {
    // No simulation here, or it failed: the transfer is built as before, unchecked.
    return undefined
  }
}

export async function readTransfers(client: EvmClient, p: ReadTagParameters): Promise<ReadTransfersResult> {
  const mined = await minedTransaction(client, p)
  const { transaction, receipt } = mined
  const attribution = attributionOf(client, p.chainId, mined)
  const from = attribution.from
  if (receipt.status !== 'success') return { ...attribution, transfers: [] }
  const transfers: TokenTransfer[] = []
  if (transaction.value > 0n && transaction.to)
    transfers.push({ token: NATIVE_TOKEN, from, to: transaction.to.toLowerCase(), amount: transaction.value })
  // strict: a log that only shares the event's signature (ERC-721's Transfer indexes its third argument) is skipped.
  for (const log of parseEventLogs({ abi: erc20Abi, eventName: 'Transfer', logs: receipt.logs, strict: true }))
    transfers.push({ token: log.address.toLowerCase(), from: log.args.from.toLowerCase(), to: log.args.to.toLowerCase(), amount: log.args.value })
  return { ...attribution, transfers }
}

async function gasLimit(publicClient: PublicClient, chainId: string, from: Address, call: Call): Promise<{ gasLimit: bigint; source: GasLimitSource }> {
  try {
    const measured = await publicClient.estimateGas({ account: from, to: call.to, data: call.data, value: call.value })
    return { gasLimit: withHeadroom(measured), source: 'estimated' }
  } catch (error) {
    if (classifyRpcError(error) === 'unavailable') throw chainUnavailable(chainId, error)
    // It would revert now (the sender is short of the token, say); the wallet will say so when it simulates.
    return { gasLimit: TRANSFER_GAS, source: 'default' }
  }
}

const nativeLabel = async (publicClient: PublicClient): Promise<TokenLabel> => ({
  address: NATIVE_TOKEN as Address,
  display: NATIVE_TOKEN as Address,
  symbol: publicClient.chain?.nativeCurrency.symbol ?? 'ETH',
  decimals: publicClient.chain?.nativeCurrency.decimals ?? 18,
})
