/**
 * TEP-74 jetton messages as cells. A jetton is moved by asking one's own jetton wallet to
 * `transfer`; it passes the amount to the receiver's jetton wallet, which tells the receiver with a
 * `transfer_notification` carrying `forward_payload` when `forward_ton_amount` > 0.
 * https://github.com/ton-blockchain/TEPs/blob/master/text/0074-jettons-standard.md
 */
import { type Address, beginCell, type Cell, type Slice } from '@ton/core'

export const JETTON_OP = {
  transfer: 0x0f8a7ea5,
  internalTransfer: 0x178d4519,
  transferNotification: 0x7362d09c,
  excesses: 0xd53276db,
} as const

/** Largest amount a `Coins` field (VarUInteger 16) holds. */
export const MAX_COINS = (1n << 120n) - 1n

export interface JettonTransfer {
  queryId: bigint
  amount: bigint
  destination: Address
  /** Where the unspent TON goes back (`excesses`); the sender, usually. */
  responseDestination: Address | null
  customPayload: Cell | null
  forwardTonAmount: bigint
  /** The payload as one cell, whether it travelled inline or in a ref; null when empty. */
  forwardPayload: Cell | null
}

/**
 * transfer#0f8a7ea5 query_id:uint64 amount:Coins destination:MsgAddress response_destination:MsgAddress
 *   custom_payload:(Maybe ^Cell) forward_ton_amount:Coins forward_payload:(Either Cell ^Cell)
 *
 * The forward payload always goes in a ref (the Either's right branch). An attribution comment is
 * about 100 bytes; with the transfer's ~770 bits it would not fit the 1023 bits of one cell inline,
 * and wallets and explorers read the ref form as well as the inline one.
 */
export function jettonTransferBody(t: JettonTransfer): Cell {
  return beginCell()
    .storeUint(JETTON_OP.transfer, 32)
    .storeUint(t.queryId, 64)
    .storeCoins(t.amount)
    .storeAddress(t.destination)
    .storeAddress(t.responseDestination)
    .storeMaybeRef(t.customPayload)
    .storeCoins(t.forwardTonAmount)
    .storeMaybeRef(t.forwardPayload)
    .endCell()
}

/** Reads `forward_payload:(Either Cell ^Cell)` from either branch, as one cell (null when empty). */
function loadEitherPayload(s: Slice): Cell | null {
  if (s.remainingBits === 0 && s.remainingRefs === 0) return null // some senders omit the Either bit
  if (s.loadBit()) return s.loadRef()
  if (s.remainingBits === 0 && s.remainingRefs === 0) return null
  return beginCell().storeSlice(s).endCell()
}

/** The transfer a body asks for, or null when the body is not a well-formed TEP-74 transfer. Never throws. */
export function parseJettonTransfer(body: Cell): JettonTransfer | null {
  try {
    const s = body.beginParse()
    if (s.remainingBits < 32 || s.loadUint(32) !== JETTON_OP.transfer) return null
    const queryId = s.loadUintBig(64)
    const amount = s.loadCoins()
    const destination = s.loadAddress()
    const responseDestination = s.loadMaybeAddress()
    const customPayload = s.loadMaybeRef()
    const forwardTonAmount = s.loadCoins()
    const forwardPayload = loadEitherPayload(s)
    return { queryId, amount, destination, responseDestination, customPayload, forwardTonAmount, forwardPayload }
  } catch {
    return null
  }
}

/**
 * internal_transfer#178d4519 query_id:uint64 amount:Coins from:MsgAddress response_address:MsgAddress
 *   forward_ton_amount:Coins forward_payload:(Either Cell ^Cell)
 *
 * What a jetton wallet receives from another: `from` is the sending wallet's owner, and the forward payload is the
 * one its owner's `transfer` asked for (where a funding carries its tag). Null when the body is not one. Never throws.
 */
export function parseInternalTransfer(body: Cell): { amount: bigint; from: Address | null; forwardPayload: Cell | null } | null {
  try {
    const s = body.beginParse()
    if (s.remainingBits < 32 || s.loadUint(32) !== JETTON_OP.internalTransfer) return null
    s.skip(64)
    const amount = s.loadCoins()
    const from = s.loadMaybeAddress()
    s.loadMaybeAddress()
    s.loadCoins()
    return { amount, from, forwardPayload: loadEitherPayload(s) }
  } catch {
    return null
  }
}
