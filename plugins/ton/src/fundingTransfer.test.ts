/**
 * Tagged transfers on the TON sandbox: the plugin builds the TON Connect request, a real wallet contract sends
 * exactly its messages, and the wallet's transaction is read back by its hash.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { InvalidAddressError, InvalidArgumentError, NotFoundError, UnfitRecipientError } from '@earn/core'
import { Address, Cell, toNano } from '@ton/core'
import { keyPairFromSeed, type KeyPair } from '@ton/crypto'
import { transferSandbox, type TonSandbox, type TonWallet } from '../../../test/chains/ton.ts'
import { formatTonAddress, formatTonContract } from './address.ts'
import { readTonBalance } from './balance.ts'
import { createTonClient } from './client.ts'
import { commentCell, readComment } from './comment.ts'
import { buildTonTransfer } from './fundingTransfer.ts'
import { jettonTransferBody, parseJettonTransfer } from './jetton.ts'
import { jettonWalletOf, notJetton, ownJettonWallet } from './jettonMaster.ts'
import { messageCells } from './lookup.ts'
import { MAX_TAGGED_MESSAGES, readTonTransfers } from './readTransfers.ts'
import type { TonConnectRequest } from './request.ts'
import { JETTON_TRANSFER_TON, MIN_TON_SEND } from './transactions.ts'

const CHAIN = '-239'
const TAG = 'earn:v1:stream:5b0c1f2e-3d4a-4b5c-8d6e-7f8091a2b3c4:0123456789abcdef0123456789abcdef'

let chain: TonSandbox
let sender: { wallet: TonWallet; keyPair: KeyPair }
let treasury: TonWallet
let jetton: Address

beforeAll(async () => {
  ;({ chain, sender, treasury, jetton } = await transferSandbox({ seed: 51, version: 'v4r2', ton: toNano('5') }))
})

const raw = (a: Address) => a.toRawString()
/** Metadata shows addresses as responses do; transfers read from the chain are raw. */
const rawOf = (shown: unknown) => Address.parse(shown as string).toRawString()
const params = (over: Partial<Parameters<typeof buildTonTransfer>[1]> = {}) => ({
  chainId: CHAIN,
  from: raw(sender.wallet.address),
  token: raw(jetton),
  to: raw(treasury.address),
  amount: 1_015_002n,
  tag: TAG,
  ...over,
})
const send = async (request: TonConnectRequest) => (await chain.sendTonConnect(sender.wallet, sender.keyPair, request)).hash
const jettonBalance = (owner: Address) => readTonBalance(chain.client, { chainId: CHAIN, owner: raw(owner), token: raw(jetton) })
const tonBalance = (owner: Address) => readTonBalance(chain.client, { chainId: CHAIN, owner: raw(owner), token: 'native' })

describe('buildTonTransfer -> send -> readTonTransfers', () => {
  test('a jetton transfer carries the tag as its forward comment; read back, it names the jetton, the sender and the recipient', async () => {
    const [step] = await buildTonTransfer(chain.client, params())
    expect(step!.type).toBe('transfer')
    const request = step!.transaction as TonConnectRequest
    expect(request).toMatchObject({ network: CHAIN, from: raw(sender.wallet.address) })
    const transfer = parseJettonTransfer(Cell.fromBase64(request.messages[0]!.payload!))
    expect(transfer!.amount).toBe(1_015_002n)
    expect(transfer!.destination.equals(treasury.address)).toBe(true)
    expect(readComment(transfer!.forwardPayload!)).toBe(TAG)
    expect(step!.metadata).toMatchObject({ token: formatTonContract(raw(jetton)), to: formatTonAddress(raw(treasury.address)), amount: '1015002' })

    const before = await jettonBalance(treasury.address)
    const hash = await send(request)
    expect(await jettonBalance(treasury.address)).toBe(before + 1_015_002n)
    // The TON attached for fees went to the sender's own jetton wallet; the jetton went to the treasury.
    expect(await readTonTransfers(chain.client, { chainId: CHAIN, txHash: hash })).toEqual({
      txHash: hash,
      tag: TAG, tags: [TAG],
      from: raw(sender.wallet.address),
      transfers: [
        { token: 'native', from: raw(sender.wallet.address), to: rawOf(step!.metadata!.jettonWallet), amount: JETTON_TRANSFER_TON, tag: TAG },
        { token: raw(jetton), from: raw(sender.wallet.address), to: raw(treasury.address), amount: 1_015_002n, tag: TAG },
      ],      transfersTagged: true,
    })
  })

  test('a TON transfer carries the tag as its comment', async () => {
    const [step] = await buildTonTransfer(chain.client, params({ token: 'native', amount: toNano('0.25') }))
    const request = step!.transaction as TonConnectRequest
    expect(readComment(Cell.fromBase64(request.messages[0]!.payload!))).toBe(TAG)
    const hash = await send(request)
    expect(await readTonTransfers(chain.client, { chainId: CHAIN, txHash: hash })).toEqual({
      txHash: hash,
      tag: TAG, tags: [TAG],
      from: raw(sender.wallet.address),
      transfers: [{ token: 'native', from: raw(sender.wallet.address), to: raw(treasury.address), amount: toNano('0.25'), tag: TAG }],
      transfersTagged: true,
    })
  })

  test('TON sent to a contract that fails bounces back and moves nothing; until the receiver has processed it, it reads as not found yet', async () => {
    const failing = Address.parseRaw(`0:${'5f'.repeat(32)}`)
    await chain.placeFailingContract(failing)
    const [step] = await buildTonTransfer(chain.client, params({ token: 'native', to: raw(failing), amount: toNano('0.3') }))
    const before = await tonBalance(sender.wallet.address)
    const sent = await chain.sendTonConnect(sender.wallet, sender.keyPair, step!.transaction as TonConnectRequest)
    const received = sent.transactions.find((tx) => tx.inMessage?.info.dest?.toString() === failing.toString())
    expect(received?.description).toMatchObject({ aborted: true, bouncePhase: { type: 'ok' } })
    // Only fees left the wallet: the 0.3 TON came back.
    expect(before - (await tonBalance(sender.wallet.address))).toBeLessThan(toNano('0.1'))
    expect(await readTonTransfers(chain.client, { chainId: CHAIN, txHash: sent.hash })).toEqual({ txHash: sent.hash, tag: TAG, tags: [TAG], from: raw(sender.wallet.address), transfers: [], transfersTagged: true })

    // An index that has the wallet's transaction but not yet the receiver's.
    const lagging = createTonClient(chain.client.provider, { findTransaction: chain.client.findTransaction, findTransactionByMessage: async () => null })
    const [treasuryStep] = await buildTonTransfer(chain.client, params({ token: 'native', amount: toNano('0.2') }))
    const hash = await send(treasuryStep!.transaction as TonConnectRequest)
    const pending = await readTonTransfers(lagging, { chainId: CHAIN, txHash: hash }).catch((e: unknown) => e)
    expect(pending).toBeInstanceOf(NotFoundError)
    expect((pending as NotFoundError).message).toContain('has not processed this transfer yet')
    expect((await readTonTransfers(chain.client, { chainId: CHAIN, txHash: hash })).transfers).toEqual([
      { token: 'native', from: raw(sender.wallet.address), to: raw(treasury.address), amount: toNano('0.2'), tag: TAG },
    ])
  })

  test('TON to a wallet not deployed yet (a treasury never used) is sent non-bounceable and stays there, though its transaction aborted: it moved', async () => {
    const undeployed = Address.parseRaw(`0:${'6e'.repeat(32)}`)
    const [step] = await buildTonTransfer(chain.client, params({ token: 'native', to: raw(undeployed), amount: toNano('0.4') }))
    const request = step!.transaction as TonConnectRequest
    expect(request.messages[0]!.address).toBe(undeployed.toString({ bounceable: false, urlSafe: true }))
    // To a deployed one, bounceable as ever.
    const [toTreasury] = await buildTonTransfer(chain.client, params({ token: 'native', amount: toNano('0.1') }))
    expect((toTreasury!.transaction as TonConnectRequest).messages[0]!.address).toBe(treasury.address.toString({ bounceable: true, urlSafe: true }))
    const sent = await chain.sendTonConnect(sender.wallet, sender.keyPair, request)
    const received = sent.transactions.find((tx) => tx.inMessage?.info.dest?.toString() === undeployed.toString())
    expect(received?.description).toMatchObject({ aborted: true })
    expect(await tonBalance(undeployed)).toBe(toNano('0.4'))
    expect((await readTonTransfers(chain.client, { chainId: CHAIN, txHash: sent.hash })).transfers).toEqual([
      { token: 'native', from: raw(sender.wallet.address), to: raw(undeployed), amount: toNano('0.4'), tag: TAG },
    ])
  })

  test("a jetton master or a jetton wallet given as the recipient (for its owner) is refused: nothing sent there could move on", async () => {
    const { address: jettonWallet } = await ownJettonWallet(chain.client, jetton, treasury.address, notJetton('token', raw(jetton)))
    await chain.mintJetton(jetton, treasury.address, 1n)
    for (const [to, reason] of [
      [jetton, 'is a jetton master, not a wallet (its owner)'],
      [jettonWallet, 'is a jetton wallet, not a wallet (its owner)'],
    ] as const) {
      for (const token of [raw(jetton), 'native']) {
        const refused = await buildTonTransfer(chain.client, params({ token, to: raw(to) })).catch((e: unknown) => e)
        expect(refused, `${reason} ${token}`).toBeInstanceOf(UnfitRecipientError)
        expect((refused as UnfitRecipientError).reason).toBe(reason)
      }
    }
  })

  test('a jetton transfer asked of a contract that is no jetton wallet moves only its TON', async () => {
    // Sent straight to the treasury wallet, which takes it as a plain message: no jetton moves.
    const body = jettonTransferBody({ queryId: 1n, amount: 10n ** 12n, destination: treasury.address, responseDestination: sender.wallet.address, customPayload: null, forwardTonAmount: 1n, forwardPayload: commentCell(TAG) })
    const request: TonConnectRequest = { validUntil: Math.floor(chain.client.now() / 1000) + 60, network: CHAIN, from: raw(sender.wallet.address), messages: [{ address: treasury.address.toString(), amount: toNano('0.05').toString(), payload: body.toBoc().toString('base64') }] }
    const hash = await send(request)
    expect((await readTonTransfers(chain.client, { chainId: CHAIN, txHash: hash })).transfers).toEqual([
      { token: 'native', from: raw(sender.wallet.address), to: raw(treasury.address), amount: toNano('0.05'), tag: TAG },
    ])
  })
})

describe('following a jetton transfer to the jetton wallet that carries it out', () => {
  test('a transfer the jetton wallet refuses (more than its balance) moves nothing: the jetton stays and the TON bounces back', async () => {
    const [step] = await buildTonTransfer(chain.client, params({ amount: 1n }))
    const request = step!.transaction as TonConnectRequest
    const ownJettonWallet = rawOf(step!.metadata!.jettonWallet)
    const balance = await jettonBalance(sender.wallet.address)
    // The built request, with the amount raised past the balance after the build's own check: signed as asked.
    const body = jettonTransferBody({ queryId: 2n, amount: balance + 1n, destination: treasury.address, responseDestination: sender.wallet.address, customPayload: null, forwardTonAmount: 1n, forwardPayload: commentCell(TAG) })
    const hash = await send({ ...request, messages: [{ ...request.messages[0]!, payload: body.toBoc().toString('base64') }] })
    expect(await jettonBalance(sender.wallet.address)).toBe(balance)
    // The refusal bounced the attached TON back too: nothing moved.
    expect(ownJettonWallet).toBe(raw(await jettonWalletOf(chain.client, jetton, sender.wallet.address, notJetton('token', raw(jetton)))))
    expect((await readTonTransfers(chain.client, { chainId: CHAIN, txHash: hash })).transfers).toEqual([])
  })

  test('until the jetton wallet has processed the transfer, the transaction reads as not found yet', async () => {
    const [step] = await buildTonTransfer(chain.client, params({ amount: 5n }))
    const hash = await send(step!.transaction as TonConnectRequest)
    // An index that has seen the wallet's transaction but not yet the jetton wallet's.
    const lagging = createTonClient(chain.client.provider, { findTransaction: chain.client.findTransaction, findTransactionByMessage: async () => null })
    const pending = await readTonTransfers(lagging, { chainId: CHAIN, txHash: hash }).catch((e: unknown) => e)
    expect(pending).toBeInstanceOf(NotFoundError)
    expect((pending as NotFoundError).message).toContain('has not processed this transfer yet')
    expect((await readTonTransfers(chain.client, { chainId: CHAIN, txHash: hash })).transfers).toContainEqual({
      token: raw(jetton),
      from: raw(sender.wallet.address),
      to: raw(treasury.address),
      amount: 5n,
      tag: TAG,
    })
  })

  test("a transfer the recipient's jetton wallet fails to credit bounces back, and moves only its TON", async () => {
    // A recipient whose jetton wallet address holds a contract that fails every message it receives.
    const recipient = await chain.deployWallet('v4r2', keyPairFromSeed(Buffer.alloc(32, 53)), toNano('1'))
    const recipientJettonWallet = await jettonWalletOf(chain.client, jetton, recipient.address, notJetton('token', raw(jetton)))
    await chain.placeFailingContract(recipientJettonWallet)
    const [step] = await buildTonTransfer(chain.client, params({ to: raw(recipient.address), amount: 9n }))
    const balance = await jettonBalance(sender.wallet.address)
    const sent = await chain.sendTonConnect(sender.wallet, sender.keyPair, step!.transaction as TonConnectRequest)
    const credit = sent.transactions.find((tx) => tx.inMessage?.info.dest?.toString() === recipientJettonWallet.toString())
    expect(credit?.description).toMatchObject({ computePhase: { type: 'vm', success: false, exitCode: 50 } })
    // The sender's jetton wallet debited the amount, then took the bounce back.
    expect(await jettonBalance(sender.wallet.address)).toBe(balance)
    expect((await readTonTransfers(chain.client, { chainId: CHAIN, txHash: sent.hash })).transfers).toEqual([
      { token: 'native', from: raw(sender.wallet.address), to: rawOf(step!.metadata!.jettonWallet), amount: JETTON_TRANSFER_TON, tag: TAG },
    ])
  })

  test("until the recipient's jetton wallet has received the transfer, the transaction reads as not found yet", async () => {
    const [step] = await buildTonTransfer(chain.client, params({ amount: 6n }))
    const sent = await chain.sendTonConnect(sender.wallet, sender.keyPair, step!.transaction as TonConnectRequest)
    const ownJettonWallet = rawOf(step!.metadata!.jettonWallet)
    // An index that has the sender's jetton wallet transaction, but not yet the recipient's jetton wallet's.
    const lagging = createTonClient(chain.client.provider, {
      findTransaction: chain.client.findTransaction,
      findTransactionByMessage: async (hash) => {
        const tx = await chain.client.findTransactionByMessage(hash)
        return tx?.inMessage?.info.dest?.toString() === Address.parseRaw(ownJettonWallet).toString() ? tx : null
      },
    })
    const pending = await readTonTransfers(lagging, { chainId: CHAIN, txHash: sent.hash }).catch((e: unknown) => e)
    expect(pending).toBeInstanceOf(NotFoundError)
    expect((pending as NotFoundError).message).toContain('has not received this transfer yet')
    expect((await readTonTransfers(chain.client, { chainId: CHAIN, txHash: sent.hash })).transfers).toHaveLength(2)
  })

  test('the hash of the signed external message finds the same transaction as its own hash', async () => {
    const [step] = await buildTonTransfer(chain.client, params({ amount: 7n }))
    const sent = await chain.sendTonConnect(sender.wallet, sender.keyPair, step!.transaction as TonConnectRequest)
    const messageHash = messageCells(sent.transaction).inMessage!.hash().toString('hex')
    expect(await readTonTransfers(chain.client, { chainId: CHAIN, txHash: messageHash })).toEqual(
      await readTonTransfers(chain.client, { chainId: CHAIN, txHash: sent.hash }),
    )
  })
})

describe('which messages are followed', () => {
  /** The sandbox's client, counting the receiving transactions it is asked to find (one per message followed). */
  const counting = () => {
    let lookups = 0
    const client = createTonClient(chain.client.provider, {
      findTransaction: chain.client.findTransaction,
      findTransactionByMessage: (hash) => (lookups++, chain.client.findTransactionByMessage(hash)),
    })
    return { client, lookups: () => lookups }
  }
  const message = (payload?: Cell) => ({ address: treasury.address.toString(), amount: toNano('0.01').toString(), ...(payload ? { payload: payload.toBoc().toString('base64') } : {}) })
  const request = (messages: TonConnectRequest['messages']): TonConnectRequest => ({ validUntil: Math.floor(chain.client.now() / 1000) + 60, network: CHAIN, from: raw(sender.wallet.address), messages })

  test('only those carrying a tag, each move naming its own: a transaction without one is read without a lookup', async () => {
    const plain = await send(request([message(), message(commentCell('thanks'))]))
    const quiet = counting()
    expect(await readTonTransfers(quiet.client, { chainId: CHAIN, txHash: plain })).toMatchObject({ tag: null, transfers: [] })
    expect(quiet.lookups()).toBe(0)

    const OTHER = TAG.replace('5b0c1f2e', '6c1d2f3e')
    const mixed = await send(request([message(), message(commentCell(TAG)), message(commentCell(OTHER))]))
    const read = counting()
    const { transfers, tags } = await readTonTransfers(read.client, { chainId: CHAIN, txHash: mixed })
    expect(tags).toEqual([TAG, OTHER])
    expect(transfers.map((t) => [t.amount, t.tag])).toEqual([[toNano('0.01'), TAG], [toNano('0.01'), OTHER]])
    expect(read.lookups()).toBe(2)
  })

  test(`more than ${MAX_TAGGED_MESSAGES} tagged messages are a 400, asked of no one: each would cost up to five calls to the endpoint`, async () => {
    const keyPair = keyPairFromSeed(Buffer.alloc(32, 77))
    const many = await chain.deployWallet('v5r1', keyPair, toNano('5'))
    const tagged = Array.from({ length: MAX_TAGGED_MESSAGES + 1 }, () => message(commentCell(TAG)))
    const sent = await chain.sendTonConnect(many, keyPair, { ...request(tagged), from: raw(many.address) })
    const read = counting()
    const refused = await readTonTransfers(read.client, { chainId: CHAIN, txHash: sent.hash }).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(InvalidArgumentError)
    expect((refused as InvalidArgumentError).context).toEqual({ txHash: `more than ${MAX_TAGGED_MESSAGES} tagged messages` })
    expect(read.lookups()).toBe(0)
  })
})

describe('refusals', () => {
  test('TON too little for the treasury to process is refused (a deployed wallet kept or burnt 0.0003 TON, whose funding never read as moved); the least taken moves', async () => {
    const short = await buildTonTransfer(chain.client, params({ token: 'native', amount: MIN_TON_SEND - 1n })).catch((e: unknown) => e)
    expect(short).toBeInstanceOf(InvalidArgumentError)
    expect((short as InvalidArgumentError).context).toEqual({ amount: `must be at least ${MIN_TON_SEND} (0.01 TON)` })
    const [step] = await buildTonTransfer(chain.client, params({ token: 'native', amount: MIN_TON_SEND }))
    const hash = await send(step!.transaction as TonConnectRequest)
    expect((await readTonTransfers(chain.client, { chainId: CHAIN, txHash: hash })).transfers).toEqual([
      { token: 'native', from: raw(sender.wallet.address), to: raw(treasury.address), amount: MIN_TON_SEND, tag: TAG },
    ])
  })

  test('bad parameters are 400s naming the field; an unknown hash is 404', async () => {
    await expect(buildTonTransfer(chain.client, params({ amount: 0n }))).rejects.toThrow(InvalidArgumentError)
    const bad = await buildTonTransfer(chain.client, params({ to: 'nope' })).catch((e: unknown) => e)
    expect(bad).toBeInstanceOf(InvalidAddressError)
    expect((bad as InvalidAddressError).context).toHaveProperty('to')
    await expect(readTonTransfers(chain.client, { chainId: CHAIN, txHash: 'ab'.repeat(32) })).rejects.toThrow(NotFoundError)
  })
})
