/**
 * A delisted opportunity, on anvil through the API: it leaves the list and the get, and takes no deposits and no
 * reward streams, while its holder still sees the position, withdraws it on chain, and a past deposit still
 * verifies. Relisted, it takes deposits again. (The CLI commands as processes: cli.test.ts.)
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { manualClock, setOpportunityDelisted } from '@earn/core'
import { erc20Abi, type Address } from 'viem'
import { sendUnsigned } from '../chains/evm.ts'
import { fundedMember } from '../actions/members.ts'
import { expectEnvelope, type Json } from '../harness.ts'
import { startStreamsEnv, type StreamsEnv } from '../streams/setup.ts'

// Chains start here; bun 1.4.5 does not apply bunfig's [test] timeout, so set it per file.
setDefaultTimeout(60_000)

// Builds remember an opportunity for 2 s (server/src/features/actions/routes.ts); the test moves past that by hand.
const clock = manualClock(Date.now())
let env: StreamsEnv
beforeAll(async () => {
  env = await startStreamsEnv({ clock })
})
afterAll(() => env.stop())

const shares = (owner: Address) => env.chain.anvil.publicClient.readContract({ address: env.chain.vault, abi: erc20Abi, functionName: 'balanceOf', args: [owner] })

async function sendAll(wallet: Parameters<typeof sendUnsigned>[1], transactions: Json[]) {
  const hashes: string[] = []
  for (const t of transactions) {
    const receipt = await sendUnsigned(env.chain.anvil, wallet, t.transaction)
    expect(receipt.status, `${t.type} step reverted`).toBe('success')
    hashes.push(receipt.transactionHash)
  }
  return hashes
}

test('delisted: off the list and the get, no deposits or streams; the holder withdraws, sees it, verifies; relisted it deposits', async () => {
  const { h, chain } = env
  const id = chain.directId
  const wallet = await fundedMember(h, chain, 100n * 10n ** 6n)
  const depositBody = { userAddress: wallet.address, tokenIn: chain.token, amount: String(40n * 10n ** 6n), distributorId: h.distributorId }
  const deposit = await h.post(`/v2/actions/deposit/${id}`, depositBody)
  expect(deposit.status, deposit.text).toBe(200)
  const depositHash = (await sendAll(wallet, deposit.body.transactions)).at(-1)!
  const held = await shares(wallet.address)
  expect(held).toBeGreaterThan(0n)

  // Given in capitals, as an operator may paste it.
  expect(await setOpportunityDelisted({ store: h.store, clock }, id.toUpperCase(), true)).toEqual({ id, delisted: true })
  clock.advance(2_001)

  const listed = await h.get('/v2/opportunities/')
  expect(listed.body.opportunities.map((o: Json) => o.id)).toEqual([chain.swapId])
  expect(listed.body.total).toBe(1)
  const got = await h.get(`/v2/opportunities/${id}`)
  expectEnvelope(got.body, 404, 'NOT_FOUND')
  expect(got.body.error).toContain('delisted')
  expect(got.body.context).toEqual({ opportunityId: 'delisted' })

  const refused = await h.post(`/v2/actions/deposit/${id}`, depositBody)
  expectEnvelope(refused.body, 404, 'NOT_FOUND')
  expect(refused.body.error).toContain('holders can still withdraw')
  // The member gate still comes first.
  const stranger = await h.post(`/v2/actions/deposit/${id}`, { ...depositBody, userAddress: '0x' + '42'.repeat(20) })
  expect(stranger.body.context).toHaveProperty('userAddress')
  const stream = await h.post('/v2/streams', env.pointBody({ targetOpportunityId: id }))
  expectEnvelope(stream.body, 404, 'NOT_FOUND')
  expect(stream.body.context).toEqual({ opportunityId: 'delisted' })

  const portfolio = await h.get(`/v2/wallet/${wallet.address}/portfolio`, { key: h.org.publishableKey })
  expect(portfolio.status, portfolio.text).toBe(200)
  expect(portfolio.body.portfolio.holdings.wallets[0].protocols.map((p: Json) => [p.opportunityId, p.shares])).toEqual([[id, held.toString()]])
  const verified = await h.get(`/v2/actions/verify?chainId=31337&txHash=${depositHash}`)
  expect(verified.body).toMatchObject({ verified: true, metadata: { opportunityId: id } })

  const withdraw = await h.post(`/v2/actions/withdraw/${id}`, { userAddress: wallet.address, amount: held.toString(), distributorId: h.distributorId })
  expect(withdraw.status, withdraw.text).toBe(200)
  await sendAll(wallet, withdraw.body.transactions)
  expect(await shares(wallet.address)).toBe(0n)

  expect(await setOpportunityDelisted({ store: h.store, clock }, id, false)).toEqual({ id, delisted: false })
  clock.advance(2_001)
  expect((await h.get(`/v2/opportunities/${id}`)).status).toBe(200)
  const again = await h.post(`/v2/actions/deposit/${id}`, depositBody)
  expect(again.status, again.text).toBe(200)
})

test('delisting an opportunity the catalog does not hold is a 404 naming it', async () => {
  const missing = '00000000-0000-4000-8000-000000000000'
  const e = await setOpportunityDelisted({ store: env.h.store, clock }, missing, true).catch((e: unknown) => e)
  expect(e).toMatchObject({ code: 'NOT_FOUND', message: `opportunity ${missing} is not in the catalog; see opportunity list` })
})
