/**
 * Deposits and withdrawals on the TON sandbox: the plugin builds the TON Connect request, a real
 * wallet contract (v4r2 or v5r1, with its key pair) sends exactly its messages as a TON Connect
 * wallet would, and the balances that result are read back from the chain.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { ApiError, type BuildParameters, InsufficientBalanceError, InvalidAddressError, InvalidArgumentError } from '@earn/core'
import { Address, Cell, toNano, type Transaction } from '@ton/core'
import type { KeyPair } from '@ton/crypto'
import { keyPairFromSeed } from '@ton/crypto'
import { startTon, type TonSandbox, type TonWallet } from '../../../test/chains/ton.ts'
import { formatTonContract } from './address.ts'
import { readTonBalance } from './balance.ts'
import { readComment } from './comment.ts'
import { TON_FEE_RESERVE } from './fees.ts'
import { JETTON_OP, parseJettonTransfer } from './jetton.ts'
import { jettonWalletOf, notJetton } from './jettonMaster.ts'
import type { TonConnectRequest } from './request.ts'
import { readTonTag } from './tag.ts'
import { buildTonTransactions, JETTON_FORWARD_TON, JETTON_TRANSFER_TON, MIN_TON_SEND } from './transactions.ts'

const CHAIN = '-239'
const tagFor = (n: number) =>
  `earn:v1:3f1c2a9e-0000-4000-8000-${String(n).padStart(12, '0')}:7b0e4d1c-1111-4111-8111-111111111111:Zm9vYmFyYmF6cXV4MTIz`

let chain: TonSandbox
let users: Record<'v4r2' | 'v5r1', { wallet: TonWallet; keyPair: KeyPair }>
let vault: TonWallet
let base: Address
let receipt: Address

const opportunity = (baseToken = base.toRawString()) => ({
  id: '9a1f5b2e-0000-4000-8000-000000000001',
  chainId: CHAIN,
  vaultAddress: vault.address.toString(),
  baseToken,
  receiptToken: receipt.toString(),
})

const deposit = (owner: TonWallet, over: Partial<Extract<BuildParameters, { kind: 'deposit' }>> = {}): BuildParameters => ({
  kind: 'deposit',
  chainId: CHAIN,
  owner: owner.address.toRawString(),
  opportunity: opportunity(),
  amount: 250_000n,
  tag: tagFor(1),
  slippageBps: 50,
  tokenIn: base.toString(),
  mode: 'direct',
  ...over,
})

const balance = (owner: Address, token: Address | 'native') =>
  readTonBalance(chain.client, { chainId: CHAIN, owner: owner.toRawString(), token: token === 'native' ? token : token.toRawString() })

const requestOf = (steps: { transaction: Record<string, unknown> }[]) => steps[0]!.transaction as TonConnectRequest
const noneAborted = (txs: Transaction[]) =>
  expect(txs.filter((tx) => tx.description.type === 'generic' && tx.description.aborted)).toEqual([])

async function expectError(p: Promise<unknown>, type: new (...a: any[]) => ApiError, field: string) {
  const error = await p.catch((e: unknown) => e)
  expect(error).toBeInstanceOf(type)
  expect((error as ApiError).status).toBe(400)
  expect((error as ApiError).context).toHaveProperty(field)
  return error as ApiError
}

beforeAll(async () => {
  chain = await startTon()
  const v4 = keyPairFromSeed(Buffer.alloc(32, 41))
  const v5 = keyPairFromSeed(Buffer.alloc(32, 42))
  users = {
    v4r2: { wallet: await chain.deployWallet('v4r2', v4, toNano('5')), keyPair: v4 },
    v5r1: { wallet: await chain.deployWallet('v5r1', v5, toNano('5')), keyPair: v5 },
  }
  vault = await chain.deployWallet('v4r2', keyPairFromSeed(Buffer.alloc(32, 43)), toNano('1'))
  base = await chain.deployJetton()
  receipt = await chain.deployJetton()
  for (const { wallet } of Object.values(users)) {
    await chain.mintJetton(base, wallet.address, 10_000_000n)
    await chain.mintJetton(receipt, wallet.address, 5_000_000n)
  }
})

describe('jetton deposit', () => {
  test('one TON Connect request: a TEP-74 transfer to the vault, sent to the user\'s jetton wallet', async () => {
    const { wallet } = users.v5r1
    const steps = await buildTonTransactions(chain.client, deposit(wallet, { amount: 1234n, tag: tagFor(7) }))
    expect(steps.map((s) => s.type)).toEqual(['deposit'])
    const request = requestOf(steps)
    const nowSeconds = Math.floor(chain.client.now() / 1000)
    expect(request.validUntil).toBe(nowSeconds + 300)
    expect(request.network).toBe('-239')
    expect(request.from).toBe(wallet.address.toRawString())
    expect(request.messages).toHaveLength(1)

    const [message] = request.messages
    const userJettonWallet = await jettonWalletOf(chain.client, base, wallet.address, notJetton('token', 'x'))
    expect(message!.address).toBe(userJettonWallet.toString({ bounceable: true, urlSafe: true }))
    expect(message!.amount).toBe(JETTON_TRANSFER_TON.toString())
    const transfer = parseJettonTransfer(Cell.fromBase64(message!.payload!))
    expect(transfer).not.toBeNull()
    expect(transfer!.amount).toBe(1234n)
    expect(transfer!.destination.equals(vault.address)).toBe(true)
    expect(transfer!.responseDestination?.equals(wallet.address)).toBe(true)
    expect(transfer!.customPayload).toBeNull()
    expect(transfer!.forwardTonAmount).toBe(JETTON_FORWARD_TON)
    expect(readComment(transfer!.forwardPayload!)).toBe(tagFor(7))
    expect(steps[0]!.metadata).toMatchObject({
      // Contracts as every response shows them: bounceable.
      token: formatTonContract(base.toRawString()),
      amount: '1234',
      jettonWallet: formatTonContract(userJettonWallet.toRawString()),
    })
    expect(steps[0]!.description).toContain('1234')
  })

  for (const version of ['v4r2', 'v5r1'] as const) {
    test(`a ${version} wallet sends it: the vault gains exactly the amount, the user loses it`, async () => {
      const { wallet, keyPair } = users[version]
      const amount = 250_000n
      const before = { user: await balance(wallet.address, base), vault: await balance(vault.address, base) }
      const tonBefore = await balance(wallet.address, 'native')
      const steps = await buildTonTransactions(chain.client, deposit(wallet, { amount, tag: tagFor(2) }))
      const sent = await chain.sendTonConnect(wallet, keyPair, requestOf(steps))
      noneAborted(sent.transactions)
      expect(await balance(wallet.address, base)).toBe(before.user - amount)
      expect(await balance(vault.address, base)).toBe(before.vault + amount)

      // The vault heard of it: a transfer_notification from its jetton wallet, naming the sender and the tag.
      const notification = sent.transactions
        .map((tx) => tx.inMessage)
        .find((m) => m?.info.dest instanceof Address && m.info.dest.equals(vault.address))
      const body = notification!.body.beginParse()
      expect(body.loadUint(32)).toBe(JETTON_OP.transferNotification)
      body.loadUintBig(64)
      expect(body.loadCoins()).toBe(amount)
      expect(body.loadAddress().equals(wallet.address)).toBe(true)
      expect(readComment(body.loadBit() ? body.loadRef() : body)).toBe(tagFor(2))

      // The unspent TON came back as `excesses`: the user paid the forward amount and fees, not all that was attached.
      const excesses = sent.transactions.find(
        (tx) => tx.inMessage?.info.dest instanceof Address && tx.inMessage.info.dest.equals(wallet.address) && tx.inMessage.body.beginParse().preloadUint(Math.min(32, tx.inMessage.body.bits.length)) === JETTON_OP.excesses,
      )
      expect(excesses).toBeDefined()
      const spent = tonBefore - (await balance(wallet.address, 'native'))
      expect(spent).toBeGreaterThan(JETTON_FORWARD_TON)
      expect(spent).toBeLessThan(JETTON_TRANSFER_TON)

      expect(await readTonTag(chain.client, { chainId: CHAIN, txHash: sent.hash })).toEqual({
        txHash: sent.hash,
        tag: tagFor(2),
        from: wallet.address.toRawString(),
      })
    })
  }

  test('only the base token is a deposit, in any address form', async () => {
    const { wallet } = users.v5r1
    const steps = await buildTonTransactions(chain.client, deposit(wallet, { tokenIn: base.toString({ bounceable: false }) }))
    expect(steps).toHaveLength(1)
    const error = await expectError(buildTonTransactions(chain.client, deposit(wallet, { tokenIn: receipt.toString() })), InvalidArgumentError, 'tokenIn')
    expect(error.message).toBe(`tokenIn must be the opportunity's base token ${base.toRawString()}`)
    await expectError(buildTonTransactions(chain.client, deposit(wallet, { tokenIn: 'native' })), InvalidArgumentError, 'tokenIn')
    await expectError(buildTonTransactions(chain.client, deposit(wallet, { tokenIn: 'EQnope' })), InvalidAddressError, 'tokenIn')
  })

  test('a base token that is not a jetton master is a 400 naming tokenIn', async () => {
    const { wallet } = users.v5r1
    const notMaster = vault.address.toRawString()
    await expectError(
      buildTonTransactions(chain.client, deposit(wallet, { tokenIn: notMaster, opportunity: opportunity(notMaster) })),
      InvalidArgumentError,
      'tokenIn',
    )
  })
})

describe('TON deposit', () => {
  test('one message to the vault carrying the amount, the tag as its comment', async () => {
    const { wallet, keyPair } = users.v4r2
    const amount = toNano('1.5')
    const params = deposit(wallet, { tokenIn: 'native', amount, tag: tagFor(3), opportunity: opportunity('native') })
    const steps = await buildTonTransactions(chain.client, params)
    expect(steps.map((s) => s.type)).toEqual(['deposit'])
    const request = requestOf(steps)
    expect(request.messages).toEqual([
      {
        address: vault.address.toString({ bounceable: true, urlSafe: true }),
        amount: amount.toString(),
        payload: expect.any(String),
      },
    ])
    expect(readComment(Cell.fromBase64(request.messages[0]!.payload!))).toBe(tagFor(3))

    const before = await balance(vault.address, 'native')
    const sent = await chain.sendTonConnect(wallet, keyPair, request)
    noneAborted(sent.transactions)
    const received = sent.transactions.find((tx) => tx.inMessage?.info.dest instanceof Address && tx.inMessage.info.dest.equals(vault.address))
    expect(received?.inMessage?.info.type === 'internal' && received.inMessage.info.value.coins).toBe(amount)
    // The vault's own receive transaction costs it a little gas.
    const after = await balance(vault.address, 'native')
    expect(after).toBeGreaterThan(before + amount - toNano('0.01'))
    expect(after).toBeLessThanOrEqual(before + amount)
    expect(await readTonTag(chain.client, { chainId: CHAIN, txHash: sent.hash })).toEqual({
      txHash: sent.hash,
      tag: tagFor(3),
      from: wallet.address.toRawString(),
    })
  })

  for (const version of ['v4r2', 'v5r1'] as const)
    test(`a ${version} wallet must keep ${TON_FEE_RESERVE} nanotons for its fees: one more is refused, saying so; the rest lands whole`, async () => {
      const keyPair = keyPairFromSeed(randomBytes(32))
      const wallet = await chain.deployWallet(version, keyPair, toNano('1'))
      const held = await balance(wallet.address, 'native')
      const over = await expectError(
        buildTonTransactions(chain.client, deposit(wallet, { tokenIn: 'native', amount: held - TON_FEE_RESERVE + 1n, opportunity: opportunity('native') })),
        InsufficientBalanceError,
        'covers',
      )
      expect(over.context).toMatchObject({ required: (held + 1n).toString(), available: held.toString(), token: 'native' })
      expect(over.context.covers).toContain("0.01 TON kept for the wallet's fees")
      const amount = held - TON_FEE_RESERVE
      const before = await balance(vault.address, 'native')
      const steps = await buildTonTransactions(chain.client, deposit(wallet, { tokenIn: 'native', amount, opportunity: opportunity('native') }))
      const sent = await chain.sendTonConnect(wallet, keyPair, requestOf(steps))
      noneAborted(sent.transactions)
      const received = sent.transactions.find((tx) => tx.inMessage?.info.dest instanceof Address && tx.inMessage.info.dest.equals(vault.address))
      expect(received?.inMessage?.info.type === 'internal' && received.inMessage.info.value.coins).toBe(amount)
      expect(await balance(vault.address, 'native')).toBeGreaterThan(before + amount - toNano('0.01'))
    })

  test('a jetton deposit needs the attached TON and the fee reserve in the wallet, besides the jettons', async () => {
    const keyPair = keyPairFromSeed(randomBytes(32))
    const wallet = await chain.deployWallet('v5r1', keyPair, toNano('0.1'))
    await chain.mintJetton(base, wallet.address, 1_000n)
    const held = await balance(wallet.address, 'native')
    const short = await expectError(buildTonTransactions(chain.client, deposit(wallet, { amount: 1_000n })), InsufficientBalanceError, 'covers')
    expect(short.context).toMatchObject({ required: (JETTON_TRANSFER_TON + TON_FEE_RESERVE).toString(), available: held.toString(), token: 'native' })
    expect(short.context.covers).toContain('0.1 TON attached to the jetton transfer')
  })

  test('a TON deposit too small to pay for its processing in the vault is refused; the least taken lands', async () => {
    const { wallet, keyPair } = users.v5r1
    const short = await expectError(
      buildTonTransactions(chain.client, deposit(wallet, { tokenIn: 'native', amount: MIN_TON_SEND - 1n, opportunity: opportunity('native') })),
      InvalidArgumentError,
      'amount',
    )
    expect(short.context).toEqual({ amount: `must be at least ${MIN_TON_SEND} (0.01 TON)` })
    const steps = await buildTonTransactions(chain.client, deposit(wallet, { tokenIn: 'native', amount: MIN_TON_SEND, tag: tagFor(4), opportunity: opportunity('native') }))
    const sent = await chain.sendTonConnect(wallet, keyPair, requestOf(steps))
    noneAborted(sent.transactions)
    expect(await readTonTag(chain.client, { chainId: CHAIN, txHash: sent.hash })).toMatchObject({ tag: tagFor(4) })
  })

  test('an empty tag sends no comment', async () => {
    const steps = await buildTonTransactions(
      chain.client,
      deposit(users.v4r2.wallet, { tokenIn: 'native', tag: '', amount: MIN_TON_SEND, opportunity: opportunity('native') }),
    )
    expect(requestOf(steps).messages[0]).not.toHaveProperty('payload')
  })
})

describe('withdrawal', () => {
  test('moves receipt jettons back to the vault, tagged', async () => {
    const { wallet, keyPair } = users.v5r1
    const amount = 400_000n
    const params: BuildParameters = {
      kind: 'withdraw',
      chainId: CHAIN,
      owner: wallet.address.toString(),
      opportunity: opportunity(),
      amount,
      tag: tagFor(4),
      slippageBps: 50,
    }
    const steps = await buildTonTransactions(chain.client, params)
    expect(steps.map((s) => s.type)).toEqual(['withdraw'])
    const request = requestOf(steps)
    const transfer = parseJettonTransfer(Cell.fromBase64(request.messages[0]!.payload!))!
    expect(transfer.destination.equals(vault.address)).toBe(true)
    expect(transfer.amount).toBe(amount)
    expect(steps[0]!.metadata).toMatchObject({ token: formatTonContract(receipt.toRawString()), amount: '400000' })

    const before = { user: await balance(wallet.address, receipt), vault: await balance(vault.address, receipt) }
    const baseBefore = await balance(wallet.address, base)
    const sent = await chain.sendTonConnect(wallet, keyPair, request)
    noneAborted(sent.transactions)
    expect(await balance(wallet.address, receipt)).toBe(before.user - amount)
    expect(await balance(vault.address, receipt)).toBe(before.vault + amount)
    expect(await balance(wallet.address, base)).toBe(baseBefore)
    expect((await readTonTag(chain.client, { chainId: CHAIN, txHash: sent.hash })).tag).toBe(tagFor(4))
  })

  test('tokenOut, when given, must be the base token', async () => {
    const params: BuildParameters = {
      kind: 'withdraw',
      chainId: CHAIN,
      owner: users.v5r1.wallet.address.toString(),
      opportunity: opportunity(),
      amount: 1n,
      tag: tagFor(5),
      slippageBps: 50,
    }
    expect(await buildTonTransactions(chain.client, { ...params, tokenOut: base.toRawString() })).toHaveLength(1)
    await expectError(buildTonTransactions(chain.client, { ...params, tokenOut: receipt.toRawString() }), InvalidArgumentError, 'tokenOut')
    await expectError(
      buildTonTransactions(chain.client, { ...params, opportunity: { ...opportunity(), receiptToken: 'native' } }),
      InvalidArgumentError,
      'receiptToken',
    )
  })
})

describe('refusals', () => {
  test('swap mode is a 400 naming mode', async () => {
    const error = await expectError(buildTonTransactions(chain.client, deposit(users.v5r1.wallet, { mode: 'swap' })), InvalidArgumentError, 'mode')
    expect(error.message).toBe('mode swap is not available for TON opportunities; deposit the base token directly')
  })

  test('a zero or oversized amount is a 400 naming amount', async () => {
    for (const amount of [0n, -1n, 1n << 120n])
      await expectError(buildTonTransactions(chain.client, deposit(users.v5r1.wallet, { amount })), InvalidArgumentError, 'amount')
  })

  test('bad owner or vault addresses name their field', async () => {
    await expectError(buildTonTransactions(chain.client, deposit(users.v5r1.wallet, { owner: 'nope' })), InvalidAddressError, 'owner')
    await expectError(
      buildTonTransactions(chain.client, deposit(users.v5r1.wallet, { opportunity: { ...opportunity(), vaultAddress: '0:12' } })),
      InvalidAddressError,
      'vaultAddress',
    )
  })

  test('testnet requests use test-only addresses and say so', async () => {
    const steps = await buildTonTransactions(
      chain.client,
      deposit(users.v5r1.wallet, { chainId: '-3', tokenIn: 'native', amount: MIN_TON_SEND, opportunity: opportunity('native') }),
    )
    const request = requestOf(steps)
    expect(request.network).toBe('-3')
    expect(request.messages[0]!.address).toBe(vault.address.toString({ bounceable: true, urlSafe: true, testOnly: true }))
  })
})
