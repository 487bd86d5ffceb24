/**
 * The watch on pending token streams (core/src/streams/watch.ts) on Solana (LiteSVM behind the JSON-RPC facade): a
 * stream, SPL or SOL, becomes active once its funding lands, without a confirm; what else lands on the treasury's
 * account funds nothing.
 */
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { startStreamWatcher } from '@earn/core'
import { generateKeyPairSigner } from '@solana/kit'
import { startSolanaStreams } from './chainStreams.ts'

setDefaultTimeout(60_000)

const { chain, sample, treasury, h, entry } = await startSolanaStreams()
const logged: Record<string, unknown>[] = []
// An hour between passes: the test runs each pass itself.
const watcher = startStreamWatcher(
  { store: h.deps.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock, attributionSecret: h.deps.attributionSecret, treasuries: {}, logger: { info: (f) => logged.push(f), error: (f) => logged.push(f) } },
  3_600_000,
)
afterAll(async () => {
  await watcher.stop()
  await h.close()
  await chain.stop()
})

async function created(rewardToken: string) {
  const creator = await generateKeyPairSigner()
  await chain.airdrop(creator.address, 2_000_000_000n)
  if (rewardToken !== 'native') await sample.fund(creator.address, 2_000_000n)
  const now = Math.floor(Date.now() / 1000)
  const r = await h.post('/v2/streams', { type: 'token', chainId: 'localnet', rewardToken, creatorAddress: creator.address, netBudget: '1000001', targetOpportunityId: entry.id, startTime: now, endTime: now + 86_400 })
  expect(r.status, r.text).toBe(200)
  return { creator, id: r.body.stream.id as string, transaction: r.body.transactions[0].transaction.serializedTransaction as string }
}
const stream = async (id: string) => (await h.get(`/v2/streams/${id}`)).body.stream

test('an SPL stream becomes active once its funding lands, with no confirm; tokens minted to the treasury fund nothing; a second pass reads nothing', async () => {
  // Something else landing on the treasury's token account: read, and left alone. (Before the stream is built: the
  // facade's next transaction takes a new blockhash, which the built funding would then lack.)
  await sample.fund(treasury, 5_000_000n)
  const s = await created(sample.baseMint)
  const other = await watcher.watchNow()
  expect(other).toMatchObject({ funded: 0, failed: 0 })
  expect(other.read).toBeGreaterThanOrEqual(1)
  expect((await stream(s.id)).state).toBe('pending')

  const signature = await chain.signAndSend(s.transaction, s.creator)
  expect(await watcher.watchNow()).toEqual({ funded: 1, read: 1, failed: 0 })
  expect(await stream(s.id)).toMatchObject({ state: 'active', fundingTxHash: signature })
  expect(logged).toContainEqual({ msg: 'stream funding seen on chain', streamId: s.id, chainId: 'localnet', txHash: signature })
  expect(await watcher.watchNow()).toEqual({ funded: 0, read: 0, failed: 0 })
})

test('a SOL stream becomes active once its funding lands; another stream of the same creator stays pending', async () => {
  const s = await created('native')
  const now = Math.floor(Date.now() / 1000)
  const second = await h.post('/v2/streams', { type: 'token', chainId: 'localnet', rewardToken: 'native', creatorAddress: s.creator.address, netBudget: '1000001', targetOpportunityId: entry.id, startTime: now, endTime: now + 86_400 })
  expect(second.status, second.text).toBe(200)
  expect((await watcher.watchNow()).funded).toBe(0)
  const signature = await chain.signAndSend(s.transaction, s.creator)
  expect((await watcher.watchNow()).funded).toBe(1)
  expect(await stream(s.id)).toMatchObject({ state: 'active', fundingTxHash: signature })
  expect((await stream(second.body.stream.id)).state).toBe('pending')
})
