/**
 * What a wallet's transaction sent, read by its hash (the hash a wallet reports): its out-messages. Each
 * carries TON to its destination (reported as `native`); a TEP-74 `transfer` asked of a jetton wallet is
 * also that jetton moving from the wallet to the transfer's destination (the recipient's owner address, not
 * its jetton wallet). The jetton is the master the jetton wallet names (`get_wallet_data`), and counts only
 * when that master names the same jetton wallet for the sender (`get_wallet_address`): a contract claiming
 * to be some jetton's wallet is not believed.
 *
 * TON is asynchronous: the signed transaction only sends messages, and what they carry moves when the
 * receiver processes them. So every out-message carrying a tag is followed to the transaction that received it (found by the
 * message's hash), and its TON counts unless it bounced: a bounceable message whose receiver aborted (a failing
 * contract, an undeployed address) came back. A non-bounceable one was credited before the receiver's code ran, so
 * it stays, whatever that code did. A jetton transfer goes one hop further: the sender's jetton wallet debits it and sends an
 * `internal_transfer` to the recipient's jetton wallet, which credits it, and the jetton counts only if both ran
 * to the end (a refused debit moved nothing; a failed credit bounces the amount back), for the least of what each
 * hop says it moved (the transfer, the internal transfer, the recipient's notification to its owner). Until a hop has been
 * processed the transaction reads as not found yet (a retry later finds it).
 *
 * The tag is read as readTonTag reads it. An aborted transaction sent nothing: no transfers, no tag.
 */
import { InvalidArgumentError, NATIVE_TOKEN, NotFoundError, type ReadTagParameters, type ReadTransfersResult, type TokenTransfer } from '@earn/core'
import { Address, type Message, type Slice, type Transaction } from '@ton/core'
import { askChain, type TonChainClient } from './client.ts'
import { JETTON_OP, parseJettonTransfer } from './jetton.ts'
import { jettonWalletOf, notJetton, readWalletData, unlessUnavailable } from './jettonMaster.ts'
import { messageCells } from './lookup.ts'
import { findWalletTransaction, tagOfMessage, tagOfTransaction } from './tag.ts'

/**
 * The most tagged out-messages one transaction's read follows. Each costs up to five calls to the endpoint (its
 * receiving transaction, the jetton's wallet data, master and address, the credit hop), and a v5 wallet sends up to
 * 255 messages: an audit's transaction of 255 jetton transfers cost one verify ~1,300 billed calls, on a publishable
 * key, repeatable at will. A TON Connect request carries at most 4 messages on most wallets.
 */
export const MAX_TAGGED_MESSAGES = 16

export async function readTonTransfers(client: TonChainClient, p: ReadTagParameters): Promise<ReadTransfersResult> {
  const tx = await findWalletTransaction(client, p.txHash)
  const { tag, tags, txHash, from } = tagOfTransaction(tx)
  if (!tx.inMessage || aborted(tx))
    return { tag: null, txHash, from, transfers: [] }
  const wallet = Address.parseRaw(from)
  const cells = messageCells(tx).outMessages
  // Only the messages carrying a tag are followed: what verify and stream confirm count is what a tag's own message
  // moved (each transfer names it), and a transaction without one is answered without a call.
  const tagged = [...tx.outMessages].flatMap(([index, message]) => {
    const carried = tagOfMessage(message)
    return carried === null ? [] : [{ index, message, carried }]
  })
  if (tagged.length > MAX_TAGGED_MESSAGES)
    throw new InvalidArgumentError(
      `transaction ${txHash} sends ${tagged.length} messages carrying attribution tags; at most ${MAX_TAGGED_MESSAGES} are read: send deposits, withdrawals and stream fundings in fewer per transaction`,
      { txHash: `more than ${MAX_TAGGED_MESSAGES} tagged messages` },
    )
  const transfers = await Promise.all(
    tagged.map(async ({ index, message, carried }) =>
      (await transfersOf(client, wallet, message, cells.get(index)!.hash().toString('hex'))).map((t) => ({ ...t, tag: carried })),
    ),
  )
  return { tag, tags, txHash, from, transfers: transfers.flat(), transfersTagged: true }
}

async function transfersOf(client: TonChainClient, wallet: Address, message: Message, messageHash: string): Promise<TokenTransfer[]> {
  if (message.info.type !== 'internal') return []
  const dest = message.info.dest
  const received = await askChain('the receiving transaction', () => client.findTransactionByMessage(messageHash))
  if (!received) throw new NotFoundError('the receiver has not processed this transfer yet; retry shortly', { txHash: 'transfer pending' })
  // A bounceable message whose receiver aborted came back (less fees); a non-bounceable one stayed, credited before
  // the receiver's code ran (an undeployed treasury keeps what it is sent that way).
  if (aborted(received) && message.info.bounce) return []
  const coins: TokenTransfer = { token: NATIVE_TOKEN, from: wallet.toRawString(), to: dest.toRawString(), amount: message.info.value.coins }
  const jetton = parseJettonTransfer(message.body)
  if (!jetton) return [coins]
  const master = await masterOf(client, dest)
  if (!master) return [coins]
  const expected = await jettonWalletOf(client, master, wallet, notJetton('token', master.toRawString())).catch(unlessUnavailable)
  if (!expected?.equals(dest) || !ranToTheEnd(received)) return [coins]
  const credit = internalTransferOf(received)
  if (!credit) return [coins]
  const credited = await askChain("the recipient's jetton wallet transaction", () => client.findTransactionByMessage(credit.hash))
  if (!credited)
    throw new NotFoundError("the recipient's jetton wallet has not received this transfer yet; retry shortly", { txHash: 'jetton transfer pending' })
  if (!ranToTheEnd(credited)) return [coins]
  // What each hop says it moved, the least of them: the transfer asked, the sender's jetton wallet passed on (a fee
  // taken as it debits), and the recipient's told its owner it credited (a fee taken as it credits, where its code
  // says so). A wallet code keeping part while telling the whole is not seen here: README.
  const notified = notifiedAmount(credited, jetton.destination)
  const moved = [jetton.amount, credit.amount, ...(notified === null ? [] : [notified])].reduce((a, b) => (b < a ? b : a))
  return [coins, { token: master.toRawString(), from: wallet.toRawString(), to: jetton.destination.toRawString(), amount: moved }]
}

/** The first out-message of `tx` whose body starts with `op`, its cell's hash and the body after the op and query id. */
function outMessageWithOp(tx: Transaction, op: number, to?: Address): { hash: string; rest: Slice } | null {
  const cells = messageCells(tx).outMessages
  for (const [index, message] of tx.outMessages) {
    if (message.info.type !== 'internal' || (to && !message.info.dest.equals(to))) continue
    const body = message.body.beginParse()
    if (body.remainingBits < 32 + 64 || body.loadUint(32) !== op) continue
    body.skip(64)
    return { hash: cells.get(index)!.hash().toString('hex'), rest: body }
  }
  return null
}

/** The `internal_transfer` a sender's jetton wallet sent on (to the recipient's jetton wallet): its hash and amount. */
function internalTransferOf(tx: Transaction): { hash: string; amount: bigint } | null {
  const found = outMessageWithOp(tx, JETTON_OP.internalTransfer)
  if (!found) return null
  try {
    return { hash: found.hash, amount: found.rest.loadCoins() }
  } catch {
    return null
  }
}

/** What the recipient's jetton wallet told its owner it credited (`transfer_notification`), where it told it. */
function notifiedAmount(tx: Transaction, owner: Address): bigint | null {
  const found = outMessageWithOp(tx, JETTON_OP.transferNotification, owner)
  if (!found) return null
  try {
    return found.rest.loadCoins()
  } catch {
    return null
  }
}

/**
 * The receiver's transaction did not run to its end: its code failed, or it has none (an undeployed account).
 * Non-generic transactions (tick-tock, split, merge) never receive an internal message, so they read as aborted.
 */
function aborted(tx: Transaction): boolean {
  return tx.description.type !== 'generic' || tx.description.aborted
}

/** The transaction's computation succeeded and its actions (the messages it sends) were carried out. */
function ranToTheEnd(tx: Transaction): boolean {
  const d = tx.description
  if (d.type !== 'generic' || aborted(tx)) return false
  return d.computePhase.type === 'vm' && d.computePhase.success && (d.actionPhase?.success ?? false)
}

/** The master a jetton wallet names, or null when the contract answers as no jetton wallet does. */
async function masterOf(client: TonChainClient, jettonWallet: Address): Promise<Address | null> {
  const provider = client.provider(jettonWallet)
  try {
    const { stack } = await askChain('the jetton wallet data', () => provider.get('get_wallet_data', []))
    return readWalletData(stack).master
  } catch (e) {
    // A get-method that failed, or a stack of another shape: the contract is not a jetton wallet.
    return unlessUnavailable(e)
  }
}

