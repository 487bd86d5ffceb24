/**
 * A tagged transfer (a reward stream's funding) as one TON Connect request: TON sent to the recipient with
 * the tag as the comment, or a TEP-74 jetton `transfer` asked of the sender's jetton wallet with the tag as
 * the comment in `forward_payload` (as a jetton deposit carries its attribution). TON has no allowances, so
 * there is never an approve. Reading it back is readTransfers.ts.
 */
import { InvalidArgumentError, NATIVE_TOKEN, UnfitRecipientError, type TransferParameters, type UnsignedTransaction } from '@earn/core'
import { type Address, fromNano } from '@ton/core'
import { formatTonAddress, formatTonContract, toTonAddress } from './address.ts'
import type { TonChainClient } from './client.ts'
import { unfitRecipient } from './recipient.ts'
import { commentCell } from './comment.ts'
import { assertCoversTon } from './fees.ts'
import { jettonTransferBody, MAX_COINS } from './jetton.ts'
import { notJetton, ownJettonWallet } from './jettonMaster.ts'
import { tonConnectRequest, type OutgoingMessage } from './request.ts'
import { assertSendsEnoughTon, JETTON_FORWARD_TON, JETTON_TRANSFER_TON } from './transactions.ts'

export async function buildTonTransfer(client: TonChainClient, p: TransferParameters): Promise<UnsignedTransaction<'transfer'>[]> {
  const from = toTonAddress(p.from, 'from')
  const to = toTonAddress(p.to, 'to')
  if (p.amount <= 0n || p.amount > MAX_COINS)
    throw new InvalidArgumentError('amount is out of range', { amount: `must be between 1 and ${MAX_COINS}` })
  // A treasury that could never move on what it is sent (recipient.ts): the caller says whose mistake it is.
  const recipient = await unfitRecipient(client, to)
  if (recipient.reason) throw new UnfitRecipientError(recipient.reason, recipient.consequence)
  const comment = commentCell(p.tag)
  const request = (message: OutgoingMessage) => tonConnectRequest({ nowMs: client.now(), network: p.chainId, from, messages: [message] })

  if (p.token === NATIVE_TOKEN) {
    assertSendsEnoughTon(p.amount, 'the treasury')
    await assertCoversTon(client, from, { attached: p.amount, what: `the ${fromNano(p.amount)} TON sent` })
    // A treasury wallet never used yet is not deployed: TON sent to it bounceable would come back, and the stream
    // could never be funded. Sent non-bounceable it stays, as between wallets. (A frozen one is refused above.)
    const undeployed = !recipient.deployed
    return [
      {
        type: 'transfer',
        transaction: request({ to, amount: p.amount, body: comment, toUndeployedWallet: undeployed }),
        description: `Send ${fromNano(p.amount)} TON to ${formatTonAddress(to.toRawString())}`,
        metadata: { token: NATIVE_TOKEN, to: formatTonAddress(to.toRawString()), amount: p.amount.toString() },
      },
    ]
  }

  const master = toTonAddress(p.token, 'token')
  const [jettonWallet] = await Promise.all([
    ownJettonWallet(client, master, from, notJetton('token', p.token)).then((wallet) => wallet.address),
    assertCoversTon(client, from, { attached: JETTON_TRANSFER_TON, what: `the ${fromNano(JETTON_TRANSFER_TON)} TON attached to the jetton transfer (what it does not spend comes back)` }),
  ])
  const queryId = BigInt(client.now())
  const body = jettonTransferBody({
    queryId,
    amount: p.amount,
    destination: to,
    responseDestination: from,
    customPayload: null,
    forwardTonAmount: JETTON_FORWARD_TON,
    forwardPayload: comment,
  })
  return [
    {
      type: 'transfer',
      transaction: request({ to: jettonWallet, amount: JETTON_TRANSFER_TON, body }),
      description: `Transfer ${p.amount} base units of jetton ${friendly(master)} to ${formatTonAddress(to.toRawString())}; ${fromNano(JETTON_TRANSFER_TON)} TON is attached for fees and the unspent part comes back`,
      metadata: {
        // Display forms, as the stream shows them: the token a contract (EQ…), the treasury a wallet (UQ…).
        token: formatTonContract(master.toRawString()),
        to: formatTonAddress(to.toRawString()),
        amount: p.amount.toString(),
        jettonWallet: formatTonContract(jettonWallet.toRawString()),
        attachedTon: JETTON_TRANSFER_TON.toString(),
        forwardTonAmount: JETTON_FORWARD_TON.toString(),
        queryId: queryId.toString(),
      },
    },
  ]
}

const friendly = (a: Address) => a.toString({ bounceable: true, urlSafe: true })
