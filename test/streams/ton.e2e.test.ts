/**
 * A token stream on TON through the API (the sandbox serves chain -239): created with a TON Connect request
 * that transfers the sample tUSD jetton to the treasury with the stream's tag as the forward comment, pending
 * until the wallet's transaction is confirmed against the chain.
 */
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { createStore, importCatalog } from '@earn/core'
import { commentCell, jettonTransferBody, parseJettonTransfer, readTonBalance, type TonConnectRequest } from '@earn/plugin-ton'
import { Address, Cell, toNano } from '@ton/core'
import { keyPairFromSeed } from '@ton/crypto'
import { WalletContractV4 } from '@ton/ton'
import { randomBytes } from 'node:crypto'
import { feeTakingWalletCode } from '../chains/ton.ts'
import { startTonStreams, TON_CHAIN } from './chainStreams.ts'
import { createHarness, expectEnvelope } from '../harness.ts'
import { DATABASE_URL, freshSchema } from '../services.ts'

setDefaultTimeout(60_000)

const CHAIN = TON_CHAIN
const { chain, sample, treasury, h, entry } = await startTonStreams()
afterAll(() => h.close())

/** A token stream rewarding the sample entry's depositors for a day from now, funded by `creator`. */
function createStream(creator: Address, rewardToken: string, netBudget: string, server = h) {
  const now = Math.floor(chain.client.now() / 1000)
  const stream = { type: 'token', chainId: CHAIN, rewardToken, creatorAddress: creator.toString({ bounceable: false }), netBudget, targetOpportunityId: entry.id }
  return server.post('/v2/streams', { ...stream, startTime: now, endTime: now + 86_400 })
}

/** A v5r1 wallet with TON for fees and `tusd` of the sample jetton. */
async function creatorWith(tusd: bigint) {
  const keyPair = keyPairFromSeed(randomBytes(32))
  const wallet = await chain.deployWallet('v5r1', keyPair, toNano('3'))
  await chain.mintJetton(sample.baseToken, wallet.address, tusd)
  return { keyPair, wallet }
}

test('a jetton token stream: fee, one tagged jetton transfer, pending until the wallet transaction is confirmed', async () => {
  const keyPair = keyPairFromSeed(randomBytes(32))
  const wallet = await chain.deployWallet('v5r1', keyPair, toNano('3'))
  await chain.mintJetton(sample.baseToken, wallet.address, 2_000_000n)
  const r = await createStream(wallet.address, sample.baseToken.toString(), '1000001')
  expect(r.status, r.text).toBe(200)
  expect([r.body.FeeAmount, r.body.totalPulled, r.body.stream.state]).toEqual(['15001', '1015002', 'pending'])
  const id = r.body.stream.id

  const early = await h.post(`/v2/streams/${id}/confirm`, { txHash: 'ab'.repeat(32) })
  expect(early.status).toBe(400)
  expectEnvelope(early.body, 400, 'INVALID_ARGUMENT')

  const sent = await chain.sendTonConnect(wallet, keyPair, r.body.transactions[0].transaction as TonConnectRequest)
  const held = await readTonBalance(chain.client, { chainId: CHAIN, owner: treasury.address.toRawString(), token: sample.baseToken.toRawString() })
  expect(held).toBe(1_015_002n)
  const confirmed = await h.post(`/v2/streams/${id}/confirm`, { txHash: sent.hash })
  expect(confirmed.status, confirmed.text).toBe(200)
  expect(confirmed.body.stream).toMatchObject({ state: 'active', fundingTxHash: sent.hash })
})

test('a TON stream whose funding the treasury bounced back is not confirmed; one the treasury kept is', async () => {
  // A treasury whose contract fails every message (an emulator can place one): the funding comes back.
  const failing = Address.parseRaw(`0:${randomBytes(32).toString('hex')}`)
  await chain.placeFailingContract(failing)
  const refusing = await createHarness({ clients: { ton: chain.client }, env: { STREAM_TREASURIES: `${CHAIN}=${failing.toRawString()}` } })
  await importCatalog({ store: refusing.store, ecosystems: refusing.deps.ecosystems, clock: refusing.deps.clock }, { opportunities: [entry] })
  try {
    const keyPair = keyPairFromSeed(randomBytes(32))
    const wallet = await chain.deployWallet('v4r2', keyPair, toNano('5'))
    const now = Math.floor(chain.client.now() / 1000)
    const create = (app: typeof h) =>
      app.post('/v2/streams', {
        type: 'token',
        chainId: CHAIN,
        rewardToken: 'native',
        creatorAddress: wallet.address.toString({ bounceable: false }),
        netBudget: toNano('1').toString(),
        targetOpportunityId: entry.id,
        startTime: now,
        endTime: now + 86_400,
      })
    const bounced = await create(refusing)
    expect(bounced.status, bounced.text).toBe(200)
    const sent = await chain.sendTonConnect(wallet, keyPair, bounced.body.transactions[0].transaction as TonConnectRequest)
    const refused = await refusing.post(`/v2/streams/${bounced.body.stream.id}/confirm`, { txHash: sent.hash })
    expect(refused.status, refused.text).toBe(400)
    expectEnvelope(refused.body, 400, 'INVALID_ARGUMENT')
    expect((await refusing.get(`/v2/streams/${bounced.body.stream.id}`)).body.stream.state).toBe('pending')

    const kept = await create(h)
    expect(kept.status, kept.text).toBe(200)
    const funded = await chain.sendTonConnect(wallet, keyPair, kept.body.transactions[0].transaction as TonConnectRequest)
    const confirmed = await h.post(`/v2/streams/${kept.body.stream.id}/confirm`, { txHash: funded.hash })
    expect(confirmed.status, confirmed.text).toBe(200)
    expect(confirmed.body.stream.state).toBe('active')
  } finally {
    await refusing.close()
  }
})

test("one request funding two streams confirms neither: what each stream's message moved is summed per transaction", async () => {
  const keyPair = keyPairFromSeed(randomBytes(32))
  const wallet = await chain.deployWallet('v5r1', keyPair, toNano('3'))
  await chain.mintJetton(sample.baseToken, wallet.address, 5_000_000n)
  const now = Math.floor(chain.client.now() / 1000)
  const create = (netBudget: string) =>
    h.post('/v2/streams', { type: 'token', chainId: CHAIN, rewardToken: sample.baseToken.toString(), creatorAddress: wallet.address.toString({ bounceable: false }), netBudget, targetOpportunityId: entry.id, startTime: now, endTime: now + 86_400 })
  const [a, b] = [await create('2000000'), await create('1000000')]
  expect([a.status, b.status]).toEqual([200, 200])
  const [ra, rb] = [a.body.transactions[0].transaction as TonConnectRequest, b.body.transactions[0].transaction as TonConnectRequest]
  // Both streams' messages in one request: a wallet sends several at once.
  const sent = await chain.sendTonConnect(wallet, keyPair, { ...ra, messages: [...ra.messages, ...rb.messages] })
  for (const id of [a.body.stream.id, b.body.stream.id]) {
    const refused = await h.post(`/v2/streams/${id}/confirm`, { txHash: sent.hash })
    expect(refused.status, refused.text).toBe(400)
    expect(refused.body.error).toMatch(/carry the funding tags of 2 of its streams.*fund each stream in a transaction of its own/)
    expect((await h.get(`/v2/streams/${id}`)).body.stream.state).toBe('pending')
  }
})

test('a funding beside a comment shaped as a funding tag whose stream id is no UUID (a NUL, which PostgreSQL text refuses) confirms, on both engines', async () => {
  const { schema, drop } = await freshSchema()
  const onPostgres = await createHarness({ store: createStore({ engine: 'postgres', url: DATABASE_URL, schema }), clients: { ton: chain.client }, env: { STREAM_TREASURIES: `${CHAIN}=${treasury.address.toRawString()}` } })
  try {
    await importCatalog({ store: onPostgres.store, ecosystems: onPostgres.deps.ecosystems, clock: onPostgres.deps.clock }, { opportunities: [entry] })
    for (const server of [h, onPostgres]) {
      const { keyPair, wallet } = await creatorWith(2_000_000n)
      const r = await createStream(wallet.address, sample.baseToken.toString(), '1000000', server)
      expect(r.status, r.text).toBe(200)
      const request = r.body.transactions[0].transaction as TonConnectRequest
      const odd = { address: wallet.address.toString({ bounceable: false }), amount: toNano('0.01').toString(), payload: commentCell(`earn:v1:stream:x\u0000y:${'0'.repeat(32)}`).toBoc().toString('base64') }
      const sent = await chain.sendTonConnect(wallet, keyPair, { ...request, messages: [...request.messages, odd] })
      const confirmed = await server.post(`/v2/streams/${r.body.stream.id}/confirm`, { txHash: sent.hash })
      expect(confirmed.status, confirmed.text).toBe(200)
      expect(confirmed.body.stream.state).toBe('active')
    }
  } finally {
    await onPostgres.close()
    await drop()
  }
})

test('STREAM_REWARD_TOKENS on TON: a jetton named raw takes its friendly spellings; the refusal names it in its contract form, as streams show it', async () => {
  const listed = await createHarness({ store: h.store, clients: { ton: chain.client }, env: { STREAM_TREASURIES: `${CHAIN}=${treasury.address.toRawString()}`, STREAM_REWARD_TOKENS: `${CHAIN}=${sample.baseToken.toRawString()}` } })
  const { wallet } = await creatorWith(2_000_000n)
  const ok = await createStream(wallet.address, sample.baseToken.toString({ bounceable: false }), '1000000', listed)
  expect(ok.status, ok.text).toBe(200)
  const refused = await createStream(wallet.address, 'native', '1000000', listed)
  expect(refused.status).toBe(400)
  expect(refused.body.context.rewardToken).toBe(`is not a reward token this deployment takes on chain ${CHAIN}; it takes ${ok.body.stream.rewardToken} (STREAM_REWARD_TOKENS)`)
  expect(ok.body.stream.rewardToken).toBe(sample.baseToken.toString())
})

test("only the funding tag's own message counts: the amount sent on a message carrying another tag is not this stream's funding", async () => {
  const keyPair = keyPairFromSeed(randomBytes(32))
  const wallet = await chain.deployWallet('v5r1', keyPair, toNano('3'))
  await chain.mintJetton(sample.baseToken, wallet.address, 3_000_000n)
  const now = Math.floor(chain.client.now() / 1000)
  const r = await h.post('/v2/streams', { type: 'token', chainId: CHAIN, rewardToken: sample.baseToken.toString(), creatorAddress: wallet.address.toString({ bounceable: false }), netBudget: '1000000', targetOpportunityId: entry.id, startTime: now, endTime: now + 86_400 })
  expect(r.status, r.text).toBe(200)
  const request = r.body.transactions[0].transaction as TonConnectRequest
  const message = request.messages[0]!
  const transfer = parseJettonTransfer(Cell.fromBase64(message.payload!))!
  const payload = (t: Partial<typeof transfer>) => jettonTransferBody({ ...transfer, ...t }).toBoc().toString('base64')
  // The stream's tag on a transfer of 1; the whole amount on a message carrying another tag-like comment.
  const sent = await chain.sendTonConnect(wallet, keyPair, {
    ...request,
    messages: [
      { ...message, payload: payload({ amount: 1n }) },
      { ...message, payload: payload({ queryId: transfer.queryId + 1n, forwardPayload: commentCell('earn:v1:not-this-stream') }) },
    ],
  })
  const refused = await h.post(`/v2/streams/${r.body.stream.id}/confirm`, { txHash: sent.hash })
  expect(refused.status, refused.text).toBe(400)
  expect(refused.body.context).toMatchObject({ required: r.body.totalPulled, transferred: '1' })
})

test('a TON stream under the least TON a message carries is refused naming netBudget, from an empty wallet too: no top-up would make it buildable', async () => {
  // A wallet never funded: its address, no account.
  const wallet = WalletContractV4.create({ workchain: 0, publicKey: keyPairFromSeed(randomBytes(32)).publicKey })
  const r = await createStream(wallet.address, 'native', '1000')
  expect(r.status, r.text).toBe(400)
  expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
  expect(r.body.context).toEqual({ netBudget: 'totalPulled 1015 (netBudget plus fee) must be at least 10000000 (0.01 TON)' })
})

test('a jetton whose wallets take a fee on receipt: confirm counts what the treasury was credited, so the stream stays pending', async () => {
  const master = await chain.deployJetton({ decimals: 6, walletCode: feeTakingWalletCode() })
  const keyPair = keyPairFromSeed(randomBytes(32))
  const wallet = await chain.deployWallet('v5r1', keyPair, toNano('3'))
  // Minted through a wallet of the same code: 3,000,000 sent, 2,970,000 credited.
  await chain.mintJetton(master, wallet.address, 3_000_000n)
  const held = (owner: Address) => readTonBalance(chain.client, { chainId: CHAIN, owner: owner.toRawString(), token: master.toRawString() })
  expect(await held(wallet.address)).toBe(2_970_000n)
  const r = await createStream(wallet.address, master.toString(), '1000000')
  expect(r.status, r.text).toBe(200)
  expect(r.body.totalPulled).toBe('1015000')
  const before = await held(treasury.address)
  const sent = await chain.sendTonConnect(wallet, keyPair, r.body.transactions[0].transaction as TonConnectRequest)
  expect((await held(treasury.address)) - before).toBe(1_004_850n)
  const confirm = await h.post(`/v2/streams/${r.body.stream.id}/confirm`, { txHash: sent.hash })
  expect(confirm.status, confirm.text).toBe(400)
  expectEnvelope(confirm.body, 400, 'INVALID_ARGUMENT')
  expect(confirm.body.context.txHash).toStartWith('it moves 1004850 of the 1015000 smallest units of the reward token')
  expect((await h.get(`/v2/streams/${r.body.stream.id}`)).body.stream.state).toBe('pending')
})
