import { describe, expect, test } from 'bun:test'
import { Address, beginCell } from '@ton/core'
import { commentCell, readComment } from './comment.ts'
import { JETTON_OP, type JettonTransfer, jettonTransferBody, MAX_COINS, parseInternalTransfer, parseJettonTransfer } from './jetton.ts'

const a = new Address(0, Buffer.alloc(32, 1))
const b = new Address(0, Buffer.alloc(32, 2))
const tag = `earn:v1:${'d'.repeat(36)}:${'a'.repeat(36)}:${'m'.repeat(22)}`
const transfer: JettonTransfer = {
  queryId: 1_700_000_000_000n,
  amount: MAX_COINS,
  destination: a,
  responseDestination: b,
  customPayload: null,
  forwardTonAmount: 10_000_000n,
  forwardPayload: commentCell(tag),
}

describe('TEP-74 transfer', () => {
  test('round-trips, the comment in a ref beside the largest amount', () => {
    const body = jettonTransferBody(transfer)
    expect(body.refs).toHaveLength(1)
    const parsed = parseJettonTransfer(body)!
    expect(parsed.queryId).toBe(transfer.queryId)
    expect(parsed.amount).toBe(MAX_COINS)
    expect(parsed.destination.equals(a)).toBe(true)
    expect(parsed.responseDestination?.equals(b)).toBe(true)
    expect(parsed.forwardTonAmount).toBe(10_000_000n)
    expect(readComment(parsed.forwardPayload!)).toBe(tag)
  })

  test('the tag would not fit inline: the transfer fields and the comment pass 1023 bits', () => {
    const inline = () =>
      beginCell()
        .storeUint(0x0f8a7ea5, 32)
        .storeUint(transfer.queryId, 64)
        .storeCoins(transfer.amount)
        .storeAddress(a)
        .storeAddress(b)
        .storeBit(0)
        .storeCoins(transfer.forwardTonAmount)
        .storeBit(0)
        .storeSlice(commentCell(tag).beginParse())
        .endCell()
    expect(inline).toThrow()
  })

  test('no forward payload, in either branch, is null', () => {
    expect(parseJettonTransfer(jettonTransferBody({ ...transfer, forwardPayload: null }))!.forwardPayload).toBeNull()
  })

  test('other ops and truncated bodies are null', () => {
    expect(parseJettonTransfer(commentCell(tag))).toBeNull()
    expect(parseJettonTransfer(beginCell().storeUint(0x0f8a7ea5, 32).storeUint(0, 64).endCell())).toBeNull()
    expect(parseJettonTransfer(beginCell().endCell())).toBeNull()
  })
})

describe('TEP-74 internal_transfer', () => {
  // As a standard jetton wallet sends it on: the forward payload in a ref, or inline after the Either bit.
  const body = (payload: (b: ReturnType<typeof beginCell>) => unknown) => {
    const cell = beginCell().storeUint(JETTON_OP.internalTransfer, 32).storeUint(7, 64).storeCoins(1_015_002n).storeAddress(a).storeAddress(b).storeCoins(1n)
    payload(cell)
    return cell.endCell()
  }

  test('reads the amount, the sending owner and the forward payload from either branch', () => {
    for (const cell of [body((x) => x.storeBit(1).storeRef(commentCell(tag))), body((x) => x.storeBit(0).storeSlice(commentCell('hi').beginParse()))]) {
      const read = parseInternalTransfer(cell)!
      expect([read.amount, read.from?.equals(a)]).toEqual([1_015_002n, true])
      expect(readComment(read.forwardPayload!)).toBeOneOf([tag, 'hi'])
    }
    expect(parseInternalTransfer(body((x) => x.storeBit(0)))!.forwardPayload).toBeNull()
  })

  test('other ops and truncated bodies are null', () => {
    expect(parseInternalTransfer(jettonTransferBody(transfer))).toBeNull()
    expect(parseInternalTransfer(beginCell().storeUint(JETTON_OP.internalTransfer, 32).storeUint(0, 64).endCell())).toBeNull()
  })
})
