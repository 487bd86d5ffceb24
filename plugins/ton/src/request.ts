/**
 * The TON Connect `sendTransaction` request: what the integrator hands to `tonConnectUI.sendTransaction`
 * unchanged, and what the wallet shows, signs and sends.
 * https://github.com/ton-blockchain/ton-connect/blob/main/requests-responses.md#sign-and-send-transaction
 */
import type { Address, Cell } from '@ton/core'

/** How long the user has to approve. The wallet refuses the request after it, and signs its external message to expire then too. */
export const VALIDITY_SECONDS = 5 * 60

export const TON_MAINNET = '-239'
export const TON_TESTNET = '-3'

// `type`, not `interface`: UnsignedTransaction.transaction is a Record, which only aliases satisfy.
export type TonConnectMessage = {
  /** Receiver, user-friendly form: bounceable, but for a wallet not deployed yet (a stream treasury, say). */
  address: string
  /** Nanotons, decimal string. */
  amount: string
  /** base64 BoC of the message body. */
  payload?: string
}

export type TonConnectRequest = {
  /** Unix seconds. */
  validUntil: number
  /** The chain the request is for; a wallet on another network refuses it instead of sending there. */
  network: string
  /** The wallet expected to sign, `0:<hex>`; a wallet connected with another account refuses. */
  from: string
  messages: TonConnectMessage[]
}

export interface OutgoingMessage {
  to: Address
  amount: bigint
  body?: Cell
  /** Sent non-bounceable: TON to a wallet not deployed yet stays there (bounceable, it would come back). */
  toUndeployedWallet?: boolean
}

export function tonConnectRequest(p: {
  nowMs: number
  network: string
  from: Address
  messages: OutgoingMessage[]
}): TonConnectRequest {
  return {
    validUntil: Math.floor(p.nowMs / 1000) + VALIDITY_SECONDS,
    network: p.network,
    from: p.from.toRawString(),
    messages: p.messages.map((m) => ({
      // Bounceable: if a contract receiver were not there the TON would come back instead of being stranded.
      address: m.to.toString({ bounceable: !m.toUndeployedWallet, urlSafe: true, testOnly: p.network === TON_TESTNET }),
      amount: m.amount.toString(),
      ...(m.body ? { payload: m.body.toBoc().toString('base64') } : {}),
    })),
  }
}
