/**
 * A chain with two spellings (Solana mainnet by name or CAIP-2 id) in STREAM_TREASURIES: either finds the treasury,
 * and both at once stop the start rather than leave which one a stream funds to the order of the variable.
 */
import { expect, test } from 'bun:test'
import { checkTreasuries, ConfigError, streamTag, type StreamRecord } from '@earn/core'
import { solana } from '@earn/plugin-solana'
import { createHarness, expectEnvelope, type Harness } from '../harness.ts'

const CAIP = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'
const [A, B] = ['9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM', '11111111111111111111111111111111']

test('two spellings of one chain in STREAM_TREASURIES stop the start, naming both', () => {
  const loaded = [{ plugin: solana, client: solana.connect({}) }]
  const e = (() => {
    try {
      checkTreasuries(loaded, { [CAIP]: A, mainnet: B })
    } catch (x) {
      return x
    }
  })()
  expect(e).toBeInstanceOf(ConfigError)
  expect((e as Error).message).toBe(`STREAM_TREASURIES: ${CAIP} and mainnet name the same chain (mainnet); give one treasury for it`)
  expect(() => checkTreasuries(loaded, { [CAIP]: A, devnet: B })).not.toThrow()
})

test('a treasury keyed by the CAIP-2 id serves a stream on mainnet (the next check, the target, answers 404)', async () => {
  const body = (chainId: string) => ({
    type: 'token',
    chainId,
    rewardToken: B,
    creatorAddress: A,
    netBudget: '1000',
    targetOpportunityId: crypto.randomUUID(),
    startTime: Math.floor(Date.now() / 1000) + 60,
    endTime: Math.floor(Date.now() / 1000) + 86_400,
  })
  for (const [key, chainId] of [
    [CAIP, 'mainnet'],
    ['mainnet', CAIP],
  ]) {
    const h = await createHarness({ env: { STREAM_TREASURIES: `${key}=${A}` } })
    try {
      const r = await h.post('/v2/streams', body(chainId!))
      expectEnvelope(r.body, 404, 'NOT_FOUND')
      expect(Object.keys(r.body.context)).toEqual(['targetOpportunityId'])
    } finally {
      await h.close()
    }
  }
  // Without a treasury for the chain in any spelling, the chain itself is refused first.
  const none = await createHarness({ env: { STREAM_TREASURIES: `devnet=${A}` } })
  try {
    const r = await none.post('/v2/streams', body('mainnet'))
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(Object.keys(r.body.context)).toEqual(['chainId'])
  } finally {
    await none.close()
  }
})

/** A stream an earlier release stored on mainnet under its CAIP-2 id, as the row is (its tag names that spelling). */
async function legacyStream(h: Harness, over: Partial<StreamRecord>): Promise<string> {
  const now = Date.now()
  const id = crypto.randomUUID()
  await h.store.insertStream({
    id,
    orgId: h.org.orgId,
    type: 'point',
    ecosystem: 'solana',
    chainId: CAIP,
    rewardToken: null,
    pointName: null,
    creator: null,
    treasury: null,
    netBudget: '100',
    feeAmount: '0',
    totalPulled: '0',
    targetOpportunityId: crypto.randomUUID(),
    startTime: now,
    endTime: now + 86_400_000,
    state: 'active',
    fundingTxHash: null,
    createdAt: now,
    updatedAt: now,
    ...over,
  })
  return id
}

test('a stream stored under an earlier spelling of its chain is shown in the one spelling (its row, which its tag names, kept)', async () => {
  const h = await createHarness()
  try {
    const id = await legacyStream(h, { type: 'point', pointName: 'XP', state: 'active' })
    const one = await h.get(`/v2/streams/${id}`)
    expect([one.status, one.body.stream?.chainId]).toEqual([200, 'mainnet'])
    expect((await h.get('/v2/streams/')).body.streams.map((s: { chainId: string }) => s.chainId)).toEqual(['mainnet'])
    expect((await h.store.getStream(id))?.chainId).toBe(CAIP)
  } finally {
    await h.close()
  }
})

test("a confirm's not-found names the chain as the stream shows it, though the chain is read in the stored spelling", async () => {
  // A stand-in for a mainnet node (none can run here): its genesis, and no transaction found.
  const node = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const call = (await request.json()) as { id: number; method: string }
      return Response.json({ jsonrpc: '2.0', id: call.id, result: call.method === 'getGenesisHash' ? '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d' : null })
    },
  })
  const h = await createHarness({ clients: { solana: solana.connect({ SOLANA_RPC_URL: `http://127.0.0.1:${node.port}` }) } })
  try {
    const id = await legacyStream(h, { type: 'token', rewardToken: B, creator: A, treasury: A, feeAmount: '2', totalPulled: '102', state: 'pending' })
    const r = await h.post(`/v2/streams/${id}/confirm`, { txHash: '5'.repeat(87) })
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(r.body.error).toContain('on chain mainnet')
    expect(r.body.error).not.toContain(CAIP)
  } finally {
    await h.close()
    node.stop(true)
  }
})

test("confirming a stream whose ecosystem this server no longer loads is a 503 naming its chain, not a 400 about a field the request lacks", async () => {
  const h = await createHarness({ env: { ECOSYSTEMS: 'evm' } })
  try {
    const id = await legacyStream(h, { type: 'token', rewardToken: A, creator: B, treasury: A, chainId: 'mainnet', state: 'pending' })
    const r = await h.post(`/v2/streams/${id}/confirm`, { txHash: '5'.repeat(87) })
    expect(r.status, r.text).toBe(503)
    expectEnvelope(r.body, 503, 'UNAVAILABLE')
    expect(r.body.context).toEqual({ chainId: 'solana is not loaded' })
  } finally {
    await h.close()
  }
})

test("confirming a stream on a chain this server has no RPC for (any more) is a 503 naming its chain, not a 400", async () => {
  const h = await createHarness({ env: { ECOSYSTEMS: 'evm' } })
  try {
    const token = '0x' + 'aa'.repeat(20)
    const id = await legacyStream(h, { type: 'token', ecosystem: 'evm', chainId: '424242', rewardToken: token, creator: '0x' + 'bb'.repeat(20), treasury: '0x' + 'cc'.repeat(20), state: 'pending' })
    const r = await h.post(`/v2/streams/${id}/confirm`, { txHash: `0x${'ab'.repeat(32)}` })
    expect(r.status, r.text).toBe(503)
    expectEnvelope(r.body, 503, 'UNAVAILABLE')
    expect(r.body.context).toEqual({ chainId: 'no RPC configured' })
  } finally {
    await h.close()
  }
})

const MAINNET_TREASURY = '5ZiE3vAkrdXBgyFL7KqG3RoEGBws4CjRcXVbABDLZTgx'
const MAINNET_TOKEN = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU'

/**
 * A Solana deployment whose chain read is a stand-in (no node here serves mainnet): each funding transaction read
 * carries `tags()` as its memos and one transfer of 100 of the token from the creator to the treasury.
 */
async function withStandInReads(tags: () => string[]): Promise<Harness> {
  const h = await createHarness({ env: { ECOSYSTEMS: 'solana', STREAM_TREASURIES: `mainnet=${MAINNET_TREASURY}` } })
  const real = await h.deps.ecosystems.get('solana')
  const readTransfers = async () => {
    const t = tags()
    return { tag: t[0]!, tags: t, txHash: '5'.repeat(87), from: B, transfers: [{ token: MAINNET_TOKEN, from: B, to: MAINNET_TREASURY, amount: 100n }] }
  }
  h.deps.ecosystems.get = async () => ({ ...real, plugin: { ...real.plugin, transactions: { ...real.plugin.transactions, readTransfers } } })
  return h
}

const fundedBy100 = { type: 'token' as const, rewardToken: MAINNET_TOKEN, creator: B, treasury: MAINNET_TREASURY, netBudget: '100', totalPulled: '100', state: 'pending' as const }

test("one transfer never funds two of a creator's streams stored under two spellings of their chain (each tag's MAC is over its own spelling)", async () => {
  let tags: string[] = []
  const h = await withStandInReads(() => tags)
  try {
    const a = await legacyStream(h, { ...fundedBy100, chainId: CAIP })
    const b = await legacyStream(h, { ...fundedBy100, chainId: 'mainnet' })
    const secret = await h.deps.attributionSecret()
    tags = [streamTag(secret, { streamId: a, wallet: B, chainId: CAIP }), streamTag(secret, { streamId: b, wallet: B, chainId: 'mainnet' })]
    for (const id of [a, b]) {
      const r = await h.post(`/v2/streams/${id}/confirm`, { txHash: '5'.repeat(87) })
      expect(r.status, r.text).toBe(400)
      expect(r.body.error).toMatch(/carry the funding tags of 2 of its streams/)
    }
  } finally {
    await h.close()
  }
})

test('a funding transaction naming many other streams is refused before any is looked up; one not naming this stream looks up none', async () => {
  let tags: string[] = []
  const h = await withStandInReads(() => tags)
  try {
    const id = await legacyStream(h, { ...fundedBy100, chainId: 'mainnet' })
    const own = streamTag(await h.deps.attributionSecret(), { streamId: id, wallet: B, chainId: 'mainnet' })
    const others = Array.from({ length: 16 }, () => `earn:v1:stream:${crypto.randomUUID()}:${'0'.repeat(32)}`)
    let lookups = 0
    const getStream = h.store.getStream.bind(h.store)
    h.store.getStream = (s: string) => (lookups++, getStream(s))
    tags = [own, ...others]
    const many = await h.post(`/v2/streams/${id}/confirm`, { txHash: '5'.repeat(87) })
    expect([many.status, many.body.error], many.text).toEqual([400, expect.stringContaining('carries the funding tags of 17 streams')])
    tags = others
    const before = lookups
    const notOurs = await h.post(`/v2/streams/${id}/confirm`, { txHash: '5'.repeat(87) })
    expect(notOurs.status, notOurs.text).toBe(400)
    // The confirm's own lookups of this stream only (before and after the chain read), none of the tags' streams.
    expect(lookups - before).toBeLessThanOrEqual(2)
  } finally {
    await h.close()
  }
})
