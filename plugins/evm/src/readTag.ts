/**
 * What a mined transaction says for attribution (verify, a stream's funding): the tag in its calldata, who sent it,
 * the contract it called and the vault deposits and withdrawals it made. Whether the tag is genuine (its MAC) is the
 * server's question, not the chain's. `minedTransaction` is the read itself; transfer.ts adds the token transfers.
 */
import { InvalidArgumentError, NotFoundError, type ReadTagParameters, type ReadTagResult, type VaultMove } from '@earn/core'
import {
  erc4626Abi,
  parseEventLogs,
  TransactionNotFoundError,
  TransactionReceiptNotFoundError,
  type Hash,
  type Transaction,
  type TransactionReceipt,
} from 'viem'
import { requirePublicClient, type EvmClient } from './client.ts'
import { ask } from './rpc.ts'
import { findTag } from './tag.ts'

export async function readTag(client: EvmClient, p: ReadTagParameters): Promise<ReadTagResult> {
  const { transaction, receipt } = await minedTransaction(client, p)
  return attributionOf(transaction, receipt)
}

/** What a mined transaction says for attribution; shared with reading its transfers (transfer.ts). */
export function attributionOf(transaction: Transaction, receipt: TransactionReceipt): ReadTagResult {
  // A reverted transaction moved nothing, so it attributes nothing: its tag is not reported.
  const mined = receipt.status === 'success'
  return {
    tag: mined ? findTag(transaction.input) : null,
    txHash: transaction.hash.toLowerCase(),
    from: transaction.from.toLowerCase(),
    to: transaction.to?.toLowerCase() ?? null,
    vaultMoves: mined ? vaultMoves(receipt) : [],
  }
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

/** The transaction and its receipt; 400 for a malformed hash, 404 when it is unknown or not mined yet. */
export async function minedTransaction(client: EvmClient, p: ReadTagParameters): Promise<{ transaction: Transaction; receipt: TransactionReceipt }> {
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
