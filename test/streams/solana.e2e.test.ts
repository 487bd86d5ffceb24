/**
 * A token stream on Solana through the API (LiteSVM behind the JSON-RPC facade): created with a funding
 * transaction of the sample base token, pending until that transaction lands and is confirmed against the chain.
 */
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { importCatalog } from '@earn/core'
import { solana } from '@earn/plugin-solana'
import { address, decompileTransactionMessage, generateKeyPairSigner, getBase64Encoder, getCompiledTransactionMessageDecoder, getTransactionDecoder, type Instruction } from '@solana/kit'
import { startSolanaStreams } from './chainStreams.ts'
import { createHarness, expectEnvelope } from '../harness.ts'

setDefaultTimeout(60_000)

const { chain, sample, treasury, h, entry } = await startSolanaStreams()
afterAll(async () => {
  await h.close()
  await chain.stop()
})

test('an SPL token stream: fee, one memo-tagged transfer, pending until the landed transfer is confirmed', async () => {
  const creator = await generateKeyPairSigner()
  await chain.airdrop(creator.address, 1_000_000_000n)
  await sample.fund(creator.address, 2_000_000n)
  const now = Math.floor(Date.now() / 1000)
  const r = await h.post('/v2/streams', {
    type: 'token',
    chainId: 'localnet',
    rewardToken: sample.baseMint,
    creatorAddress: creator.address,
    netBudget: '1000001',
    targetOpportunityId: entry.id,
    startTime: now,
    endTime: now + 86_400,
  })
  expect(r.status, r.text).toBe(200)
  expect([r.body.FeeAmount, r.body.totalPulled, r.body.stream.state]).toEqual(['15001', '1015002', 'pending'])
  expect(r.body.transactions).toHaveLength(1)
  expect(r.body.transactions[0]).toMatchObject({ type: 'transfer', metadata: { feePayer: creator.address, token: sample.baseMint, to: treasury, amount: '1015002' } })
  const id = r.body.stream.id

  const early = await h.post(`/v2/streams/${id}/confirm`, { txHash: '5'.repeat(87) })
  expect(early.status).toBe(400)
  expectEnvelope(early.body, 400, 'INVALID_ARGUMENT')
  expect((await h.get(`/v2/streams/${id}`)).body.stream.state).toBe('pending')

  const signature = await chain.signAndSend(r.body.transactions[0].transaction.serializedTransaction, creator)
  expect(await chain.tokenBalance(sample.baseMint, treasury)).toBe(1_015_002n)
  const confirmed = await h.post(`/v2/streams/${id}/confirm`, { txHash: signature })
  expect(confirmed.status, confirmed.text).toBe(200)
  expect(confirmed.body.stream).toMatchObject({ state: 'active', fundingTxHash: signature, treasuryAddress: treasury })
})

test('a budget beyond what any Solana account holds (u64) is refused naming netBudget, before the balance: no top-up would mend it', async () => {
  const creator = await generateKeyPairSigner()
  const now = Math.floor(Date.now() / 1000)
  const r = await h.post('/v2/streams', { type: 'token', chainId: 'localnet', rewardToken: 'native', creatorAddress: creator.address, netBudget: (2n ** 64n).toString(), targetOpportunityId: entry.id, startTime: now, endTime: now + 60 })
  expect(r.status).toBe(400)
  expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
  expect(r.body.error).toBe('amount must be a positive integer that fits in 64 bits')
  expect(r.body.context).toEqual({ netBudget: `totalPulled ${2n ** 64n + (2n ** 64n * 150n + 9_999n) / 10_000n} (netBudget plus fee) must be between 1 and ${2n ** 64n - 1n} smallest units` })
})

test("a SOL stream into a treasury holding nothing: the rent-exempt bound is on totalPulled, and the 400 says so under netBudget", async () => {
  const creator = await generateKeyPairSigner()
  await chain.airdrop(creator.address, 1_000_000_000n)
  const now = Math.floor(Date.now() / 1000)
  const body = (netBudget: string) => ({ type: 'token', chainId: 'localnet', rewardToken: 'native', creatorAddress: creator.address, netBudget, targetOpportunityId: entry.id, startTime: now, endTime: now + 60 })
  // 877,000 plus its fee (13,155) is 890,155: short of the 890,880 a new account must hold.
  const short = await h.post('/v2/streams', body('877000'))
  expect(short.status).toBe(400)
  expectEnvelope(short.body, 400, 'INVALID_ARGUMENT')
  expect(short.body.context).toEqual({ netBudget: 'totalPulled 890155 (netBudget plus fee) must be at least 890880 while the recipient holds nothing' })
  // Below 890,880 itself, but its total reaches it: built, and it lands.
  const enough = await h.post('/v2/streams', body('880000'))
  expect(enough.status, enough.text).toBe(200)
  expect(enough.body.totalPulled).toBe('893200')
  await chain.signAndSend(enough.body.transactions[0].transaction.serializedTransaction, creator)
  expect<bigint | null>(chain.svm.getBalance(address(treasury))).toBe(893_200n)
})

test("one transaction funding two streams confirms neither: what each stream's transfer moved is summed per transaction", async () => {
  const creator = await generateKeyPairSigner()
  await chain.airdrop(creator.address, 1_000_000_000n)
  await sample.fund(creator.address, 5_000_000n)
  const now = Math.floor(Date.now() / 1000)
  const create = (netBudget: string) =>
    h.post('/v2/streams', { type: 'token', chainId: 'localnet', rewardToken: sample.baseMint, creatorAddress: creator.address, netBudget, targetOpportunityId: entry.id, startTime: now, endTime: now + 86_400 })
  const [a, b] = [await create('2000000'), await create('1000000')]
  expect([a.status, b.status]).toEqual([200, 200])
  // Both streams' instructions (each a memo with its tag and a transfer) in one transaction the creator signs.
  const instructions = [a, b].flatMap((r) => {
    const wire = getTransactionDecoder().decode(getBase64Encoder().encode(r.body.transactions[0].transaction.serializedTransaction))
    return decompileTransactionMessage(getCompiledTransactionMessageDecoder().decode(wire.messageBytes)).instructions
  })
  const signature = await chain.send([...instructions], creator)
  for (const id of [a.body.stream.id, b.body.stream.id]) {
    const refused = await h.post(`/v2/streams/${id}/confirm`, { txHash: signature })
    expect(refused.status, refused.text).toBe(400)
    expect(refused.body.error).toMatch(/carry the funding tags of 2 of its streams.*fund each stream in a transaction of its own/)
    expect((await h.get(`/v2/streams/${id}`)).body.stream.state).toBe('pending')
  }
})

test("one transaction carrying two creators' fundings (a relayer joining them, each creator signing) funds both: each counts only its own transfers", async () => {
  const creators = [await generateKeyPairSigner(), await generateKeyPairSigner()]
  for (const c of creators) {
    await chain.airdrop(c.address, 1_000_000_000n)
    await sample.fund(c.address, 5_000_000n)
  }
  const now = Math.floor(Date.now() / 1000)
  const created = await Promise.all(
    creators.map((c, i) =>
      h.post('/v2/streams', { type: 'token', chainId: 'localnet', rewardToken: sample.baseMint, creatorAddress: c.address, netBudget: String((i + 1) * 1_000_000), targetOpportunityId: entry.id, startTime: now, endTime: now + 86_400 }),
    ),
  )
  expect(created.map((r) => r.status)).toEqual([200, 200])
  // Each creator's instructions, its signer attached (the first pays the fee): one transaction both sign.
  const instructions = created.flatMap((r, i) => {
    const wire = getTransactionDecoder().decode(getBase64Encoder().encode(r.body.transactions[0].transaction.serializedTransaction))
    const decoded = decompileTransactionMessage(getCompiledTransactionMessageDecoder().decode(wire.messageBytes)).instructions as readonly Instruction[]
    return decoded.map((ix) => ({
      ...ix,
      accounts: ix.accounts?.map((a) => (a.address === creators[i]!.address && 'role' in a && a.role >= 2 ? { ...a, signer: creators[i]! } : a)),
    }))
  })
  const signature = await chain.send(instructions as never, creators[0]!)
  for (const r of created) {
    const confirmed = await h.post(`/v2/streams/${r.body.stream.id}/confirm`, { txHash: signature })
    expect(confirmed.status, confirmed.text).toBe(200)
    expect(confirmed.body.stream.state).toBe('active')
  }
})

test('a creation reads the balance and builds the funding side by side: a slow node holds it one round of reads, not two', async () => {
  const arrivals: { method: string; at: number }[] = []
  // Each answer comes back 300 ms late, as a remote RPC's may.
  const lagging = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const body = await req.text()
      for (const call of [JSON.parse(body)].flat() as { method: string }[]) arrivals.push({ method: call.method, at: performance.now() })
      const answer = await (await fetch(chain.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).text()
      await Bun.sleep(300)
      return new Response(answer, { headers: { 'content-type': 'application/json' } })
    },
  })
  const slow = await createHarness({ clients: { solana: solana.connect({ SOLANA_RPC_URL: `http://127.0.0.1:${lagging.port}` }) }, env: { STREAM_TREASURIES: `localnet=${treasury}` } })
  try {
    // The import asks the cluster first, so the creation below makes only its own reads.
    await importCatalog({ store: slow.store, ecosystems: slow.deps.ecosystems, clock: slow.deps.clock }, { opportunities: [entry] })
    const creator = await generateKeyPairSigner()
    await chain.airdrop(creator.address, 1_000_000_000n)
    await sample.fund(creator.address, 2_000_000n)
    const now = Math.floor(Date.now() / 1000)
    arrivals.length = 0
    const r = await slow.post('/v2/streams', { type: 'token', chainId: 'localnet', rewardToken: sample.baseMint, creatorAddress: creator.address, netBudget: '1000001', targetOpportunityId: entry.id, startTime: now, endTime: now + 86_400 })
    expect(r.status, r.text).toBe(200)
    const methods = new Set(arrivals.map((a) => a.method))
    // The balance read (the creator's token accounts) and the build's own reads (a blockhash, at least)...
    expect(methods.has('getTokenAccountsByOwner') && methods.has('getLatestBlockhash')).toBe(true)
    // ...all asked before any answer came back (the build waited for the balance's answer: 300 ms apart at least).
    const times = arrivals.map((a) => a.at)
    expect(Math.max(...times) - Math.min(...times)).toBeLessThan(200)
  } finally {
    await slow.close()
    lagging.stop(true)
  }
})
