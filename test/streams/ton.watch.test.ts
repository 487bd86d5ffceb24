/**
 * The watch on pending token streams (core/src/streams/watch.ts) on TON, the sandbox serving chain -239: a TON stream
 * and a jetton stream become active once their funding is on chain, without a confirm, the watch going back from what
 * reached the treasury (or its jetton wallet) to the creator's wallet transaction; a transfer that is not a stream's
 * funding (untagged, short, another creator's) leaves it pending; a pass after it reads nothing again; an index that
 * does not answer is looked at again.
 */
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { createRegistry, startStreamWatcher } from '@earn/core'
import { createTonClient, jettonTransferBody, parseJettonTransfer, ton, type TonConnectRequest } from '@earn/plugin-ton'
import { type Address, beginCell, Cell, toNano } from '@ton/core'
import { type KeyPair, keyPairFromSeed } from '@ton/crypto'
import { randomBytes } from 'node:crypto'
import type { TonWallet } from '../chains/ton.ts'
import { startTonStreams, TON_CHAIN } from './chainStreams.ts'

setDefaultTimeout(60_000)

const CHAIN = TON_CHAIN
const { chain, sample, treasury, h, entry } = await startTonStreams()

const logged: Record<string, unknown>[] = []
const watcherOf = (log: Record<string, unknown>[] = []) =>
  startStreamWatcher(
    {
      store: h.deps.store,
      ecosystems: h.deps.ecosystems,
      clock: h.deps.clock,
      attributionSecret: h.deps.attributionSecret,
      treasuries: h.deps.config.streamTreasuries,
      logger: { info: (f) => log.push(f), error: (f) => log.push(f) },
    },
    // An hour between passes: the test runs each pass itself.
    3_600_000,
  )
const watcher = watcherOf(logged)
afterAll(async () => {
  await watcher.stop()
  await h.close()
})

interface Creator {
  keyPair: KeyPair
  wallet: TonWallet
}

/** A v5r1 wallet with TON for fees and, where asked, some of the sample jetton. */
async function creatorWith(tusd = 0n): Promise<Creator> {
  const keyPair = keyPairFromSeed(randomBytes(32))
  const wallet = await chain.deployWallet('v5r1', keyPair, toNano('5'))
  if (tusd > 0n) await chain.mintJetton(sample.baseToken, wallet.address, tusd)
  return { keyPair, wallet }
}

/** A stream of the sample entry for a day from now; its funding request and what it pulls. */
async function created(creator: Address, rewardToken: string, netBudget: string) {
  const now = Math.floor(chain.client.now() / 1000)
  const r = await h.post('/v2/streams', {
    type: 'token',
    chainId: CHAIN,
    rewardToken,
    creatorAddress: creator.toString({ bounceable: false }),
    netBudget,
    targetOpportunityId: entry.id,
    startTime: now,
    endTime: now + 86_400,
  })
  expect(r.status, r.text).toBe(200)
  return { id: r.body.stream.id as string, request: r.body.transactions[0].transaction as TonConnectRequest, totalPulled: BigInt(r.body.totalPulled) }
}

const send = (c: Creator, request: TonConnectRequest) => chain.sendTonConnect(c.wallet, c.keyPair, { ...request, from: c.wallet.address.toRawString() })
const state = async (id: string) => (await h.get(`/v2/streams/${id}`)).body.stream

test('a TON stream funded by its built transfer is active after the next pass, with no confirm; a second pass reads nothing again', async () => {
  const creator = await creatorWith()
  const s = await created(creator.wallet.address, 'native', toNano('1').toString())
  expect((await watcher.watchNow()).funded).toBe(0)
  const sent = await send(creator, s.request)
  expect(await watcher.watchNow()).toEqual({ funded: 1, read: 1, failed: 0 })
  expect(await state(s.id)).toMatchObject({ state: 'active', fundingTxHash: sent.hash })
  expect(logged).toContainEqual({ msg: 'stream funding seen on chain', streamId: s.id, chainId: CHAIN, txHash: sent.hash })
  const late = await h.post(`/v2/streams/${s.id}/confirm`, { txHash: sent.hash })
  expect([late.status, late.body.context]).toEqual([400, { state: 'active', action: 'confirm' }])
  expect(await watcher.watchNow()).toEqual({ funded: 0, read: 0, failed: 0 })
})

test("a jetton stream is found two hops back from the treasury's jetton wallet; a second pass reads nothing again", async () => {
  const creator = await creatorWith(3_000_000n)
  const s = await created(creator.wallet.address, sample.baseToken.toString(), '1000000')
  // The treasury's jetton wallet is not deployed yet: nothing to list, and the next look is a first look again.
  expect(await watcher.watchNow()).toEqual({ funded: 0, read: 0, failed: 0 })
  const sent = await send(creator, s.request)
  expect(await watcher.watchNow()).toEqual({ funded: 1, read: 1, failed: 0 })
  expect(await state(s.id)).toMatchObject({ state: 'active', fundingTxHash: sent.hash })
  expect(await watcher.watchNow()).toEqual({ funded: 0, read: 0, failed: 0 })
})

test("transfers to the treasury that are not a stream's funding leave it pending: untagged, short, another creator's; its own then counts", async () => {
  // Enough of the jetton for the untagged and short transfers and then the funding.
  const creator = await creatorWith(4_000_000n)
  const other = await creatorWith(2_000_000n)
  const coins = await created(creator.wallet.address, 'native', toNano('1').toString())
  const jetton = await created(creator.wallet.address, sample.baseToken.toString(), '1000000')
  await watcher.watchNow()
  const [coinMessage, jettonMessage] = [coins.request.messages[0]!, jetton.request.messages[0]!]
  const transfer = parseJettonTransfer(Cell.fromBase64(jettonMessage.payload!))!
  const jettonPayload = (t: Partial<typeof transfer>) => jettonTransferBody({ ...transfer, ...t }).toBoc().toString('base64')
  // Untagged, the whole amount: not even read.
  await send(creator, { ...coins.request, messages: [{ address: coinMessage.address, amount: coins.totalPulled.toString() }] })
  await send(creator, { ...jetton.request, messages: [{ ...jettonMessage, payload: jettonPayload({ forwardPayload: null }) }] })
  // Tagged, one unit short.
  await send(creator, { ...coins.request, messages: [{ ...coinMessage, amount: (coins.totalPulled - 1n).toString() }] })
  await send(creator, { ...jetton.request, messages: [{ ...jettonMessage, payload: jettonPayload({ amount: jetton.totalPulled - 1n }) }] })
  // The stream's own tag on another creator's transfer (its MAC is over this creator), from that creator's jetton wallet.
  const othersJettonWallet = (
    await chain.client.provider(sample.baseToken).get('get_wallet_address', [{ type: 'slice', cell: beginCell().storeAddress(other.wallet.address).endCell() }])
  ).stack.readAddress()
  await send(other, coins.request)
  await send(other, { ...jetton.request, messages: [{ ...jettonMessage, address: othersJettonWallet.toString() }] })
  const none = await watcher.watchNow()
  expect(none).toEqual({ funded: 0, read: 4, failed: 0 })
  for (const s of [coins, jetton]) expect((await state(s.id)).state).toBe('pending')

  const [coinsFunding, jettonFunding] = [await send(creator, coins.request), await send(creator, jetton.request)]
  expect(await watcher.watchNow()).toEqual({ funded: 2, read: 2, failed: 0 })
  expect(await state(coins.id)).toMatchObject({ state: 'active', fundingTxHash: coinsFunding.hash })
  expect(await state(jetton.id)).toMatchObject({ state: 'active', fundingTxHash: jettonFunding.hash })
})

test("a stranger's tagged dust to the treasury (a request of many one-nanoton messages) is not followed back: the funding after it is found in the same pass", async () => {
  const creator = await creatorWith()
  const stranger = await creatorWith()
  const s = await created(creator.wallet.address, 'native', toNano('1').toString())
  await watcher.watchNow()
  const tagged = s.request.messages[0]!
  // Its payload is the stream's own tag: what is filtered is the dust, not the tag.
  await send(stranger, { ...s.request, messages: Array.from({ length: 40 }, () => ({ ...tagged, amount: '1' })) })
  const funding = await send(creator, s.request)
  expect(await watcher.watchNow()).toEqual({ funded: 1, read: 1, failed: 0 })
  expect(await state(s.id)).toMatchObject({ state: 'active', fundingTxHash: funding.hash })
})

test("a server's first look finds a funding made before it started: the treasury's transactions of the last day", async () => {
  const creator = await creatorWith()
  const s = await created(creator.wallet.address, 'native', toNano('1').toString())
  const sent = await send(creator, s.request)
  const fresh = watcherOf()
  try {
    expect((await fresh.watchNow()).funded).toBe(1)
  } finally {
    await fresh.stop()
  }
  expect(await state(s.id)).toMatchObject({ state: 'active', fundingTxHash: sent.hash })
})

test('an index that does not answer is looked at again next pass, from where the last look ended', async () => {
  let down = false
  const flaky = createTonClient(chain.client.provider, {
    ...chain.client,
    listTransactions: (account, window) => (down ? Promise.reject(new Error('socket hang up')) : chain.client.listTransactions(account, window)),
  })
  const errors: Record<string, unknown>[] = []
  const proxied = startStreamWatcher(
    {
      store: h.deps.store,
      ecosystems: createRegistry({ ton: async () => ({ plugin: ton, client: flaky }) }),
      clock: h.deps.clock,
      attributionSecret: h.deps.attributionSecret,
      treasuries: {},
      logger: { info() {}, error: (f) => errors.push(f) },
    },
    3_600_000,
  )
  try {
    const creator = await creatorWith()
    const s = await created(creator.wallet.address, 'native', toNano('1').toString())
    expect((await proxied.watchNow()).failed).toBe(0)
    const sent = await send(creator, s.request)
    down = true
    expect(await proxied.watchNow()).toMatchObject({ funded: 0, failed: 1 })
    expect(errors[0]).toMatchObject({ msg: 'stream funding watch: looking for fundings failed; trying again next pass', chainId: CHAIN })
    expect((await state(s.id)).state).toBe('pending')
    down = false
    expect(await proxied.watchNow()).toEqual({ funded: 1, read: 1, failed: 0 })
    expect(await state(s.id)).toMatchObject({ state: 'active', fundingTxHash: sent.hash })
  } finally {
    await proxied.stop()
  }
})
