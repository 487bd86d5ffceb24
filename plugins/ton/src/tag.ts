/**
 * Reading an attribution tag back from a TON transaction, named by its own hash or by the hash of the message that
 * started it (TON Connect's `sendTransaction` answers the signed external message). The transaction is the wallet's
 * own, and its out-messages are what the wallet actually sent. The tag is the comment of one of those: the body
 * of a TON transfer, or the `forward_payload` of a jetton transfer.
 */
import { NotFoundError, type ReadTagParameters, type ReadTagResult } from '@earn/core'
import { Address, type Message, type Transaction } from '@ton/core'
import { askChain, type TonChainClient } from './client.ts'
import { readComment } from './comment.ts'
import { parseJettonTransfer } from './jetton.ts'
import { parseTxHash } from './lookup.ts'

export const TAG_PREFIX = 'earn:v1:'

export async function readTonTag(client: TonChainClient, p: ReadTagParameters): Promise<ReadTagResult> {
  const { tags: _, ...read } = tagOfTransaction(await findWalletTransaction(client, p.txHash))
  return read
}

/**
 * The wallet transaction named by its own hash or by the hash of the external message that started it (what TON
 * Connect's `sendTransaction` reports); 404 when the chain has neither.
 */
export async function findWalletTransaction(client: TonChainClient, txHash: string): Promise<Transaction> {
  const hash = parseTxHash(txHash)
  const tx = await askChain('the transaction', async () => (await client.findTransaction(hash)) ?? (await client.findTransactionByMessage(hash)))
  if (!tx) throw new NotFoundError('no TON transaction with this hash was found', { txHash })
  return tx
}

/** The tag a wallet transaction carries, and the wallet; a transaction of any other kind has no tag. */
export function tagOfTransaction(tx: Transaction): ReadTagResult & { tags: string[] } {
  const found = { txHash: tx.hash().toString('hex'), from: accountOf(tx).toRawString() }
  // What the wallet sent is what its code let through, whatever started the transaction: the owner's signed
  // external message, or an internal one carrying the owner's signed request (a W5 wallet's gasless mode, a relayer
  // paying the fees; an audit found such a deposit unverifiable) or an extension's. The tag is read from the
  // out-messages only (an incoming message's comment was written by whoever sent it), and its MAC names the wallet.
  if (!tx.inMessage) return { tag: null, tags: [], ...found }
  // An aborted transaction rolled back: its action phase sent nothing, so nothing was deposited,
  // even though the signed request (with the tag) is on chain. Out-messages are checked as well,
  // since a skipped send (IGNORE_ERRORS, too little balance) leaves the message out of the list.
  if (tx.description.type !== 'generic' || tx.description.aborted) return { tag: null, tags: [], ...found }
  // Every message's tag, in order (a request funding several streams carries several); the first is the tag.
  const tags = [...tx.outMessages.values()].map(tagOfMessage).filter((tag) => tag !== null)
  return { tag: tags[0] ?? null, tags, ...found }
}

/** The attribution tag a message carries: its comment, or a jetton transfer's forward payload's. */
export function tagOfMessage(message: Message): string | null {
  if (message.info.type !== 'internal') return null
  const transfer = parseJettonTransfer(message.body)
  const text = transfer ? transfer.forwardPayload && readComment(transfer.forwardPayload) : readComment(message.body)
  return text?.startsWith(TAG_PREFIX) ? text : null
}

/** The account whose transaction this is: named by its in-message, else the basechain address of its hash. */
function accountOf(tx: Transaction): Address {
  const dest = tx.inMessage?.info.dest
  if (Address.isAddress(dest)) return dest
  return new Address(0, Buffer.from(tx.address.toString(16).padStart(64, '0'), 'hex'))
}
