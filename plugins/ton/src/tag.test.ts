/** Reading tags back from sandbox transactions found by hash, including the ones that carry none. */
import { beforeAll, describe, expect, test } from 'bun:test'
import { InvalidArgumentError, NotFoundError, UnavailableError, type ApiError } from '@earn/core'
import { type Address, beginCell, external, internal, SendMode, toNano } from '@ton/core'
import { keyPairFromSeed, type KeyPair } from '@ton/crypto'
import { WalletContractV4 } from '@ton/ton'
import { startTon, type TonSandbox, type TonWallet } from '../../../test/chains/ton.ts'
import { createTonClient } from './client.ts'
import { commentCell } from './comment.ts'
import { jettonTransferBody } from './jetton.ts'
import { jettonWalletOf, notJetton } from './jettonMaster.ts'
import { tonConnectRequest } from './request.ts'
import { readTonTag, tagOfTransaction } from './tag.ts'

const CHAIN = '-239'
const TAG = 'earn:v1:0d3c1f5e-0000-4000-8000-000000000009:5a4b3c2d-2222-4222-8222-222222222222:c2lnbmVkLWJ5LW1hYw'

let chain: TonSandbox
let user: TonWallet
let keyPair: KeyPair
let vault: TonWallet
let master: Address

const readTag = (txHash: string) => readTonTag(chain.client, { chainId: CHAIN, txHash })

/** Has the user's wallet send one message, as a TON Connect wallet would; returns the wallet transaction's hash. */
async function send(to: Address, amount: bigint, body?: ReturnType<typeof commentCell>) {
  const request = tonConnectRequest({ nowMs: chain.client.now(), network: CHAIN, from: user.address, messages: [{ to, amount, body }] })
  return chain.sendTonConnect(user, keyPair, request)
}

beforeAll(async () => {
  chain = await startTon()
  keyPair = keyPairFromSeed(Buffer.alloc(32, 51))
  user = await chain.deployWallet('v4r2', keyPair, toNano('5'))
  vault = await chain.deployWallet('v4r2', keyPairFromSeed(Buffer.alloc(32, 52)), toNano('1'))
  master = await chain.deployJetton()
  await chain.mintJetton(master, user.address, 1_000n)
})

describe('readTag', () => {
  test('the hash in hex (any case), base64 or base64url names the same transaction', async () => {
    const { hash } = await send(vault.address, toNano('0.1'), commentCell(TAG))
    const bytes = Buffer.from(hash, 'hex')
    for (const form of [hash, hash.toUpperCase(), bytes.toString('base64'), bytes.toString('base64url')])
      expect(await readTag(form)).toEqual({ txHash: hash, tag: TAG, from: user.address.toRawString() })
  })

  test('a jetton transfer whose forward_payload comment is inline is read too', async () => {
    // Some wallets and dApps put a short comment in the transfer cell itself (the Either's left branch).
    const jettonWallet = await jettonWalletOf(chain.client, master, user.address, notJetton('token', 'x'))
    const shortTag = 'earn:v1:a:b:c'
    const body = beginCell()
      .storeUint(0x0f8a7ea5, 32)
      .storeUint(1, 64)
      .storeCoins(5n)
      .storeAddress(vault.address)
      .storeAddress(user.address)
      .storeMaybeRef(null)
      .storeCoins(toNano('0.01'))
      .storeBit(0)
      .storeSlice(commentCell(shortTag).beginParse())
      .endCell()
    const { hash } = await send(jettonWallet, toNano('0.1'), body)
    expect((await readTag(hash)).tag).toBe(shortTag)
  })

  test('a transfer without a comment, or with another comment, has no tag', async () => {
    const plain = await send(vault.address, toNano('0.01'))
    expect(await readTag(plain.hash)).toEqual({ txHash: plain.hash, tag: null, from: user.address.toRawString() })
    const other = await send(vault.address, toNano('0.01'), commentCell('thanks for lunch'))
    expect((await readTag(other.hash)).tag).toBeNull()
    const jettonWallet = await jettonWalletOf(chain.client, master, user.address, notJetton('token', 'x'))
    const untagged = jettonTransferBody({
      queryId: 0n,
      amount: 1n,
      destination: vault.address,
      responseDestination: user.address,
      customPayload: null,
      forwardTonAmount: 0n,
      forwardPayload: null,
    })
    expect((await readTag((await send(jettonWallet, toNano('0.1'), untagged)).hash)).tag).toBeNull()
  })

  test('the vault\'s receiving transaction is not the wallet\'s: no tag, though the comment is there', async () => {
    // Anyone can send the vault a message with a copied tag; only the wallet's own signed transaction counts.
    const sent = await send(vault.address, toNano('0.01'), commentCell(TAG))
    const received = sent.transactions.find((tx) => tx.inMessage?.info.type === 'internal')!
    expect(await readTag(received.hash().toString('hex'))).toEqual({ txHash: received.hash().toString('hex'), tag: null, from: vault.address.toRawString() })
  })

  test('a message the wallet skipped (too little balance, IGNORE_ERRORS) left no tag', async () => {
    const sent = await send(vault.address, toNano('1000'), commentCell(TAG))
    expect(sent.transaction.outMessagesCount).toBe(0)
    expect((await readTag(sent.hash)).tag).toBeNull()
  })

  test('an aborted wallet transaction has no tag: it sent nothing', async () => {
    // Without IGNORE_ERRORS an unaffordable message fails the action phase, and the transaction
    // aborts; the signed request (with the tag) is on chain, but nothing was deposited.
    const wallet = chain.blockchain.openContract(WalletContractV4.create({ workchain: 0, publicKey: keyPair.publicKey }))
    const body = wallet.createTransfer({
      seqno: await wallet.getSeqno(),
      secretKey: keyPair.secretKey,
      sendMode: SendMode.PAY_GAS_SEPARATELY,
      messages: [internal({ to: vault.address, value: toNano('1000'), body: commentCell(TAG) })],
    })
    const result = chain.record(await chain.blockchain.sendMessage(external({ to: user.address, body })))
    const tx = result.transactions[0]!
    expect(tx.description.type === 'generic' && tx.description.aborted).toBe(true)
    expect(await readTag(tx.hash().toString('hex'))).toEqual({ txHash: tx.hash().toString('hex'), tag: null, from: user.address.toRawString() })
    expect(tagOfTransaction(tx).tag).toBeNull()
  })

  test('an unknown hash is 404 naming it', async () => {
    const txHash = 'ab'.repeat(32)
    const error = (await readTag(txHash).catch((e: unknown) => e)) as ApiError
    expect(error).toBeInstanceOf(NotFoundError)
    expect(error.status).toBe(404)
    expect(error.message).toBe('no TON transaction with this hash was found')
    expect(error.context).toEqual({ txHash })
  })

  test('a malformed hash is 400 naming txHash', async () => {
    for (const txHash of ['', 'ab'.repeat(31), `0x${'ab'.repeat(32)}`, 'zz'.repeat(32), Buffer.alloc(31).toString('base64'), '!'.repeat(44)]) {
      const error = (await readTag(txHash).catch((e: unknown) => e)) as ApiError
      expect(error).toBeInstanceOf(InvalidArgumentError)
      expect(error.context).toHaveProperty('txHash')
    }
  })

  test('a lookup that cannot reach the TON API is 503', async () => {
    const down = createTonClient(chain.client.provider, { findTransaction: () => Promise.reject(new Error('socket hang up')) })
    const error = await readTonTag(down, { chainId: CHAIN, txHash: 'ab'.repeat(32) }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UnavailableError)
  })
})
