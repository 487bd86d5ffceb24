/**
 * A token stream's life on anvil through the API: pending until its funding transfer is mined and confirmed
 * against the chain, then pause, resume, cancel under the state machine; transfers that do not fund it
 * (no tag, another stream's tag, a tampered tag, another sender's tokens, the wrong recipient, too little) are
 * refused and leave it pending; a contract-wallet creator funds through its owner's call; another organization
 * sees none of it.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { transitionStream, type Store } from '@earn/core'
import { encodeFunctionData, erc20Abi, sliceHex, stringToHex, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { deployBundler, deployDishonestToken, deploySmartWallet, mintToken, relayThroughWallet, sendThroughWallet, sendUnsigned, setNativeBalance, signedWalletCall, testBundlerAbi } from '../chains/evm.ts'
import { expectEnvelope, type Json } from '../harness.ts'
import { startStreamsEnv, type StreamsEnv } from './setup.ts'

setDefaultTimeout(60_000)

let env: StreamsEnv
beforeAll(async () => {
  env = await startStreamsEnv()
})
afterAll(() => env.stop())

interface Created {
  id: string
  creator: PrivateKeyAccount
  transaction: Json
  totalPulled: bigint
}

async function createTokenStream(over: Json = {}, funded?: PrivateKeyAccount): Promise<Created> {
  const creator = funded ?? (await env.creator(10_000_000n))
  const r = await env.h.post('/v2/streams', env.tokenBody(creator, over))
  expect(r.status, r.text).toBe(200)
  return { id: r.body.stream.id, creator, transaction: r.body.transactions[0].transaction, totalPulled: BigInt(r.body.totalPulled) }
}

const confirm = (id: string, txHash: string, key?: string) => env.h.post(`/v2/streams/${id}/confirm`, { txHash }, key ? { key } : undefined)
const state = async (id: string) => (await env.h.get(`/v2/streams/${id}`)).body.stream.state
/** The built transfer's tag, in hex, as it rides after the calldata. */
const tagOf = (transaction: Json) => sliceHex(transaction.data as Hex, 68)
const transferData = (to: Address, amount: bigint, tag: Hex) =>
  `${encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] })}${tag.slice(2)}` as Hex

function expectRefused(r: { status: number; body: Json }, text: RegExp) {
  expect(r.status).toBe(400)
  expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
  expect(r.body.error).toMatch(text)
  expect(r.body.context).toHaveProperty('txHash')
}

describe('pending -> active only once the funding transfer is mined', () => {
  let stream: Created
  let fundingHash: string

  test('confirming before anything was sent is 400, and the stream stays pending', async () => {
    stream = await createTokenStream()
    expect(await state(stream.id)).toBe('pending')
    const r = await confirm(stream.id, `0x${'ab'.repeat(32)}`)
    expectRefused(r, /not found on chain 31337 yet; retry after it is mined/)
    expect(await state(stream.id)).toBe('pending')
    // Nor can a pending stream be paused or resumed.
    const pause = await env.h.post(`/v2/streams/${stream.id}/pause`)
    expect(pause.status).toBe(400)
    expectEnvelope(pause.body, 400, 'INVALID_ARGUMENT')
    expect(pause.body.context).toEqual({ state: 'pending', action: 'pause' })
  })

  test('a malformed hash is 400 naming txHash', async () => {
    const r = await confirm(stream.id, '0x1234')
    expect(r.status).toBe(400)
    expect(r.body.context).toHaveProperty('txHash')
  })

  test('the built transfer, signed and mined, moves totalPulled to the treasury; confirm makes the stream active', async () => {
    const before = await env.balanceOf(env.chain.token, env.treasury)
    fundingHash = await env.send(stream.creator, stream.transaction)
    expect(await env.balanceOf(env.chain.token, env.treasury)).toBe(before + stream.totalPulled)
    // Spelled in capitals, the hash is stored as the chain spells it.
    const r = await confirm(stream.id, `0x${fundingHash.slice(2).toUpperCase()}`)
    expect(r.status, r.text).toBe(200)
    expect(r.body.stream).toMatchObject({ id: stream.id, state: 'active', fundingTxHash: fundingHash })
    expect((await env.h.get(`/v2/streams/${stream.id}`)).body.stream).toMatchObject({ state: 'active', fundingTxHash: fundingHash })
  })

  test('confirming again is 400 from the state machine', async () => {
    const r = await confirm(stream.id, fundingHash)
    expect(r.status).toBe(400)
    expect(r.body.context).toEqual({ state: 'active', action: 'confirm' })
  })

  test('pause, pause again (400), resume, cancel, resume a cancelled stream (400)', async () => {
    const step = (action: string) => env.h.post(`/v2/streams/${stream.id}/${action}`)
    const paused = await step('pause')
    expect(paused.status).toBe(200)
    expect(paused.body.stream.state).toBe('paused')
    const again = await step('pause')
    expect(again.status).toBe(400)
    expectEnvelope(again.body, 400, 'INVALID_ARGUMENT')
    expect(again.body.context).toEqual({ state: 'paused', action: 'pause' })
    expect((await step('resume')).body.stream.state).toBe('active')
    expect((await step('resume')).body.context).toEqual({ state: 'active', action: 'resume' })
    expect((await step('cancel')).body.stream.state).toBe('cancelled')
    for (const action of ['resume', 'pause', 'cancel']) {
      const r = await step(action)
      expect(r.status).toBe(400)
      expect(r.body.context).toEqual({ state: 'cancelled', action })
    }
    expect(await state(stream.id)).toBe('cancelled')
    // No action at all: a path no route takes (DECISIONS: unknown routes are 404).
    const unknown = await step('archive')
    expect(unknown.status).toBe(404)
    expectEnvelope(unknown.body, 404, 'NOT_FOUND')
  })

  test('a pending stream cannot be cancelled (its funding may be mined already): it is still confirmed by its transfer', async () => {
    const s = await createTokenStream()
    const refused = await env.h.post(`/v2/streams/${s.id}/cancel`)
    expect(refused.status).toBe(400)
    expectEnvelope(refused.body, 400, 'INVALID_ARGUMENT')
    expect(refused.body.context).toEqual({ state: 'pending', action: 'cancel' })
    const hash = await env.send(s.creator, s.transaction)
    const r = await confirm(s.id, hash)
    expect(r.status, r.text).toBe(200)
    expect(r.body.stream).toMatchObject({ state: 'active', fundingTxHash: hash })
  })
})

describe('transfers that do not fund the stream are refused and leave it pending', () => {
  let stream: Created
  beforeAll(async () => {
    stream = await createTokenStream()
  })
  const sendData = (wallet: PrivateKeyAccount, data: Hex) =>
    env.send(wallet, { to: env.chain.token, data, value: '0', gasLimit: '150000', chainId: 31337 })

  test('no tag at all', async () => {
    const hash = await sendData(stream.creator, transferData(env.treasury, stream.totalPulled, '0x'))
    expectRefused(await confirm(stream.id, hash), /carries no funding tag/)
  })

  test("another stream's tag: its transfer funds that stream only", async () => {
    const other = await createTokenStream()
    const hash = await env.send(other.creator, other.transaction)
    expectRefused(await confirm(stream.id, hash), new RegExp(`names another stream \\(${other.id}\\)`))
    expect((await confirm(other.id, hash)).body.stream.state).toBe('active')
    // Used once, it is refused again for any other stream.
    expectRefused(await confirm(stream.id, hash), /names another stream/)
  })

  test('a tampered MAC', async () => {
    const tag = tagOf(stream.transaction)
    const last = tag.slice(-2) === '30' ? '31' : '30'
    const hash = await sendData(stream.creator, transferData(env.treasury, stream.totalPulled, `${tag.slice(0, -2)}${last}` as Hex))
    expectRefused(await confirm(stream.id, hash), /does not verify/)
  })

  test('the right tag sent by another wallet', async () => {
    const copier = privateKeyToAccount(generatePrivateKey())
    await setNativeBalance(env.chain.anvil, copier.address, 10n ** 18n)
    await mintToken(env.chain.anvil, env.chain.token, copier.address, stream.totalPulled)
    const hash = await env.send(copier, stream.transaction)
    expectRefused(await confirm(stream.id, hash), /not by the stream's creator/)
  })

  test('the right tag, but to another address', async () => {
    const elsewhere = privateKeyToAccount(generatePrivateKey()).address
    const hash = await sendData(stream.creator, transferData(elsewhere, stream.totalPulled, tagOf(stream.transaction)))
    const r = await confirm(stream.id, hash)
    expectRefused(r, /moves 0 of the/)
    expect(r.body.context).toMatchObject({ required: stream.totalPulled.toString(), transferred: '0' })
  })

  test('the right tag, one unit short', async () => {
    const hash = await sendData(stream.creator, transferData(env.treasury, stream.totalPulled - 1n, tagOf(stream.transaction)))
    const r = await confirm(stream.id, hash)
    expectRefused(r, /moves \d+ of the \d+ smallest units/)
    expect(r.body.context).toMatchObject({ required: stream.totalPulled.toString(), transferred: (stream.totalPulled - 1n).toString() })
    // Not "send the rest": a further transaction cannot make up for this one (an audit's funding in two halves).
    expect(r.body.error).toEndWith('transfers in several transactions are not added up: ask the operator to return what was sent, and create a new stream to fund in one')
  })

  test('a reverted transfer carrying the right tag', async () => {
    const broke = await createTokenStream()
    // Spend the creator's tokens first, so the built transfer reverts when mined.
    await sendData(broke.creator, transferData(env.treasury, 10_000_000n, '0x'))
    const receipt = await sendUnsigned(env.chain.anvil, broke.creator, broke.transaction)
    expect(receipt.status).toBe('reverted')
    expectRefused(await confirm(broke.id, receipt.transactionHash), /carries no funding tag \(or it failed on chain\)/)
    expect(await state(broke.id)).toBe('pending')
  })

  test('after all of that the stream is still pending, and its own transfer confirms it', async () => {
    expect(await state(stream.id)).toBe('pending')
    const hash = await env.send(stream.creator, stream.transaction)
    expect((await confirm(stream.id, hash)).body.stream.state).toBe('active')
  })
})

describe("a token whose logs say more than it delivers once the stream is created", () => {
  test("confirm counts what the treasury's balance received, not the logs: short by the token's fee, it stays pending", async () => {
    // Honest while the creation simulates its transfer; its owner switches a silent 1% fee on before the transfer is sent.
    const token = await deployDishonestToken(env.chain.anvil, 'TestSwitchedFeeToken')
    const created = await createTokenStream({ rewardToken: token }, await env.creator(10_000_000n, token))
    await env.chain.anvil.walletClient.writeContract({ address: token, abi: switchedFeeAbi, functionName: 'setFee', args: [true] })
    const hash = await env.send(created.creator, created.transaction)
    expect(await env.balanceOf(token, env.treasury)).toBe(created.totalPulled - created.totalPulled / 100n)
    const r = await confirm(created.id, hash)
    // Read from the Transfer logs alone, the stream went active with its treasury 1% short.
    expectRefused(r, /its logs say \d+, but the treasury received \d+/)
    expect(r.body.context).toMatchObject({ required: created.totalPulled.toString(), transferred: (created.totalPulled - created.totalPulled / 100n).toString() })
    expect(await state(created.id)).toBe('pending')
  })

  test("an honest funding in a block where the treasury's balance also fell without a Transfer (a rebase, an unwrap): confirmed, not refused for good", async () => {
    const token = await deployDishonestToken(env.chain.anvil, 'TestSwitchedFeeToken')
    const early = await createTokenStream({ rewardToken: token }, await env.creator(10_000_000n, token))
    // The treasury holds some already (an earlier stream's funding), which the rebase then shrinks.
    await env.send(early.creator, early.transaction)
    const created = await createTokenStream({ rewardToken: token }, await env.creator(10_000_000n, token))
    await env.chain.anvil.testClient.setAutomine(false)
    try {
      const rebase = await env.chain.anvil.walletClient.writeContract({ address: token, abi: switchedFeeAbi, functionName: 'rebase', args: [env.treasury, 5n] })
      const funding = await env.chain.anvil.walletClient.sendTransaction({ account: created.creator, to: created.transaction.to as Address, data: created.transaction.data as Hex, gas: BigInt(created.transaction.gasLimit as string) })
      await env.chain.anvil.testClient.mine({ blocks: 1 })
      const [a, b] = await Promise.all([rebase, funding].map((hash) => env.chain.anvil.publicClient.waitForTransactionReceipt({ hash })))
      expect(a!.blockNumber).toBe(b!.blockNumber)
      // Counted against the funding, the drop had refused it for good ("the token keeps part of what it moves").
      const r = await confirm(created.id, funding)
      expect(r.status, r.text).toBe(200)
      expect(r.body.stream.state).toBe('active')
    } finally {
      await env.chain.anvil.testClient.setAutomine(true)
    }
  })

  test("the funding's own shortfall counts, whatever else its block holds: another log of the token beside it turns nothing off, and another's fee is not the funding's", async () => {
    const token = await deployDishonestToken(env.chain.anvil, 'TestSwitchedFeeToken')
    const inBlock = async (sends: (() => Promise<Hex>)[]) => {
      await env.chain.anvil.testClient.setAutomine(false)
      try {
        const hashes: Hex[] = []
        for (const send of sends) hashes.push(await send())
        await env.chain.anvil.testClient.mine({ blocks: 1 })
        const receipts = await Promise.all(hashes.map((hash) => env.chain.anvil.publicClient.waitForTransactionReceipt({ hash })))
        expect(new Set(receipts.map((r) => r.blockNumber)).size).toBe(1)
        return hashes
      } finally {
        await env.chain.anvil.testClient.setAutomine(true)
      }
    }
    const fund = (c: Created) => () =>
      env.chain.anvil.walletClient.sendTransaction({ account: c.creator, to: c.transaction.to as Address, data: c.transaction.data as Hex, gas: BigInt(c.transaction.gasLimit as string) })
    // Short by its fee, beside a transaction making the token log something else (a rebase of nothing): measured over the
    // block, that log had switched the measure off and the stream went active short (an audit).
    const short = await createTokenStream({ rewardToken: token }, await env.creator(10_000_000n, token))
    await env.chain.anvil.walletClient.writeContract({ address: token, abi: switchedFeeAbi, functionName: 'setFee', args: [true] })
    const [, shortFunding] = await inBlock([() => env.chain.anvil.walletClient.writeContract({ address: token, abi: switchedFeeAbi, functionName: 'rebase', args: [short.creator.address, 0n] }), fund(short)])
    expectRefused(await confirm(short.id, shortFunding!), /the token keeps part of what it moves/)
    // Whole, sent while the fee is off, then the fee on and another's transfer to the treasury kept short, in one block:
    // measured over the block, the other's unit was charged to the funding and refused it for good (an audit).
    await env.chain.anvil.walletClient.writeContract({ address: token, abi: switchedFeeAbi, functionName: 'setFee', args: [false] })
    const whole = await createTokenStream({ rewardToken: token }, await env.creator(10_000_000n, token))
    const other = await env.creator(1_000n, token)
    const [wholeFunding] = await inBlock([
      fund(whole),
      () => env.chain.anvil.walletClient.writeContract({ address: token, abi: switchedFeeAbi, functionName: 'setFee', args: [true] }),
      () => env.chain.anvil.walletClient.writeContract({ account: other, address: token, abi: erc20Abi, functionName: 'transfer', args: [env.treasury, 100n] }),
    ])
    const r = await confirm(whole.id, wholeFunding!)
    expect(r.status, r.text).toBe(200)
    expect(r.body.stream.state).toBe('active')
  })

  test('an honest token in a block where another transaction also pays the treasury: the funding confirms', async () => {
    const created = await createTokenStream()
    // Someone else's transfer to the treasury, mined in the funding's block.
    const treasuryKey = await env.creator(5n)
    await env.chain.anvil.testClient.setAutomine(false)
    try {
      const out = await env.chain.anvil.walletClient.writeContract({ account: treasuryKey, address: env.chain.token, abi: erc20Abi, functionName: 'transfer', args: [env.treasury, 5n] })
      const funding = await env.chain.anvil.walletClient.sendTransaction({ account: created.creator, to: created.transaction.to as Address, data: created.transaction.data as Hex, gas: BigInt(created.transaction.gasLimit as string) })
      await env.chain.anvil.testClient.mine({ blocks: 1 })
      const [a, b] = await Promise.all([out, funding].map((hash) => env.chain.anvil.publicClient.waitForTransactionReceipt({ hash })))
      expect(a!.blockNumber).toBe(b!.blockNumber)
      expect((await confirm(created.id, funding)).body.stream.state).toBe('active')
    } finally {
      await env.chain.anvil.testClient.setAutomine(true)
    }
  })
})

const switchedFeeAbi = [
  { type: 'function', name: 'setFee', stateMutability: 'nonpayable', inputs: [{ name: 'on', type: 'bool' }], outputs: [] },
  { type: 'function', name: 'rebase', stateMutability: 'nonpayable', inputs: [{ name: 'holder', type: 'address' }, { name: 'less', type: 'uint256' }], outputs: [] },
] as const

describe('a contract wallet as the creator (a Safe, an ERC-4337 account)', () => {
  test("its owner sends the transfer through the wallet: the creator's tokens reach the treasury, and the stream confirms", async () => {
    const { owner, wallet } = await env.walletCreator(10_000_000n)
    const r = await env.h.post('/v2/streams', env.tokenBody(owner, { creatorAddress: wallet }))
    expect(r.status, r.text).toBe(200)
    const transfer = r.body.transactions[0].transaction as Json
    const totalPulled = BigInt(r.body.totalPulled)

    // The owner sending the built transfer itself moves the owner's tokens, not the wallet's: refused.
    await mintToken(env.chain.anvil, env.chain.token, owner.address, totalPulled)
    const direct = await env.send(owner, transfer)
    const refused = await confirm(r.body.stream.id, direct)
    expectRefused(refused, /sent by 0x[0-9a-fA-F]{40}, not by the stream's creator .* moves 0 of the/)
    expect(refused.body.context).toMatchObject({ required: totalPulled.toString(), transferred: '0' })

    const treasuryBefore = await env.balanceOf(env.chain.token, env.treasury)
    const receipt = await sendThroughWallet(env.chain.anvil, owner, wallet, transfer)
    expect(receipt.status).toBe('success')
    expect(await env.balanceOf(env.chain.token, env.treasury)).toBe(treasuryBefore + totalPulled)
    const confirmed = await confirm(r.body.stream.id, receipt.transactionHash)
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200)
    expect(confirmed.body.stream).toMatchObject({ state: 'active', fundingTxHash: receipt.transactionHash.toLowerCase() })
  })
})

describe('a stream of the chain\'s own coin', () => {
  const nativeBody = (owner: PrivateKeyAccount, over: Json = {}) => env.tokenBody(owner, { rewardToken: 'native', netBudget: '1000000000', ...over })
  const treasuryCoin = () => env.chain.anvil.publicClient.getBalance({ address: env.treasury as Address })

  test('an account sends the built transfer: the coin reaches the treasury, and the stream confirms', async () => {
    const creator = await env.creator()
    const r = await env.h.post('/v2/streams', nativeBody(creator))
    expect(r.status, r.text).toBe(200)
    const before = await treasuryCoin()
    const hash = await env.send(creator, r.body.transactions[0].transaction)
    expect(await treasuryCoin()).toBe(before + BigInt(r.body.totalPulled))
    expect((await confirm(r.body.stream.id, hash)).body.stream.state).toBe('active')
  })

  test("a contract wallet's owner sends it through the wallet: the coin its call moved counts (read from the call trace)", async () => {
    const owner = await env.creator()
    const wallet = await deploySmartWallet(env.chain.anvil, owner.address)
    await setNativeBalance(env.chain.anvil, wallet, 10n ** 18n)
    const r = await env.h.post('/v2/streams', nativeBody(owner, { creatorAddress: wallet }))
    expect(r.status, r.text).toBe(200)
    const before = await treasuryCoin()
    const receipt = await sendThroughWallet(env.chain.anvil, owner, wallet, r.body.transactions[0].transaction)
    expect(receipt.status).toBe('success')
    expect(await treasuryCoin()).toBe(before + BigInt(r.body.totalPulled))
    const confirmed = await confirm(r.body.stream.id, receipt.transactionHash)
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200)
    expect(confirmed.body.stream.state).toBe('active')
  })

  test('a contract wallet sending one unit short is refused, naming what moved', async () => {
    const owner = await env.creator()
    const wallet = await deploySmartWallet(env.chain.anvil, owner.address)
    await setNativeBalance(env.chain.anvil, wallet, 10n ** 18n)
    const r = await env.h.post('/v2/streams', nativeBody(owner, { creatorAddress: wallet }))
    const transfer = r.body.transactions[0].transaction as Json
    const totalPulled = BigInt(r.body.totalPulled)
    const receipt = await sendThroughWallet(env.chain.anvil, owner, wallet, { ...transfer, value: (totalPulled - 1n).toString() })
    const refused = await confirm(r.body.stream.id, receipt.transactionHash)
    expectRefused(refused, /moves \d+ of the \d+ smallest units/)
    expect(refused.body.context).toMatchObject({ required: totalPulled.toString(), transferred: (totalPulled - 1n).toString() })
  })
})

describe('a contract wallet creator funding through a relayer', () => {
  /** A contract wallet holding reward tokens, its owner, a relayer, and a token stream created for the wallet. */
  async function walletCreatorStream(token: Address = env.chain.token) {
    const { owner, wallet } = await env.walletCreator(10_000_000n, token)
    const relayer = await env.creator()
    const stream = await env.h.post('/v2/streams', env.tokenBody(owner, { creatorAddress: wallet, rewardToken: token }))
    expect(stream.status, stream.text).toBe(200)
    return { owner, relayer, wallet, stream }
  }

  test("a relayer appending another stream's tag (same creator) funds neither that stream nor takes this one's funding", async () => {
    const { owner, relayer, wallet, stream: mine } = await walletCreatorStream()
    // Nothing stops another stream naming the same creator: its tag is valid for that wallet.
    const theirs = await env.h.post('/v2/streams', env.tokenBody(owner, { creatorAddress: wallet }))
    expect(theirs.status, theirs.text).toBe(200)
    const transfer = mine.body.transactions[0].transaction as Json
    const receipt = await relayThroughWallet(env.chain.anvil, { owner, relayer, wallet, tx: transfer, appended: tagOf(theirs.body.transactions[0].transaction) })
    expect(receipt.status).toBe('success')

    const stolen = await confirm(theirs.body.stream.id, receipt.transactionHash)
    // The creator's own transfer call carries this stream's tag, not theirs.
    expectRefused(stolen, new RegExp(`names another stream \\(${mine.body.stream.id}\\)`))
    expect(await state(theirs.body.stream.id)).toBe('pending')
    const confirmed = await confirm(mine.body.stream.id, receipt.transactionHash)
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200)
    expect(confirmed.body.stream.state).toBe('active')
  })

  test("one bundle of the wallet's transfers for two streams funds neither: one's transfer would make up the other's shortfall", async () => {
    const { owner, relayer, wallet, stream: short } = await walletCreatorStream()
    const full = await env.h.post('/v2/streams', env.tokenBody(owner, { creatorAddress: wallet }))
    expect(full.status, full.text).toBe(200)
    const shortTransfer = short.body.transactions[0].transaction as Json
    // The first stream's own transfer is one unit short; the second's is whole.
    const calls = [
      { to: wallet, data: await signedWalletCall(env.chain.anvil, owner, wallet, { ...shortTransfer, data: transferData(env.treasury, BigInt(short.body.totalPulled) - 1n, tagOf(shortTransfer)) }) },
      { to: wallet, data: await signedWalletCall(env.chain.anvil, owner, wallet, full.body.transactions[0].transaction, 1n) },
    ]
    const bundler = await deployBundler(env.chain.anvil)
    const hash = await env.chain.anvil.walletClient.sendTransaction({ account: relayer, to: bundler, data: encodeFunctionData({ abi: testBundlerAbi, functionName: 'run', args: [calls] }) })
    expect((await env.chain.anvil.publicClient.waitForTransactionReceipt({ hash })).status).toBe('success')
    for (const id of [short.body.stream.id, full.body.stream.id]) {
      expectRefused(await confirm(id, hash), /carry the funding tags of 2 of its streams.*fund each stream in a transaction of its own/)
      expect(await state(id)).toBe('pending')
    }
  })

  /** Each wallet's built funding, in one transaction the first wallet's relayer sends through a bundler. */
  async function bundleFundings(...wallets: Awaited<ReturnType<typeof walletCreatorStream>>[]) {
    const calls = await Promise.all(wallets.map(async (w) => ({ to: w.wallet, data: await signedWalletCall(env.chain.anvil, w.owner, w.wallet, w.stream.body.transactions[0].transaction) })))
    const bundler = await deployBundler(env.chain.anvil)
    const hash = await env.chain.anvil.walletClient.sendTransaction({ account: wallets[0]!.relayer, to: bundler, data: encodeFunctionData({ abi: testBundlerAbi, functionName: 'run', args: [calls] }) })
    expect((await env.chain.anvil.publicClient.waitForTransactionReceipt({ hash })).status).toBe('success')
    return hash
  }

  test("one bundle of two wallets' transfers, each for its own stream, funds both: whoever confirms first takes nothing from the other", async () => {
    const a = await walletCreatorStream()
    const b = await walletCreatorStream()
    const hash = await bundleFundings(a, b)
    // The second confirmed had been 409 (the transaction "already funded a stream") and stayed pending for good.
    for (const s of [b, a]) {
      const confirmed = await confirm(s.stream.body.stream.id, hash)
      expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200)
      expect(confirmed.body.stream).toMatchObject({ state: 'active', fundingTxHash: hash })
    }
    // Each stream's own again is not pending (400), as ever.
    const again = await confirm(a.stream.body.stream.id, hash)
    expect([again.status, again.body.context?.state]).toEqual([400, 'active'])
  })

  test("one bundle funding two streams in a token that keeps 1% silently funds neither: the transaction's shortfall counts against each", async () => {
    const token = await deployDishonestToken(env.chain.anvil, 'TestSwitchedFeeToken')
    const a = await walletCreatorStream(token)
    const b = await walletCreatorStream(token)
    await env.chain.anvil.walletClient.writeContract({ address: token, abi: switchedFeeAbi, functionName: 'setFee', args: [true] })
    const hash = await bundleFundings(a, b)
    // Measured as what the treasury's balance rose by, against each stream's own logged transfer, both went active.
    for (const s of [a, b]) {
      expectRefused(await confirm(s.stream.body.stream.id, hash), /the token keeps part of what it moves/)
      expect(await state(s.stream.body.stream.id)).toBe('pending')
    }
  })

  test("the stream's tag appended by the relayer to the wallet's untagged transfer does not fund it", async () => {
    const { owner, relayer, wallet, stream: r } = await walletCreatorStream()
    const transfer = r.body.transactions[0].transaction as Json
    const untagged = { ...transfer, data: transferData(env.treasury, BigInt(r.body.totalPulled), '0x') }
    const receipt = await relayThroughWallet(env.chain.anvil, { owner, relayer, wallet, tx: untagged, appended: tagOf(transfer) })
    expect(receipt.status).toBe('success')
    expectRefused(await confirm(r.body.stream.id, receipt.transactionHash), /not on the creator's own transfer/)
    expect(await state(r.body.stream.id)).toBe('pending')
  })
})

describe('contention', () => {
  test('a transition that keeps losing its compare-and-set to other requests is 409 CONFLICT (was a 500), and writes nothing', async () => {
    const created = await env.h.post('/v2/streams', env.pointBody())
    expect(created.body.stream.state).toBe('active')
    const id = created.body.stream.id
    const real = env.h.store
    const clock = env.h.deps.clock
    // Between each read and write of ours another request pauses the stream, and resumes it before we read again:
    // every compare-and-set of ours from "active" loses, against the real store.
    const store = new Proxy(real, {
      get(target, prop, receiver) {
        if (prop !== 'setStreamState') return Reflect.get(target, prop, receiver)
        const setStreamState: Store['setStreamState'] = async (streamId, change) => {
          expect(await real.setStreamState(streamId, { from: 'active', to: 'paused', at: clock.now() })).toBe(true)
          const won = await real.setStreamState(streamId, change)
          expect(await real.setStreamState(streamId, { from: 'paused', to: 'active', at: clock.now() })).toBe(true)
          return won
        }
        return setStreamState
      },
    })
    const deps = { store, ecosystems: env.h.deps.ecosystems, clock, attributionSecret: env.h.deps.attributionSecret, treasuries: {} }
    const error = await transitionStream(deps, { orgId: env.h.org.orgId, streamId: id, action: 'pause' }).then(() => undefined, (e: unknown) => e)
    expect(error).toMatchObject({ code: 'CONFLICT', status: 409, context: { streamId: 'changed state concurrently' } })
    expect(await state(id)).toBe('active')
    // Uncontended, the same request goes through.
    expect((await env.h.post(`/v2/streams/${id}/pause`)).body.stream.state).toBe('paused')
  })
})

describe("another organization's streams are 404", () => {
  test('get, confirm, pause, resume and cancel answer as for an unknown stream; its list does not show them', async () => {
    const s = await createTokenStream()
    const hash = await env.send(s.creator, s.transaction)
    const other = await env.organization()
    const attempts = [
      env.h.get(`/v2/streams/${s.id}`, { key: other }),
      confirm(s.id, hash, other),
      ...['pause', 'resume', 'cancel'].map((a) => env.h.post(`/v2/streams/${s.id}/${a}`, undefined, { key: other })),
    ]
    const unknown = await env.h.get('/v2/streams/00000000-0000-4000-8000-000000000000')
    for (const r of [...(await Promise.all(attempts)), unknown]) {
      expect(r.status).toBe(404)
      expectEnvelope(r.body, 404, 'NOT_FOUND')
      expect(r.body.context).toEqual({ streamId: 'unknown stream' })
    }
    expect((await env.h.get('/v2/streams', { key: other })).body).toMatchObject({ streams: [], total: 0 })
    // Nothing they tried changed it.
    expect(await state(s.id)).toBe('pending')
    expect((await confirm(s.id, hash)).body.stream.state).toBe('active')
  })

  test('a publishable key of the owner reads streams but is 401 on every stream write', async () => {
    const pk = env.h.org.publishableKey
    const listed = await env.h.get('/v2/streams', { key: pk })
    expect(listed.status).toBe(200)
    const unknown = await env.h.get('/v2/streams/00000000-0000-4000-8000-000000000000', { key: pk })
    expectEnvelope(unknown.body, 404, 'NOT_FOUND')
    for (const r of await Promise.all([
      env.h.post('/v2/streams/00000000-0000-4000-8000-000000000000/pause', undefined, { key: pk }),
      confirm('00000000-0000-4000-8000-000000000000', `0x${'ab'.repeat(32)}`, pk),
    ])) {
      expect(r.status).toBe(401)
      expectEnvelope(r.body, 401, 'UNAUTHORIZED')
    }
  })
})
