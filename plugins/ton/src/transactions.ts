/**
 * Deposit and withdraw steps for TON opportunities, each one TON Connect request with one message:
 *
 * - a TON deposit is a plain transfer to the vault whose body is the attribution comment;
 * - a jetton deposit asks the user's jetton wallet for a TEP-74 `transfer` to the vault, the comment
 *   as `forward_payload`, so the vault's `transfer_notification` carries it;
 * - a withdrawal is the same transfer of the receipt jetton back to the vault.
 *
 * TON has no allowances, so there is never an approve step.
 */
import { type BuildParameters, InvalidArgumentError, type UnsignedTransaction } from '@earn/core'
import { type Address, type Cell, fromNano, toNano } from '@ton/core'
import { formatTonContract, toTonAddress } from './address.ts'
import type { TonChainClient } from './client.ts'
import { commentCell } from './comment.ts'
import { assertCoversTon } from './fees.ts'
import { jettonTransferBody, MAX_COINS } from './jetton.ts'
import { notJetton, ownJettonWallet } from './jettonMaster.ts'
import { tonConnectRequest, type OutgoingMessage } from './request.ts'

/**
 * Sent on with the jettons, so the vault receives a `transfer_notification` (with the comment):
 * without it a vault contract would never hear of the deposit.
 */
export const JETTON_FORWARD_TON = toNano('0.01')
/**
 * TON attached to a jetton transfer: the forward amount, the gas of the sender's and receiver's jetton
 * wallets and the receiver wallet's storage reserve (standard wallet: about 0.05 TON with the forward;
 * others, USDT's among them, differ). What is not spent comes back to the user as `excesses`, so a
 * margin costs nothing; too little would bounce the transfer.
 */
export const JETTON_TRANSFER_TON = toNano('0.1')

/**
 * The least TON a deposit or a stream's funding may carry. The receiver's processing of a message is paid from the
 * message's own value, and one too small to pay it fails there with too little left to bounce back: an audit's 0.0003
 * TON deposit aborted in a wallet vault and was spent (0.001 landed), and a treasury wallet kept or burnt funding of
 * 0.0003 TON that then never confirmed. A vault contract's code may cost more than a wallet's, so the floor leaves room.
 */
export const MIN_TON_SEND = toNano('0.01')

const NATIVE = 'native'

export function assertSendsEnoughTon(amount: bigint, receiver: string): void {
  if (amount < MIN_TON_SEND)
    throw new InvalidArgumentError(`TON sent must be at least ${fromNano(MIN_TON_SEND)} TON: ${receiver} pays for processing it from what it carries, and less can fail there with nothing left to bounce back`, {
      amount: `must be at least ${MIN_TON_SEND} (${fromNano(MIN_TON_SEND)} TON)`,
    })
}

/** What a build needs that takes no chain, parsed; or the 400 the build gives. */
function checked(p: BuildParameters) {
  if (p.kind === 'deposit' && p.mode !== 'direct')
    throw new InvalidArgumentError(`mode ${p.mode} is not available for TON opportunities; deposit the base token directly`, {
      mode: 'must be direct: TON opportunities take their base token only',
    })
  if (p.amount <= 0n || p.amount > MAX_COINS)
    throw new InvalidArgumentError('amount is out of range', { amount: `must be between 1 and ${MAX_COINS}` })
  const owner = toTonAddress(p.owner, 'owner')
  const vault = toTonAddress(p.opportunity.vaultAddress, 'vaultAddress')
  const baseToken = tokenForm(p.opportunity.baseToken, 'baseToken')
  if (p.kind === 'deposit') {
    // A TON vault is credited with what it receives, so only the base token is a deposit.
    if (tokenForm(p.tokenIn, 'tokenIn') !== baseToken)
      throw new InvalidArgumentError(`tokenIn must be the opportunity's base token ${p.opportunity.baseToken}`, {
        tokenIn: `must be ${p.opportunity.baseToken}`,
      })
    // Before the balance preflight: no top-up makes a smaller TON deposit buildable.
    if (baseToken === NATIVE) assertSendsEnoughTon(p.amount, 'the vault')
    return { kind: 'deposit' as const, owner, vault, baseToken, tokenIn: p.tokenIn }
  }
  if (p.tokenOut !== undefined && tokenForm(p.tokenOut, 'tokenOut') !== baseToken)
    throw new InvalidArgumentError(`tokenOut must be the opportunity's base token ${p.opportunity.baseToken}`, {
      tokenOut: `must be ${p.opportunity.baseToken} or omitted`,
    })
  const receipt = tokenForm(p.opportunity.receiptToken, 'receiptToken')
  if (receipt === NATIVE)
    throw new InvalidArgumentError('the opportunity has no receipt jetton to withdraw with', {
      receiptToken: 'must be a jetton master address',
    })
  return { kind: 'withdraw' as const, owner, vault, baseToken, receipt }
}

/** Everything a build would refuse without reading the chain, refused the same way. */
export function checkTonTransactions(_client: TonChainClient, p: BuildParameters): void {
  checked(p)
}

export async function buildTonTransactions(client: TonChainClient, p: BuildParameters): Promise<UnsignedTransaction[]> {
  const c = checked(p)
  const { owner, vault, baseToken } = c
  // Withdrawals carry the tag too: the vault (or its operator) learns which action a return belongs to.
  const comment = p.tag ? commentCell(p.tag) : undefined
  const request = (message: OutgoingMessage) =>
    tonConnectRequest({ nowMs: client.now(), network: p.chainId, from: owner, messages: [message] })

  if (c.kind === 'deposit') {
    if (baseToken === NATIVE) {
      await assertCoversTon(client, owner, { attached: p.amount, what: `the ${fromNano(p.amount)} TON deposited` })
      return [
        {
          type: 'deposit',
          transaction: request({ to: vault, amount: p.amount, body: comment }),
          description: `Send ${fromNano(p.amount)} TON to the vault ${friendly(vault)}`,
          metadata: { token: NATIVE, amount: p.amount.toString() },
        },
      ]
    }
    const t = await jettonTransfer(client, { master: toTonAddress(baseToken), field: 'tokenIn', input: c.tokenIn, owner, vault, amount: p.amount, comment, queryId: queryId(client) })
    return [
      {
        type: 'deposit',
        transaction: request(t.message),
        description: `Transfer ${p.amount} base units of jetton ${friendly(t.master)} to the vault ${friendly(vault)}; ${fromNano(JETTON_TRANSFER_TON)} TON is attached for fees and the unspent part comes back`,
        metadata: t.metadata,
      },
    ]
  }

  const t = await jettonTransfer(client, { master: toTonAddress(c.receipt), field: 'receiptToken', input: p.opportunity.receiptToken, owner, vault, amount: p.amount, comment, queryId: queryId(client) })
  return [
    {
      type: 'withdraw',
      transaction: request(t.message),
      description: `Return ${p.amount} base units of the receipt jetton ${friendly(t.master)} to the vault ${friendly(vault)}; ${fromNano(JETTON_TRANSFER_TON)} TON is attached for fees and the unspent part comes back`,
      metadata: t.metadata,
    },
  ]
}

interface JettonTransferParameters {
  master: Address
  /** The request field the jetton came from, for a 400 that names it. */
  field: string
  input: string
  owner: Address
  vault: Address
  amount: bigint
  comment: Cell | undefined
  queryId: bigint
}

/** The message to the owner's jetton wallet asking it to move `amount` to the vault. */
async function jettonTransfer(client: TonChainClient, t: JettonTransferParameters) {
  const [jettonWallet] = await Promise.all([
    ownJettonWallet(client, t.master, t.owner, notJetton(t.field, t.input)).then((wallet) => wallet.address),
    assertCoversTon(client, t.owner, { attached: JETTON_TRANSFER_TON, what: `the ${fromNano(JETTON_TRANSFER_TON)} TON attached to the jetton transfer (what it does not spend comes back)` }),
  ])
  const body = jettonTransferBody({
    queryId: t.queryId,
    amount: t.amount,
    destination: t.vault,
    responseDestination: t.owner,
    customPayload: null,
    forwardTonAmount: JETTON_FORWARD_TON,
    forwardPayload: t.comment ?? null,
  })
  return {
    master: t.master,
    message: { to: jettonWallet, amount: JETTON_TRANSFER_TON, body },
    metadata: {
      // Shown as every response shows contracts (bounceable), so it compares equal to the opportunity's token.
      token: formatTonContract(t.master.toRawString()),
      amount: t.amount.toString(),
      jettonWallet: formatTonContract(jettonWallet.toRawString()),
      attachedTon: JETTON_TRANSFER_TON.toString(),
      forwardTonAmount: JETTON_FORWARD_TON.toString(),
      queryId: t.queryId.toString(),
    },
  }
}

/** `native`, or the jetton master's raw form: the one spelling tokens are compared in. */
function tokenForm(input: string, field: string): string {
  return input === NATIVE ? NATIVE : toTonAddress(input, field).toRawString()
}

/** Jetton wallets echo it in `excesses` and notifications; the build time in ms tells requests apart. */
const queryId = (client: TonChainClient) => BigInt(client.now())

const friendly = (a: Address) => a.toString({ bounceable: true, urlSafe: true })
