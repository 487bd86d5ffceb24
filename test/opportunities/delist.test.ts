/**
 * A delisted opportunity, on anvil through the API: it leaves the list and the get, and takes no deposits and no
 * reward streams, while its holder still sees the position, withdraws it on chain, and a past deposit still
 * verifies. Relisted, it takes deposits again. An opportunity a re-import moves to another vault keeps its past
 * deposits verifiable against the vault they were built for. (The CLI commands as processes: cli.test.ts.)
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { CatalogError, importCatalog, manualClock, setOpportunityDelisted } from '@earn/core'
import { erc20Abi, getAddress, type Address } from 'viem'
import { sendUnsigned } from '../chains/evm.ts'
import { localCatalog } from '../actions/localChain.ts'
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
  expect(refused.body.context).toEqual({ opportunityId: 'delisted' })
  // The member gate still comes first.
  const stranger = await h.post(`/v2/actions/deposit/${id}`, { ...depositBody, userAddress: '0x' + '42'.repeat(20) })
  expect(stranger.body.context).toHaveProperty('userAddress')
  const stream = await h.post('/v2/streams', env.pointBody({ targetOpportunityId: id }))
  expectEnvelope(stream.body, 404, 'NOT_FOUND')
  expect(stream.body.context).toEqual({ targetOpportunityId: 'delisted' })
  expect(stream.body.error).toContain('no new deposits or reward streams')

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

test('moved to another vault, its deposits built for the old vault still verify, once each; an import refuses such a move', async () => {
  const { h, chain } = env
  const id = crypto.randomUUID()
  const [direct, swap] = localCatalog().opportunities
  const catalog = (vaultAddress: string) => ({ opportunities: [{ ...direct!, id, name: 'Moving vault', vaultAddress }] })
  const importAt = async (vault: string, store = h.store) => {
    const imported = await importCatalog({ store, ecosystems: h.deps.ecosystems, clock }, catalog(vault))
    expect(imported.opportunities.map((o) => o.chainFacts)).toEqual(['read'])
    clock.advance(2_001)
  }
  await importAt(direct!.vaultAddress)

  const wallet = await fundedMember(h, chain, 100n * 10n ** 6n)
  const body = { userAddress: wallet.address, tokenIn: chain.token, amount: String(10n * 10n ** 6n), distributorId: h.distributorId }
  const first = await h.post(`/v2/actions/deposit/${id}`, body)
  const second = await h.post(`/v2/actions/deposit/${id}`, body)
  expect([first.status, second.status]).toEqual([200, 200])
  const firstHash = (await sendAll(wallet, first.body.transactions)).at(-1)!
  const verifiedBefore = await h.get(`/v2/actions/verify?chainId=31337&txHash=${firstHash}`)
  expect(verifiedBefore.body).toMatchObject({ verified: true, metadata: { opportunityId: id, actionId: first.body.actionId } })

  // An import refuses to move it off the vault its deposits went into: its holders would lose their withdrawals.
  const refused = await importAt(swap!.vaultAddress).catch((e: unknown) => e)
  expect(refused).toBeInstanceOf(CatalogError)
  expect((refused as CatalogError).problems).toEqual([
    `opportunities[0] (${id}): vaultAddress: moves this opportunity off the vault its deposits went into (${direct!.vaultAddress.toLowerCase()} on chain 31337); ` +
      'their holders could no longer withdraw or see their positions through it. List the new vault under a new id (and delist this one to close it to deposits)',
  ])
  // Delisted too: its holders still withdraw through it.
  await h.store.setOpportunityDelisted(id, true, clock.now())
  expect(await importAt(swap!.vaultAddress).catch((e: unknown) => e)).toBeInstanceOf(CatalogError)
  await h.store.setOpportunityDelisted(id, false, clock.now())
  // Yet a move can still meet deposits for the old vault: one imported before any was recorded, while another
  // process builds from its 2 s lookup cache. As such an import: the second deposit, built for the first vault, is
  // mined after the move.
  await importAt(swap!.vaultAddress, { ...h.store, hasDepositsInto: async () => false })
  expect((await h.get(`/v2/opportunities/${id}`)).body.opportunity).toMatchObject({ id })
  const secondHash = (await sendAll(wallet, second.body.transactions)).at(-1)!
  for (const [hash, action] of [
    [firstHash, first.body.actionId],
    [secondHash, second.body.actionId],
  ]) {
    const v = await h.get(`/v2/actions/verify?chainId=31337&txHash=${hash}`)
    expect(v.status, v.text).toBe(200)
    expect(v.body).toMatchObject({ verified: true, metadata: { opportunityId: id, actionId: action } })
  }
  // Each recorded once, with what the vault took in; the moved one names no token, as the listing's facts are now
  // the new vault's.
  const activity = await h.get(`/v2/wallets/activity?addresses=${wallet.address}`)
  const verifies = (activity.body.activities as Json[]).filter((a) => a.type === 'verify').map((a) => [a.txHash, a.token, a.amount])
  expect(verifies.sort()).toEqual(
    [
      [firstHash, getAddress(chain.token), body.amount],
      [secondHash, null, body.amount],
    ].sort(),
  )
  // New deposits go to the new vault, and verify against it.
  const third = await h.post(`/v2/actions/deposit/${id}`, body)
  expect(third.status, third.text).toBe(200)
  const deposit = third.body.transactions.at(-1).transaction
  expect(deposit.to.toLowerCase()).toBe(swap!.vaultAddress.toLowerCase())
  const thirdHash = (await sendAll(wallet, third.body.transactions)).at(-1)!
  expect((await h.get(`/v2/actions/verify?chainId=31337&txHash=${thirdHash}`)).body).toMatchObject({ verified: true, metadata: { actionId: third.body.actionId } })
})
