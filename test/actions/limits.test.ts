/**
 * What the vault takes now: a deposit above its `maxDeposit` (capped, paused), a redeem above its `maxRedeem`
 * (paused, limited), a deposit that would mint no shares and a redeem that would pay nothing are refused with the
 * envelope, nothing recorded; within the limits the built transactions mine. On anvil, with vaults that enforce
 * the limits they report (test/contracts/TestVault.sol).
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { importCatalog } from '@earn/core'
import { randomUUID } from 'node:crypto'
import { evmClientFromPublicClients } from '@earn/plugin-evm'
import { createPublicClient, erc20Abi, erc4626Abi, http, type Address } from 'viem'
import type { PrivateKeyAccount } from 'viem/accounts'
import { anvilChain, deployLimitedVault, deployOffsetVault, deployToken, deployVault, mintToken, recordingProxy, sendUnsigned, testLimitedVaultAbi } from '../chains/evm.ts'
import { createHarness, expectEnvelope, type Harness, type Json } from '../harness.ts'
import { localCatalog, startLocalChain, type LocalChain } from './localChain.ts'
import { fundedMember } from './members.ts'
import { fileStore } from './records.ts'

setDefaultTimeout(60_000)

const MAX = 2n ** 256n - 1n
const limitedId = randomUUID()
const offsetId = randomUUID()
const limitedSwapId = randomUUID()
let chain: LocalChain
let h: Harness
let limited: Address
let offset: Address
let member: PrivateKeyAccount
const db = fileStore()

beforeAll(async () => {
  chain = await startLocalChain()
  h = await createHarness({ store: db.store, clients: { evm: chain.evmClient() } })
  limited = await deployLimitedVault(chain.anvil, chain.token)
  offset = await deployOffsetVault(chain.anvil, chain.token)
  const direct = localCatalog().opportunities.find((o) => o.id === chain.directId)!
  const swap = localCatalog().opportunities.find((o) => o.id === chain.swapId)!
  const entries = [
    { ...direct, id: limitedId, name: 'Limited vault', vaultAddress: limited },
    { ...swap, id: limitedSwapId, name: 'Limited vault, by swap', vaultAddress: limited, receiptToken: { symbol: 'lvtUSD', decimals: 6 } },
    { ...direct, id: offsetId, name: 'Offset vault', vaultAddress: offset, receiptToken: { symbol: 'ovtUSD', decimals: 18 } },
  ]
  const imported = await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, { opportunities: entries })
  expect(imported.opportunities.map((o) => o.chainFacts)).toEqual(['read', 'read', 'read'])
  member = await fundedMember(h, chain, 100n * 10n ** 6n)
})
afterAll(async () => {
  await h.close()
  await chain.anvil.stop()
  db.cleanup()
})

const setLimits = async (cap: bigint, redeemLimit: bigint, paused: boolean) => {
  const hash = await chain.anvil.walletClient.writeContract({ address: limited, abi: testLimitedVaultAbi, functionName: 'setLimits', args: [cap, redeemLimit, paused] })
  await chain.anvil.publicClient.waitForTransactionReceipt({ hash })
}
const shares = (vault: Address, owner: Address) => chain.anvil.publicClient.readContract({ address: vault, abi: erc20Abi, functionName: 'balanceOf', args: [owner] })
const deposit = (id: string, amount: bigint) => h.post(`/v2/actions/deposit/${id}`, { userAddress: member.address, tokenIn: chain.token, amount: amount.toString(), distributorId: h.distributorId })
const withdraw = (id: string, amount: bigint) => h.post(`/v2/actions/withdraw/${id}`, { userAddress: member.address, amount: amount.toString(), distributorId: h.distributorId })

async function sendAll(transactions: Json[]) {
  for (const t of transactions) expect((await sendUnsigned(chain.anvil, member, t.transaction)).status, `${t.type} step reverted`).toBe('success')
}

/** The refusal: envelope, the field and what the vault allows in `context`, no action recorded. */
async function refused(r: Awaited<ReturnType<typeof deposit>>, error: RegExp, context: Record<string, string>) {
  expect(r.status, r.text).toBe(400)
  expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
  expect(r.body.error).toMatch(error)
  expect(r.body.context).toEqual(context)
}

describe('the vault limits a deposit or a redeem', () => {
  test('a capped vault: above what it takes is refused with its maxDeposit; up to it, the deposit mines', async () => {
    const recorded = db.actions().length
    await sendAll((await deposit(limitedId, 5n * 10n ** 6n)).body.transactions)
    await setLimits(6n * 10n ** 6n, MAX, false)
    await refused(await deposit(limitedId, 2n * 10n ** 6n), /takes at most 1000000 smallest units from this wallet now \(its maxDeposit\)/, { amount: 'at most 1000000 now', maxDeposit: '1000000' })
    const within = await deposit(limitedId, 10n ** 6n)
    expect(within.status, within.text).toBe(200)
    await sendAll(within.body.transactions)
    expect(await shares(limited, member.address)).toBe(6n * 10n ** 6n)
    // Two builds recorded: the refusal recorded nothing.
    expect(db.actions().length).toBe(recorded + 2)
  })

  test('a paused vault: no deposit and no redeem, each refused with the 0 it reports', async () => {
    await setLimits(MAX, MAX, true)
    await refused(await deposit(limitedId, 10n ** 6n), /takes no deposits.*\(its maxDeposit is 0\)/, { amount: 'the vault takes none now', maxDeposit: '0' })
    await refused(await withdraw(limitedId, 10n ** 6n), /redeems none.*\(its maxRedeem is 0\)/, { amount: 'the vault redeems none now', maxRedeem: '0' })
  })

  test("a paused vault's swap withdrawal: a tokenOut no pool prices is named before the pause; where the router could not be asked, a 503", async () => {
    await setLimits(MAX, MAX, true)
    const swapOut = (tokenOut: Address, harness = h) =>
      harness.post(`/v2/actions/withdraw/${limitedSwapId}`, { userAddress: member.address, amount: (10n ** 6n).toString(), tokenOut, distributorId: harness.distributorId })
    const lonely = await deployToken(chain.anvil, { name: 'Lonely', symbol: 'LON', decimals: 18 })
    const noPool = await swapOut(lonely)
    expect([noPool.status, Object.keys(noPool.body.context)]).toEqual([400, ['tokenOut']])
    await refused(await swapOut(chain.otherToken), /redeems none.*\(its maxRedeem is 0\)/, { amount: 'the vault redeems none now', maxRedeem: '0' })
    // A node that does not answer the router's quote of one unit (getAmountsOut(1, path)): which refusal comes first is
    // not known, and the client hears the 503 to retry, not the pause.
    const oneUnitQuote = `d06ca61f${'1'.padStart(64, '0')}`
    const failing = recordingProxy(chain.anvil.url, { refuse: (call) => call.method === 'eth_call' && JSON.stringify(call.params).includes(oneUnitQuote) })
    const flaky = await createHarness({ store: db.store, clients: { evm: evmClientFromPublicClients({ [chain.anvil.chainId]: createPublicClient({ chain: anvilChain, transport: http(failing.url, { retryCount: 0 }), batch: { multicall: true } }) }, { swapRouters: { [chain.anvil.chainId]: chain.router } }) } })
    try {
      const r = await swapOut(lonely, flaky)
      expect(r.status, r.text).toBe(503)
      expectEnvelope(r.body, 503, 'UNAVAILABLE')
    } finally {
      failing.stop()
      await setLimits(MAX, MAX, false)
    }
  })

  test('a redeem limit: above it is refused with its maxRedeem; up to it, the withdrawal mines', async () => {
    await setLimits(MAX, 10n ** 6n, false)
    await refused(await withdraw(limitedId, 2n * 10n ** 6n), /redeems at most 1000000 shares from this wallet now/, { amount: 'at most 1000000 now', maxRedeem: '1000000' })
    const within = await withdraw(limitedId, 10n ** 6n)
    expect(within.status, within.text).toBe(200)
    await sendAll(within.body.transactions)
    expect(await shares(limited, member.address)).toBe(5n * 10n ** 6n)
  })

  test('a share price that mints nothing for the amount: the deposit is refused, not built to take the assets for no shares', async () => {
    await setLimits(MAX, MAX, false)
    // A donation triples the assets behind the 5 tUSD of shares: 1 smallest unit now buys a third of a share.
    await mintToken(chain.anvil, chain.token, limited, 10n * 10n ** 6n)
    await refused(await deposit(limitedId, 1n), /would mint no shares/, { amount: 'mints 0 shares' })
    expect((await deposit(limitedId, 3n)).status).toBe(200)
  })

  test("a swap deposit whose guaranteed output is above the cap: refused in the asset's units, against that output", async () => {
    await setLimits(MAX, MAX, false)
    const held = await chain.anvil.publicClient.readContract({ address: limited, abi: erc4626Abi, functionName: 'totalAssets' })
    await setLimits(held + 10n ** 6n, MAX, false)
    await mintToken(chain.anvil, chain.otherToken, member.address, 10n ** 19n)
    const r = await h.post(`/v2/actions/deposit/${limitedSwapId}`, { userAddress: member.address, tokenIn: chain.otherToken, amount: (10n ** 19n).toString(), mode: 'swap', distributorId: h.distributorId })
    expect(r.status, r.text).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(r.body.error).toMatch(/^the swap's guaranteed output, \d+ smallest units of the vault's asset, is more than the vault takes from this wallet now \(its maxDeposit, 1000000\); swap less$/)
    expect(Object.keys(r.body.context).sort()).toEqual(['amount', 'maxDeposit', 'minAmountOut'])
    expect(r.body.context.maxDeposit).toBe('1000000')
    expect(BigInt(r.body.context.minAmountOut)).toBeGreaterThan(10n ** 6n)
    await setLimits(MAX, MAX, false)
  })

  test("an amount the vault's preview reverts for (its conversion overflows): refused naming amount, not built to revert on chain", async () => {
    // A token of 18 decimals the member holds all 2^256 - 1 of, deposited whole: redeeming them overflows the vault's
    // arithmetic (totalAssets + 1 times the shares), so its previewRedeem and its redeem revert alike.
    const big = await deployToken(chain.anvil, { name: 'Big', symbol: 'BIG', decimals: 18 })
    const vault = await deployVault(chain.anvil, big)
    const id = randomUUID()
    const direct = localCatalog().opportunities.find((o) => o.id === chain.directId)!
    const entry = { ...direct, id, name: 'Big vault', vaultAddress: vault, baseToken: { symbol: 'BIG', address: big, decimals: 18 }, receiptToken: { symbol: 'vBIG', decimals: 18 }, depositTokens: [{ address: big, symbol: 'BIG', decimals: 18 }] }
    await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, { opportunities: [entry] })
    await mintToken(chain.anvil, big, member.address, MAX)
    const all = await h.post(`/v2/actions/deposit/${id}`, { userAddress: member.address, tokenIn: big, amount: MAX.toString(), distributorId: h.distributorId })
    expect(all.status, all.text).toBe(200)
    await sendAll(all.body.transactions)
    const recorded = db.actions().length
    await refused(await withdraw(id, MAX), /^the vault refuses to redeem \d+ shares now: its previewRedeem reverts for them, as the redeem would$/, {
      amount: 'refused by the vault (its previewRedeem reverts); withdraw less',
    })
    // The offset vault (12 more decimals in its shares) converts a deposit of 2^220 past 2^256.
    await sendAll((await deposit(offsetId, 10n ** 6n)).body.transactions)
    await mintToken(chain.anvil, chain.token, member.address, 2n ** 220n)
    await refused(await deposit(offsetId, 2n ** 220n), /^the vault refuses a deposit of \d+ smallest units now: its previewDeposit reverts for it, as the deposit would$/, {
      amount: 'refused by the vault (its previewDeposit reverts); deposit less',
    })
    expect(db.actions().length).toBe(recorded + 1)
  })

  test('shares that redeem for nothing: the withdrawal is refused, not built to burn them for no assets', async () => {
    // 12 more decimals in the shares: 1 smallest unit of tUSD is 10^12 shares, and fewer redeem for 0.
    await sendAll((await deposit(offsetId, 10n ** 6n)).body.transactions)
    await refused(await withdraw(offsetId, 999_999n), /redeem for nothing/, { amount: 'redeems for 0 of the asset' })
    expect((await withdraw(offsetId, 10n ** 12n)).status).toBe(200)
  })
})
