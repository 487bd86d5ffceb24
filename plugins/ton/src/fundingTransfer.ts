/**
 * A tagged transfer (a reward stream's funding) as one TON Connect request: TON sent to the recipient with
 * the tag as the comment, or a TEP-74 jetton `transfer` asked of the sender's jetton wallet with the tag as
 * the comment in `forward_payload` (as a jetton deposit carries its attribution). TON has no allowances, so
 * there is never an approve. Reading it back is readTransfers.ts.
 */
import { InvalidArgumentError, NATIVE_TOKEN, UnfitRecipientError, type TransferParameters, type UnsignedTransaction } from '@earn/core'
import { type Address, fromNano } from '@ton/core'
import { formatTonAddress, formatTonContract, toTonAddress } from './address.ts'
import { askChain, getMethodExitCode, type TonChainClient } from './client.ts'
import { commentCell } from './comment.ts'
import { assertCoversTon } from './fees.ts'
import { jettonTransferBody, MAX_COINS } from './jetton.ts'
import { notJetton, ownJettonWallet } from './jettonMaster.ts'
import { tonConnectRequest, type OutgoingMessage } from './request.ts'
import { JETTON_FORWARD_TON, JETTON_TRANSFER_TON } from './transactions.ts'

/**
 * The recipient must be able to move what it is sent: a jetton wallet or master given for its owner takes a jetton
 * transfer (the jettons land in a wallet it owns, which no standard jetton contract ever sends from) or bounces TON;
 * a frozen account bounces everything. Any other contract is taken at its word.
 */
async function assertCanSpend(client: TonChainClient, to: Address): Promise<void> {
  const provider = client.provider(to)
  const state = await askChain('the recipient account', () => provider.getState())
  if (state.state.type === 'frozen') throw new UnfitRecipientError('is a frozen account')
  if (state.state.type !== 'active') return
  for (const [method, what] of [['get_wallet_data', 'a jetton wallet'], ['get_jetton_data', 'a jetton master']] as const) {
    const answered = await askChain(method, () => provider.get(method, [])).then(
      () => true,
      (e: unknown) => {
        // A get-method this contract does not have fails with an exit code: not a jetton contract.
        if (getMethodExitCode(e) !== undefined) return false
        throw e
      },
    )
    if (answered) throw new UnfitRecipientError(`is ${what}, not a wallet (its owner)`)
  }
}

export async function buildTonTransfer(client: TonChainClient, p: TransferParameters): Promise<UnsignedTransaction<'transfer'>[]> {
  const from = toTonAddress(p.from, 'from')
  const to = toTonAddress(p.to, 'to')
  if (p.amount <= 0n || p.amount > MAX_COINS)
    throw new InvalidArgumentError('amount is out of range', { amount: `must be between 1 and ${MAX_COINS}` })
  await assertCanSpend(client, to)
  const comment = commentCell(p.tag)
  const request = (message: OutgoingMessage) => tonConnectRequest({ nowMs: client.now(), network: p.chainId, from, messages: [message] })

  if (p.token === NATIVE_TOKEN) {
    const [, recipient] = await Promise.all([
      assertCoversTon(client, from, { attached: p.amount, what: `the ${fromNano(p.amount)} TON sent` }),
      askChain('the recipient account', () => client.provider(to).getState()),
    ])
    // A treasury wallet never used yet is not deployed: TON sent to it bounceable would come back, and the stream
    // could never be funded. Sent non-bounceable it stays, as between wallets. (A frozen one is refused above.)
    const undeployed = recipient.state.type === 'uninit'
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
