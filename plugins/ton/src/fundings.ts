/**
 * Finding stream fundings for core's watch on pending streams (core/src/streams/watch.ts). A funding is a message the
 * creator's wallet sent carrying the stream's tag, and readTransfers reads it by that wallet transaction's hash; what
 * can be listed is where the funding lands. So the look starts there and goes back to the wallet: for TON, the
 * treasury's transactions whose incoming message carries a tag, back one hop to the transaction that sent it; for a
 * jetton, the transactions of the treasury's jetton wallet whose incoming `internal_transfer` carries a tag in its
 * forward payload, back two hops (the creator's jetton wallet debiting, then the wallet that asked it to). Whose tag
 * it is and what moved are left to readTransfers and confirm: a tag is only what makes a transaction worth reading.
 *
 * The cursor is the logical time of the last transaction of that account looked at. Without one (a server's first
 * look) the look covers the account's latest transactions of the last day. At most `MAX_LISTED_TRANSACTIONS` are
 * listed a call and `MAX_FOLLOWED` of them followed back; a busier account is caught up with over the next passes,
 * oldest first. Any call the index or node does not answer is the 503 (askChain), and the watch looks again.
 */
import { NATIVE_TOKEN, type FindFundingsParameters, type FoundFundings } from '@earn/core'
import type { Transaction } from '@ton/core'
import { toTonAddress } from './address.ts'
import { askChain, type TonChainClient } from './client.ts'
import { readComment } from './comment.ts'
import { parseInternalTransfer, parseJettonTransfer } from './jetton.ts'
import { jettonWalletOf, notJetton } from './jettonMaster.ts'
import { IndexUnavailableError, MAX_LISTED_TRANSACTIONS, messageCells } from './lookup.ts'
import { TAG_PREFIX, tagOfMessage } from './tag.ts'
import { MIN_TON_SEND } from './transactions.ts'

/**
 * The most tagged messages one call follows back: each is two calls a hop (the index, then the node), four for a
 * jetton, and the watch then reads each found transaction again (readTransfers). A treasury receives little else
 * tagged than fundings, so a pass's fundings rarely come near it.
 */
export const MAX_FOLLOWED = 16

/** How far back a first look goes: a server restarted within a day still finds the fundings mined while it was down. */
export const FIRST_LOOK_SECONDS = 86_400

export async function findTonFundings(client: TonChainClient, p: FindFundingsParameters): Promise<FoundFundings> {
  const treasury = toTonAddress(p.treasury, 'treasury')
  const native = p.token === NATIVE_TOKEN
  // The treasury's jetton wallet as the master names it: what lands elsewhere is no funding readTransfers counts.
  const account = native ? treasury : await jettonWalletOf(client, toTonAddress(p.token, 'token'), treasury, notJetton('token', p.token))
  const afterLt = cursorLt(p.cursor)
  const window =
    afterLt === undefined
      ? { since: Math.floor(client.now() / 1000) - FIRST_LOOK_SECONDS, limit: MAX_LISTED_TRANSACTIONS }
      : { afterLt, limit: MAX_LISTED_TRANSACTIONS }
  const what = native ? "the treasury's transactions" : "the transactions of the treasury's jetton wallet"
  const listed = await askChain(what, () => client.listTransactions(account, window))
  // Nothing after the cursor: unless the account's latest transaction is the cursor's or later, the cursor is another
  // chain's (a local network or sandbox started over): kept in the store, it had held the look there for good (an
  // audit). Looked at afresh then, as a first look.
  // The node's account state names its latest transaction: one call (the index's own list would be two, with its
  // transactions fetched from the node; a re-audit counted an idle look's calls).
  if (listed.length === 0 && afterLt !== undefined) {
    const { last } = await askChain('the account state', () => client.provider(account).getState())
    if (last === null || last.lt < afterLt) return findTonFundings(client, { ...p, cursor: undefined })
  }
  const followed: string[] = []
  let last = afterLt
  for (const tx of listed) {
    const tagged = native ? taggedTon(tx) : taggedJetton(tx)
    // Cut before the first one over: the next call goes on from it.
    if (tagged !== null && followed.length === MAX_FOLLOWED) break
    if (tagged !== null) followed.push(tagged)
    last = tx.lt
  }
  const wallets = await Promise.all(followed.map((hash) => (native ? sender(client, hash) : jettonSender(client, hash))))
  return {
    txHashes: [...new Set(wallets.filter((hash): hash is string => hash !== null))],
    // '' until the account has a transaction in the window: the next look is a first look again.
    cursor: last === undefined ? '' : last.toString(),
  }
}

/** The logical time a cursor names; anything else (none, '') starts a first look. */
function cursorLt(cursor: string | undefined): bigint | undefined {
  return cursor !== undefined && /^\d{1,20}$/.test(cursor) ? BigInt(cursor) : undefined
}

/**
 * Less than any funding of TON carries: a funding sends at least MIN_TON_SEND, whatever fees its sender's mode takes
 * from it on the way. Tagged dust below it (a stranger's 255 one-nanoton messages in one request) is not followed back:
 * each had cost the look two calls and taken its place among the MAX_FOLLOWED, delaying honest fundings (an audit).
 */
const LEAST_FUNDING = MIN_TON_SEND / 2n

/** The hash of the message a transaction received, where it is an internal message carrying a tag and a funding's TON. */
function taggedTon(tx: Transaction): string | null {
  const message = tx.inMessage
  if (message?.info.type !== 'internal' || message.info.bounced || message.info.value.coins < LEAST_FUNDING || tagOfMessage(message) === null) return null
  return messageCells(tx).inMessage!.hash().toString('hex')
}

/** The hash of the `internal_transfer` a jetton wallet's transaction received, where its forward payload is a tag. */
function taggedJetton(tx: Transaction): string | null {
  const message = tx.inMessage
  if (message?.info.type !== 'internal' || message.info.bounced) return null
  const payload = parseInternalTransfer(message.body)?.forwardPayload
  if (!payload || !readComment(payload)?.startsWith(TAG_PREFIX)) return null
  return messageCells(tx).inMessage!.hash().toString('hex')
}

/** The transaction that sent a message; every internal message has one, so an index without it has not answered. */
async function sendingTransaction(client: TonChainClient, messageHash: string): Promise<Transaction> {
  return askChain('the transaction that sent a message to the treasury', async () => {
    const tx = await client.findSendingTransaction(messageHash)
    if (!tx) throw new IndexUnavailableError('the TON index does not know the transaction that sent a message it holds as received')
    return tx
  })
}

/** The hash of the wallet transaction that sent TON to the treasury. */
async function sender(client: TonChainClient, messageHash: string): Promise<string> {
  return (await sendingTransaction(client, messageHash)).hash().toString('hex')
}

/**
 * The hash of the wallet transaction that asked its jetton wallet for the transfer the treasury's jetton wallet
 * received; null where that jetton wallet moved it for some other reason (no `transfer` asked of it: a mint).
 */
async function jettonSender(client: TonChainClient, messageHash: string): Promise<string | null> {
  const debit = await sendingTransaction(client, messageHash)
  const asked = debit.inMessage
  if (asked?.info.type !== 'internal' || !parseJettonTransfer(asked.body)) return null
  return sender(client, messageCells(debit).inMessage!.hash().toString('hex'))
}
