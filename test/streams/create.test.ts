/**
 * POST /v2/streams over HTTP: the exact FeeAmount at the edges (1 unit, amounts that do not divide, the largest
 * uint256, premium organizations, point streams), the funding transaction of a token stream, and every
 * rejection answering the envelope.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { CatalogError, checkRewardTokens, ConfigError, importCatalog, streamFee, UINT256_MAX } from '@earn/core'
import { decodeFunctionData, erc20Abi, getAddress, hexToString, parseAbi, sliceHex, type Hex } from 'viem'
import { deployFeeToken, deployPausableToken, deploySmartWallet, deployToken } from '../chains/evm.ts'
import { localCatalog } from '../actions/localChain.ts'
import { createHarness, expectEnvelope, type Json } from '../harness.ts'
import { startStreamsEnv, type StreamsEnv } from './setup.ts'

setDefaultTimeout(60_000)

let env: StreamsEnv
beforeAll(async () => {
  env = await startStreamsEnv()
})
afterAll(() => env.stop())

const lower = (a: string) => a.toLowerCase()

describe('token streams', () => {
  test('1.5 % rounded up: 1000001 pays 15001, pulls 1015002 in one tagged transfer to the treasury; pending', async () => {
    const { h, chain } = env
    const creator = await env.creator(2_000_000n)
    const body = env.tokenBody(creator)
    const r = await h.post('/v2/streams', body)
    expect(r.status, r.text).toBe(200)
    expect(r.body.FeeAmount).toBe('15001')
    expect(r.body.totalPulled).toBe('1015002')
    const stream = r.body.stream as Json
    expect(stream).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      type: 'token',
      state: 'pending',
      chainId: '31337',
      rewardToken: getAddress(chain.token),
      creatorAddress: creator.address,
      treasuryAddress: env.treasury,
      fundingTxHash: null,
      netBudget: '1000001',
      FeeAmount: '15001',
      totalPulled: '1015002',
      targetOpportunityId: chain.directId,
      startTime: new Date(body.startTime * 1000).toISOString(),
      endTime: new Date(body.endTime * 1000).toISOString(),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    })

    expect(r.body.transactions).toHaveLength(1)
    const [step] = r.body.transactions as Json[]
    expect(step!.type).toBe('transfer')
    expect(step!.transaction).toMatchObject({ to: lower(chain.token), value: '0', chainId: 31337 })
    const data = step!.transaction.data as Hex
    // transfer(treasury, 1015002), then the stream's funding tag.
    const call = sliceHex(data, 0, 68)
    expect(decodeFunctionData({ abi: erc20Abi, data: call })).toEqual({ functionName: 'transfer', args: [env.treasury, 1_015_002n] })
    expect(hexToString(sliceHex(data, 68))).toMatch(new RegExp(`^earn:v1:stream:${stream.id}:[0-9a-f]{32}$`))

    const got = await h.get(`/v2/streams/${stream.id}`)
    expect(got.status).toBe(200)
    expect(got.body).toEqual({ stream })
    // Any case of the id finds it.
    expect((await h.get(`/v2/streams/${stream.id.toUpperCase()}`)).body).toEqual({ stream })
  })

  test.each([
    ['1', '1', '2'],
    ['66', '1', '67'],
    ['67', '2', '69'],
    ['10000', '150', '10150'],
    ['10001', '151', '10152'],
    ['333333', '5000', '338333'],
  ])('netBudget %s pays FeeAmount %s (totalPulled %s)', async (netBudget, fee, total) => {
    const creator = await env.creator(BigInt(total))
    const r = await env.h.post('/v2/streams', env.tokenBody(creator, { netBudget }))
    expect(r.status, r.text).toBe(200)
    expect([r.body.FeeAmount, r.body.totalPulled, r.body.stream.FeeAmount, r.body.stream.totalPulled]).toEqual([fee, total, fee, total])
  })

  test('the largest budgets: premium pulls 2^256-1 with no fee; standard takes the largest budget whose total fits, and names it past that', async () => {
    const { h, chain } = env
    // A token of its own, so one creator can hold 2^256-1 of it.
    const token = await deployToken(chain.anvil, { name: 'Big', symbol: 'BIG', decimals: 18 })
    const creator = await env.creator(UINT256_MAX, token)
    const premium = await env.organization('premium')
    const max = await h.post('/v2/streams', env.tokenBody(creator, { rewardToken: token, netBudget: UINT256_MAX.toString() }), { key: premium })
    expect(max.status, max.text).toBe(200)
    expect([max.body.FeeAmount, max.body.totalPulled]).toEqual(['0', UINT256_MAX.toString()])

    const over = await h.post('/v2/streams', env.tokenBody(creator, { rewardToken: token, netBudget: UINT256_MAX.toString() }))
    expect(over.status).toBe(400)
    expectEnvelope(over.body, 400, 'INVALID_ARGUMENT')
    const largest = BigInt(/at most (\d+)/.exec(over.body.context.netBudget)![1]!)
    const fee = (n: bigint) => streamFee(n, { type: 'token', tier: 'standard' })
    expect(largest + fee(largest)).toBeLessThanOrEqual(UINT256_MAX)
    expect(largest + 1n + fee(largest + 1n)).toBeGreaterThan(UINT256_MAX)

    const fits = await h.post('/v2/streams', env.tokenBody(creator, { rewardToken: token, netBudget: largest.toString() }))
    expect(fits.status, fits.text).toBe(200)
    // ceil(n * 150 / 10000), checked against its defining inequality rather than the same formula.
    const charged = BigInt(fits.body.FeeAmount)
    expect(charged * 10_000n >= largest * 150n && (charged - 1n) * 10_000n < largest * 150n).toBe(true)
    expect(fits.body.totalPulled).toBe((largest + charged).toString())
  })

  test('a premium organization pays 0 and pulls exactly the net budget', async () => {
    const creator = await env.creator(1_000_001n)
    const r = await env.h.post('/v2/streams', env.tokenBody(creator), { key: await env.organization('premium') })
    expect(r.status, r.text).toBe(200)
    expect([r.body.FeeAmount, r.body.totalPulled]).toEqual(['0', '1000001'])
    expect(decodeFunctionData({ abi: erc20Abi, data: sliceHex(r.body.transactions[0].transaction.data, 0, 68) }).args).toEqual([env.treasury, 1_000_001n])
  })

  test("a creator short of budget plus fee: 400 insufficient token balance with what is required and held", async () => {
    const creator = await env.creator(1_015_001n)
    const r = await env.h.post('/v2/streams', env.tokenBody(creator))
    expect(r.status).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(r.body.error).toBe('insufficient token balance')
    expect(r.body.context).toMatchObject({ required: '1015002', available: '1015001' })
  })

  test('a reward token whose transfer would revert now (paused), or that takes a fee on it, is 400 naming rewardToken; nothing is created', async () => {
    const [paused, fee] = [await deployPausableToken(env.chain.anvil), await deployFeeToken(env.chain.anvil)]
    const creators = { [paused]: await env.creator(10_000_000n, paused), [fee]: await env.creator(10_000_000n, fee) }
    // Mined before the creation asks: anvil may answer the send before its block is in (a creation read the token unpaused, 1 run in ~4).
    await env.chain.anvil.publicClient.waitForTransactionReceipt({ hash: await env.chain.anvil.walletClient.writeContract({ address: paused, abi: parseAbi(['function pause()']), functionName: 'pause' }) })
    for (const [token, problem] of [
      [paused, 'the transfer reverts (token paused)'],
      [fee, 'charges a transfer fee'],
    ] as const) {
      const r = await env.h.post('/v2/streams', env.tokenBody(creators[token]!, { rewardToken: token }))
      expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
      expect(r.body.context).toEqual({ rewardToken: problem })
      // Created, it would have stayed pending for good: a pending stream cannot be cancelled.
      expect((await env.h.get('/v2/streams?state=pending&limit=100')).body.streams.filter((s: Json) => lower(s.rewardToken) === lower(token))).toEqual([])
    }
  })
})

describe('Idempotency-Key', () => {
  test('a creation sent again with its key gets the first answer and no second stream; another body under the key is 400', async () => {
    const { h } = env
    const creator = await env.creator(4_000_000n)
    const body = env.tokenBody(creator)
    const key = `stream-${crypto.randomUUID()}`
    const first = await h.post('/v2/streams', body, { headers: { 'idempotency-key': key } })
    expect(first.status, first.text).toBe(200)
    const again = await h.post('/v2/streams', body, { headers: { 'idempotency-key': key } })
    expect(again.status, again.text).toBe(200)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(again.body).toEqual(first.body)
    const mine = (await h.get('/v2/streams?state=pending&limit=100')).body.streams.filter((s: Json) => s.creatorAddress === creator.address)
    expect(mine.map((s: Json) => s.id)).toEqual([first.body.stream.id])

    const other = await h.post('/v2/streams', { ...body, netBudget: '1000002' }, { headers: { 'idempotency-key': key } })
    expect(other.status, other.text).toBe(400)
    expectEnvelope(other.body, 400, 'INVALID_ARGUMENT')
    expect(other.body.context).toEqual({ 'Idempotency-Key': 'used for another request' })
    // The funding the replay gave is the stream's own: it mines.
    await env.send(creator, again.body.transactions[0].transaction)
  })

  test('a point stream too; without a key each creation is a stream of its own', async () => {
    const { h } = env
    const body = env.pointBody({ pointName: `Idempotent ${crypto.randomUUID()}` })
    const key = crypto.randomUUID()
    const [a, b] = [await h.post('/v2/streams', body, { headers: { 'idempotency-key': key } }), await h.post('/v2/streams', body, { headers: { 'idempotency-key': key } })]
    expect(b.body.stream.id).toBe(a.body.stream.id)
    const [c, d] = [await h.post('/v2/streams', body), await h.post('/v2/streams', body)]
    expect(new Set([a.body.stream.id, c.body.stream.id, d.body.stream.id]).size).toBe(3)
  })
})

describe('point streams', () => {
  test('no fee, nothing pulled, no transactions, active at once, even for the largest budget', async () => {
    const r = await env.h.post('/v2/streams', env.pointBody({ netBudget: UINT256_MAX.toString() }))
    expect(r.status, r.text).toBe(200)
    expect(r.body).toMatchObject({ FeeAmount: '0', totalPulled: '0', transactions: [] })
    expect(r.body.stream).toMatchObject({ type: 'point', state: 'active', pointName: 'Turtle XP', netBudget: UINT256_MAX.toString(), FeeAmount: '0', totalPulled: '0' })
    expect(r.body.stream).not.toHaveProperty('rewardToken')
    expect(r.body.stream).not.toHaveProperty('fundingTxHash')
  })
})

describe('rejections answer the envelope', () => {
  let creator: Awaited<ReturnType<StreamsEnv['creator']>>
  beforeAll(async () => {
    creator = await env.creator(10n ** 12n)
  })

  const cases: [string, () => Json, string][] = [
    ['a fractional budget', () => env.tokenBody(creator, { netBudget: '1.5' }), 'netBudget'],
    ['a zero budget', () => env.tokenBody(creator, { netBudget: '0' }), 'netBudget'],
    ['a negative budget', () => env.tokenBody(creator, { netBudget: '-5' }), 'netBudget'],
    ['a budget past uint256', () => env.tokenBody(creator, { netBudget: (UINT256_MAX + 1n).toString() }), 'netBudget'],
    ['a budget as a number', () => env.tokenBody(creator, { netBudget: 1000 }), 'netBudget'],
    ['a token stream without rewardToken', () => env.tokenBody(creator, { rewardToken: undefined }), 'rewardToken'],
    ['a token stream without creatorAddress', () => env.tokenBody(creator, { creatorAddress: undefined }), 'creatorAddress'],
    ['a token stream with a pointName', () => env.tokenBody(creator, { pointName: 'XP' }), 'pointName'],
    ['a point stream without pointName', () => env.pointBody({ pointName: undefined }), 'pointName'],
    ['a point name with a line break or an escape', () => env.pointBody({ pointName: 'XP\n\u001b[31m' }), 'pointName'],
    ['a point stream with a rewardToken', () => env.pointBody({ rewardToken: env.chain.token }), 'rewardToken'],
    ['endTime equal to startTime', () => env.tokenBody(creator, { endTime: env.tokenBody(creator).startTime }), 'endTime'],
    ['endTime before startTime', () => env.pointBody({ startTime: '2030-01-02T00:00:00Z', endTime: '2030-01-01T00:00:00Z' }), 'endTime'],
    ['endTime in the past', () => env.pointBody({ startTime: '2020-01-01T00:00:00Z', endTime: '2020-02-01T00:00:00Z' }), 'endTime'],
    ['a local time without offset', () => env.pointBody({ startTime: '2030-01-01T00:00:00' }), 'startTime'],
    ['milliseconds for seconds', () => env.pointBody({ startTime: Date.now() }), 'startTime'],
    ['an unknown type', () => env.pointBody({ type: 'nft' }), 'type'],
    ['a missing netBudget', () => env.pointBody({ netBudget: undefined }), 'netBudget'],
    ['a chain no ecosystem owns', () => env.tokenBody(creator, { chainId: 'abc' }), 'chainId'],
    ['a chain without a treasury', () => env.tokenBody(creator, { chainId: '1' }), 'chainId'],
    ['a reward token that is not an address', () => env.tokenBody(creator, { rewardToken: '0x1234' }), 'rewardToken'],
    ['a reward token with no contract behind it', () => env.tokenBody(creator, { rewardToken: '0x000000000000000000000000000000000000dEaD' }), 'rewardToken'],
    ['a creator that is not an address', () => env.tokenBody(creator, { creatorAddress: 'EQD4FPq-PRDieyQKkizFTRtSDyucUIqrj0v_zXJmqaDp6_0t' }), 'creatorAddress'],
    ["the treasury as creator (a transfer to itself funds nothing)", () => env.tokenBody(creator, { creatorAddress: env.treasury.toLowerCase() }), 'creatorAddress'],
  ]
  test.each(cases)('400 for %s, its context naming the field', async (_, body, field) => {
    const r = await env.h.post('/v2/streams', body())
    expect(r.status, r.text).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(Object.keys(r.body.context)).toContain(field)
  })

  test('a time given as an empty or overlong string is told so, not as a value of another type (it was a string)', async () => {
    for (const [startTime, said] of [
      ['', 'must not be empty'],
      ['2030-01-01T00:00:00.000000000000000000000Z', 'must be at most 40 characters'],
    ] as const) {
      const r = await env.h.post('/v2/streams', env.pointBody({ startTime }))
      expect([r.status, r.body.context]).toEqual([400, { startTime: said }])
    }
  })

  test('an action that is none of pause, resume or cancel is a path no route takes: 404, charged nothing', async () => {
    const created = await env.h.post('/v2/streams', env.pointBody())
    expect(created.status, created.text).toBe(200)
    const used = Number(created.headers.get('x-ratelimit-used'))
    for (const action of ['explode', 'Pause', 'activate']) {
      const r = await env.h.post(`/v2/streams/${created.body.stream.id}/${action}`)
      expect(r.status, r.text).toBe(404)
      expectEnvelope(r.body, 404, 'NOT_FOUND')
      expect(r.body.error).toStartWith(`no route POST /v2/streams/${created.body.stream.id}/${action}`)
      // Told its usage, as every answer to a valid key is, and not charged.
      expect(Number(r.headers.get('x-ratelimit-used'))).toBe(used)
    }
    expect((await env.h.post(`/v2/streams/${created.body.stream.id}/pause`)).body.stream.state).toBe('paused')
  })

  test("the coin as the reward token in any case; a token that is no address is told the coin's spelling too", async () => {
    const coin = await env.creator()
    const r = await env.h.post('/v2/streams', env.tokenBody(coin, { rewardToken: 'NATIVE', netBudget: '1000' }))
    expect(r.status, r.text).toBe(200)
    expect(r.body.stream.rewardToken).toBe('native')
    const bad = await env.h.post('/v2/streams', env.tokenBody(creator, { rewardToken: 'coin' }))
    expect(bad.status).toBe(400)
    expect(bad.body.error).toStartWith("rewardToken is not a valid evm address (or native, for the chain's coin): ")
  })

  test("a target opportunity on another chain than the stream's is 400 naming it", async () => {
    // A chain the EVM plugin owns, but not the opportunity's (31337); point streams need no treasury there.
    const r = await env.h.post('/v2/streams', env.pointBody({ chainId: '8453' }))
    expect(r.status, r.text).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(r.body.context).toEqual({ targetOpportunityId: `on chain ${env.chain.anvil.chainId}` })
    expect(r.body.error).toContain('not 8453')
  })

  test("an import cannot move a stream's target opportunity to another chain while the stream runs, delisted too", async () => {
    const { h } = env
    const deps = { store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }
    const [direct] = localCatalog().opportunities
    const id = crypto.randomUUID()
    await importCatalog(deps, { opportunities: [{ ...direct!, id }] })
    const created = await h.post('/v2/streams', env.pointBody({ targetOpportunityId: id }))
    expect(created.status, created.text).toBe(200)
    const streamId = created.body.stream.id as string
    // Delisted, a move to a chain that does not answer here would otherwise be taken (kept pending until it does).
    await h.store.setOpportunityDelisted(id, true, h.deps.clock.now())
    const moved = { opportunities: [{ ...direct!, id, chainId: '8453' }] }
    const refused = await importCatalog(deps, moved).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(CatalogError)
    expect((refused as CatalogError).problems).toEqual([
      `opportunities[0] (${id}): chainId: moves this opportunity off chain 31337, where reward streams for it run (${streamId}). ` +
        'List the new vault under a new id, or import the move once those streams are cancelled or ended',
    ])
    expect((await h.store.getOpportunity(id))!.chainId).toBe('31337')
    const cancelled = await h.post(`/v2/streams/${streamId}/cancel`, {})
    expect(cancelled.status, cancelled.text).toBe(200)
    expect((await importCatalog(deps, moved)).opportunities.map((o) => o.result)).toEqual(['updated'])
    expect((await h.store.getOpportunity(id))!.chainId).toBe('8453')
  })

  test('STREAM_REWARD_TOKENS: a reward token the operator does not name for the chain is refused naming rewardToken; one it names (any case, or native) is built', async () => {
    const chainId = env.chain.anvil.chainId
    const harness = (tokens: string) =>
      createHarness({ store: env.h.store, clients: { evm: env.chain.evmClient() }, env: { STREAM_TREASURIES: `${chainId}=${env.treasury}`, STREAM_REWARD_TOKENS: tokens } })
    // Left open: they share the file's store, which closing one would shut.
    const listed = await harness(`${chainId}=${env.chain.token.toLowerCase()}, ${chainId}=native`)
    const creator = await env.creator(2_000_000n)
    expect((await listed.post('/v2/streams', env.tokenBody(creator))).status).toBe(200)
    expect((await listed.post('/v2/streams', env.tokenBody(creator, { rewardToken: 'NATIVE' }))).status).toBe(200)
    expect((await listed.post('/v2/streams', env.pointBody())).status).toBe(200)
    await env.chain.anvil.walletClient.writeContract({ address: env.chain.otherToken, abi: parseAbi(['function mint(address to, uint256 amount)']), functionName: 'mint', args: [creator.address, 10n ** 18n] })
    const other = await listed.post('/v2/streams', env.tokenBody(creator, { rewardToken: env.chain.otherToken }))
    expect(other.status, other.text).toBe(400)
    expectEnvelope(other.body, 400, 'INVALID_ARGUMENT')
    const reason = `is not a reward token this deployment takes on chain ${chainId}; it takes ${getAddress(env.chain.token)}, native (STREAM_REWARD_TOKENS)`
    expect(other.body).toMatchObject({ error: `rewardToken ${reason}`, context: { rewardToken: reason } })
    // A list naming other chains only: none here.
    const elsewhere = await harness(`1=${env.chain.token}`)
    const none = await elsewhere.post('/v2/streams', env.tokenBody(creator))
    expect([none.status, none.body.context]).toEqual([400, { rewardToken: `cannot be taken: this deployment takes no reward token on chain ${chainId} (STREAM_REWARD_TOKENS names none there)` }])
    // Checked when the plugins load: a token that is no address of its chain stops the server.
    const loaded = await listed.deps.ecosystems.all()
    expect(() => checkRewardTokens(loaded, { [chainId]: ['0x1234'] })).toThrow(ConfigError)
    expect(() => checkRewardTokens(loaded, { [chainId]: [env.chain.token, 'Native'], 'solana-devnet-not-loaded': ['x'] })).not.toThrow()
  })

  test('an unknown target opportunity is 404 naming the field that named it', async () => {
    const r = await env.h.post('/v2/streams', env.pointBody({ targetOpportunityId: '00000000-0000-4000-8000-000000000000' }))
    expect(r.status).toBe(404)
    expectEnvelope(r.body, 404, 'NOT_FOUND')
    expect(r.body.context).toEqual({ targetOpportunityId: 'unknown opportunity' })
  })

  test('malformed JSON is 400; a publishable key is 401; no key is 401', async () => {
    const bad = await env.h.request('POST', '/v2/streams', { rawBody: '{"type":' })
    expect(bad.status).toBe(400)
    expectEnvelope(bad.body, 400, 'INVALID_ARGUMENT')
    const pk = await env.h.post('/v2/streams', env.pointBody(), { key: env.h.org.publishableKey })
    expect(pk.status).toBe(401)
    expectEnvelope(pk.body, 401, 'UNAUTHORIZED')
    expect(pk.body.error).toContain('sk_live_')
    const none = await env.h.post('/v2/streams', env.pointBody(), { key: null })
    expectEnvelope(none.body, 401, 'UNAUTHORIZED')
  })

  test("a treasury the chain's ecosystem refuses is the operator's problem: 503", async () => {
    const misconfigured = await createHarness({ clients: { evm: env.chain.evmClient() }, env: { STREAM_TREASURIES: `${env.chain.anvil.chainId}=0x1234` } })
    try {
      await importCatalog({ store: misconfigured.store, ecosystems: misconfigured.deps.ecosystems, clock: misconfigured.deps.clock }, localCatalog())
      const r = await misconfigured.post('/v2/streams', env.tokenBody(creator))
      expect(r.status).toBe(503)
      expectEnvelope(r.body, 503, 'UNAVAILABLE')
      expect(r.body.error).toContain('STREAM_TREASURIES')
    } finally {
      await misconfigured.close()
    }
  })

  test('a treasury that could never move what it is sent (the reward token itself, the zero address, a precompile) is 503 naming STREAM_TREASURIES', async () => {
    for (const [treasury, reason] of [
      [env.chain.token, "is the token's own contract"],
      ['0x0000000000000000000000000000000000000000', 'is the zero address or a precompile'],
      ['0x0000000000000000000000000000000000000001', 'is the zero address or a precompile'],
    ] as const) {
      const misconfigured = await createHarness({ clients: { evm: env.chain.evmClient() }, env: { STREAM_TREASURIES: `${env.chain.anvil.chainId}=${treasury}` } })
      try {
        await importCatalog({ store: misconfigured.store, ecosystems: misconfigured.deps.ecosystems, clock: misconfigured.deps.clock }, localCatalog())
        const r = await misconfigured.post('/v2/streams', env.tokenBody(creator))
        expectEnvelope(r.body, 503, 'UNAVAILABLE')
        expect(r.body.error).toBe(`the stream treasury configured for chain ${env.chain.anvil.chainId} ${reason}: what is sent there could never be moved again; the operator must fix STREAM_TREASURIES`)
        expect((await misconfigured.get('/v2/streams?limit=100')).body.streams).toEqual([])
      } finally {
        await misconfigured.close()
      }
    }
  })

  test('a contract treasury that refuses a coin transfer carrying data is 503 naming STREAM_TREASURIES for a native stream', async () => {
    // TestSmartWallet has receive() and no fallback: the funding's tag, sent as calldata, reverts there.
    const treasury = await deploySmartWallet(env.chain.anvil, creator.address)
    const misconfigured = await createHarness({ clients: { evm: env.chain.evmClient() }, env: { STREAM_TREASURIES: `${env.chain.anvil.chainId}=${treasury}` } })
    try {
      await importCatalog({ store: misconfigured.store, ecosystems: misconfigured.deps.ecosystems, clock: misconfigured.deps.clock }, localCatalog())
      const r = await misconfigured.post('/v2/streams', env.tokenBody(creator, { rewardToken: 'native', netBudget: '1000' }))
      expectEnvelope(r.body, 503, 'UNAVAILABLE')
      expect(r.body.error).toBe(
        `the stream treasury configured for chain ${env.chain.anvil.chainId} refuses a coin transfer carrying data (the tag): a transfer to it reverts now: no transaction sending it the native coin can land; the operator must fix STREAM_TREASURIES`,
      )
      expect(r.body.context).toEqual({ chainId: 'stream treasury misconfigured' })
      expect((await misconfigured.get('/v2/streams?limit=100')).body.streams).toEqual([])
    } finally {
      await misconfigured.close()
    }
  })

  test('nothing refused was stored', async () => {
    const list = await env.h.get('/v2/streams?limit=100')
    expect(list.body.streams.every((s: Json) => s.netBudget !== '1.5' && s.pointName !== 'XP')).toBe(true)
  })
})
