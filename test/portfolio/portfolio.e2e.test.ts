/**
 * End to end on anvil with the sample catalog: a member deposits through the API, the vault earns (assets sent to
 * it), and the portfolio shows the idle tokens, the position and its value, and what it earned, to the unit the
 * chain computes; then withdrawals move the net deposited. Both versions answer the same body.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { importCatalog, setOpportunityDelisted } from '@earn/core'
import { connect, evmClientFromPublicClients } from '@earn/plugin-evm'
import { Address as TonAddress } from '@ton/core'
import { createPublicClient, encodeFunctionData, erc20Abi, erc4626Abi, getAddress, http, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { localCatalog, startLocalChain, type LocalChain } from '../actions/localChain.ts'
import { fundedMember } from '../actions/members.ts'
import { closedPortUrl, startAnvil, deployOffsetVault, deployToken, deployVault, mintToken, recordingProxy, sendUnsigned, setNativeBalance } from '../chains/evm.ts'
import { createHarness, expectEnvelope, type Harness, type Json } from '../harness.ts'

// bun 1.4.5 does not apply bunfig's [test] timeout; chains start inside these tests.
setDefaultTimeout(60_000)

const TUSD = 10n ** 6n

let chain: LocalChain
let h: Harness
beforeAll(async () => {
  chain = await startLocalChain()
  h = await createHarness({ clients: { evm: chain.evmClient() } })
  const imported = await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, localCatalog())
  expect(imported.opportunities.map((o) => o.chainFacts)).toEqual(['read', 'read'])
})
afterAll(async () => {
  await h?.close()
  await chain?.anvil.stop()
})

const client = () => chain.anvil.publicClient
const balanceOf = (token: Address, owner: Address) => client().readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [owner] })
const convertToAssets = (shares: bigint) => client().readContract({ address: chain.vault, abi: erc4626Abi, functionName: 'convertToAssets', args: [shares] })

async function send(wallet: PrivateKeyAccount, built: { status: number; body: Json; text: string }) {
  expect(built.status, built.text).toBe(200)
  for (const t of built.body.transactions as Json[]) expect((await sendUnsigned(chain.anvil, wallet, t.transaction)).status).toBe('success')
}
const deposit = async (wallet: PrivateKeyAccount, amount: bigint) =>
  send(wallet, await h.post(`/v2/actions/deposit/${chain.directId}`, { userAddress: wallet.address, tokenIn: chain.token, amount: amount.toString(), distributorId: h.distributorId }))
const withdraw = async (wallet: PrivateKeyAccount, shares: bigint) =>
  send(wallet, await h.post(`/v2/actions/withdraw/${chain.directId}`, { userAddress: wallet.address, amount: shares.toString(), distributorId: h.distributorId }))
const portfolio = (address: string, query = '', version = 'v2') => h.get(`/${version}/wallet/${address}/portfolio${query}`, { key: h.org.publishableKey })

const tokenOf = (address: Address, symbol: string) => ({ address: getAddress(address), symbol, decimals: 6, chainId: '31337' })

describe('portfolio after a deposit and simulated yield', () => {
  let wallet: PrivateKeyAccount
  const deposited = 400n * TUSD

  beforeAll(async () => {
    wallet = await fundedMember(h, chain, 1_000n * TUSD)
    await deposit(wallet, deposited)
    // Yield: tUSD sent straight to the vault raises what every share redeems for.
    await mintToken(chain.anvil, chain.token, chain.vault, 25n * TUSD)
  })

  test('tokens hold the idle tUSD and ETH, without the receipt token; protocols the position; earned > 0, exact', async () => {
    const r = await portfolio(wallet.address.toLowerCase())
    expect(r.status, r.text).toBe(200)
    // The envelope of both versions: no top-level total_stats or protocols.
    expect(Object.keys(r.body)).toEqual(['portfolio'])
    expect(Object.keys(r.body.portfolio).sort()).toEqual(['holdings', 'productsEarnings'])

    const shares = await balanceOf(chain.vault, wallet.address)
    const assets = await convertToAssets(shares)
    const native = await client().getBalance({ address: wallet.address })
    expect(shares).toBeGreaterThan(0n)
    expect(assets).toBeGreaterThan(deposited)

    const [holdings] = r.body.portfolio.holdings.wallets as Json[]
    expect(r.body.portfolio.holdings.wallets).toHaveLength(1)
    expect(holdings!.address).toBe(wallet.address)
    expect(holdings!.ecosystem).toBe('evm')
    expect(holdings!.tokens).toEqual([
      { chainId: '31337', address: 'native', symbol: 'ETH', decimals: 18, balance: native.toString() },
      { chainId: '31337', address: getAddress(chain.token), symbol: 'tUSD', decimals: 6, balance: (1_000n * TUSD - deposited).toString() },
    ])
    expect(holdings!.protocols).toEqual([
      {
        opportunityId: chain.directId,
        name: 'Test USD Vault',
        chainId: '31337',
        protocol: 'ERC-4626',
        vaultAddress: getAddress(chain.vault),
        receiptToken: tokenOf(chain.vault, 'vtUSD'),
        baseToken: tokenOf(chain.token, 'tUSD'),
        shares: shares.toString(),
        assets: assets.toString(),
      },
    ])
    expect(r.body.portfolio.productsEarnings).toEqual([
      {
        opportunityId: chain.directId,
        chainId: '31337',
        baseToken: tokenOf(chain.token, 'tUSD'),
        netDeposited: deposited.toString(),
        currentValue: assets.toString(),
        earned: (assets - deposited).toString(),
      },
    ])
    expect(BigInt(r.body.portfolio.productsEarnings[0].earned)).toBeGreaterThan(0n)
  })

  test('includeProtocolTokens=true lists the receipt token too; v1 answers the identical body', async () => {
    const shares = await balanceOf(chain.vault, wallet.address)
    const plain = await portfolio(wallet.address)
    const withReceipts = await portfolio(wallet.address, '?includeProtocolTokens=true')
    expect(withReceipts.status, withReceipts.text).toBe(200)
    const tokens = withReceipts.body.portfolio.holdings.wallets[0].tokens as Json[]
    expect(tokens.map((t) => t.symbol)).toEqual(['ETH', 'tUSD', 'vtUSD'])
    expect(tokens[2]).toEqual({ chainId: '31337', address: getAddress(chain.vault), symbol: 'vtUSD', decimals: 6, balance: shares.toString() })
    // Only tokens change with the flag.
    expect({ ...withReceipts.body.portfolio, holdings: null }).toEqual({ ...plain.body.portfolio, holdings: null })
    expect((await portfolio(wallet.address, '?includeProtocolTokens=false')).body).toEqual(plain.body)

    for (const query of ['', '?includeProtocolTokens=true']) {
      const v1 = await portfolio(wallet.address, query, 'v1')
      expect(v1.status).toBe(200)
      expect(v1.body).toEqual((await portfolio(wallet.address, query)).body)
    }
  })

  test('after a withdrawal the net deposited drops by what was paid out, and earned still adds up', async () => {
    const held = await balanceOf(chain.token, wallet.address)
    await withdraw(wallet, (await balanceOf(chain.vault, wallet.address)) / 2n)
    const paidOut = (await balanceOf(chain.token, wallet.address)) - held
    expect(paidOut).toBeGreaterThan(0n)

    const r = await portfolio(wallet.address)
    const assets = await convertToAssets(await balanceOf(chain.vault, wallet.address))
    const net = deposited - paidOut
    expect(r.body.portfolio.productsEarnings).toEqual([
      expect.objectContaining({ netDeposited: net.toString(), currentValue: assets.toString(), earned: (assets - net).toString() }),
    ])
    expect(r.body.portfolio.holdings.wallets[0].protocols[0].assets).toBe(assets.toString())
  })

  test('a position withdrawn in full leaves protocols but stays in productsEarnings with what it earned', async () => {
    const before = await balanceOf(chain.token, wallet.address)
    await withdraw(wallet, await balanceOf(chain.vault, wallet.address))
    const paidOut = (await balanceOf(chain.token, wallet.address)) - before
    const withdrawnInAll = (await balanceOf(chain.token, wallet.address)) - (1_000n * TUSD - deposited)

    const r = await portfolio(wallet.address, '?includeProtocolTokens=true')
    expect(paidOut).toBeGreaterThan(0n)
    expect(r.body.portfolio.holdings.wallets[0].protocols).toEqual([])
    expect(r.body.portfolio.holdings.wallets[0].tokens.map((t: Json) => t.symbol)).toEqual(['ETH', 'tUSD'])
    // Out came more than went in: net deposited is negative, and earned is exactly the surplus.
    expect(r.body.portfolio.productsEarnings).toEqual([
      expect.objectContaining({
        netDeposited: (deposited - withdrawnInAll).toString(),
        currentValue: '0',
        earned: (withdrawnInAll - deposited).toString(),
      }),
    ])
    expect(withdrawnInAll).toBeGreaterThan(deposited)
  })

  test('the built deposit and withdrawals are in the wallet activity, newest first', async () => {
    const r = await h.get(`/v2/wallets/activity?addresses=${wallet.address}`, { key: h.org.publishableKey })
    expect(r.status).toBe(200)
    expect(r.body.activities.map((a: Json) => a.type)).toEqual(['withdraw', 'withdraw', 'deposit'])
    expect(r.body.activities[2]).toMatchObject({ walletAddress: wallet.address, opportunityId: chain.directId, amount: deposited.toString() })
  })
})

describe("the catalog's eventsFromBlock", () => {
  test('the flows are scanned from that block: a deposit before it is not counted as deposited', async () => {
    const wallet = await fundedMember(h, chain, 50n * TUSD)
    await deposit(wallet, 10n * TUSD)
    const earnings = async () => {
      const r = await portfolio(wallet.address)
      expect(r.status, r.text).toBe(200)
      return (r.body.portfolio.productsEarnings as Json[])[0]!
    }
    expect((await earnings()).netDeposited).toBe((10n * TUSD).toString())
    const next = Number(await client().getBlockNumber({ cacheTime: 0 })) + 1
    // The scan's start must be a block the chain has: mine it (with a transaction that is no deposit).
    await mintToken(chain.anvil, chain.token, chain.vault, 1n)
    const catalog = localCatalog()
    const withStart = { opportunities: catalog.opportunities.map((o) => (o.id === chain.directId ? { ...o, eventsFromBlock: next } : o)) }
    await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, withStart)
    try {
      expect((await earnings()).netDeposited).toBe('0')
    } finally {
      await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, catalog)
    }
    expect((await earnings()).netDeposited).toBe((10n * TUSD).toString())
  })
})

describe('catalog shapes the sample does not have (a store of their own)', () => {
  let own: Harness
  const imports = () => ({ store: own.store, ecosystems: own.deps.ecosystems, clock: own.deps.clock })
  beforeAll(async () => {
    own = await createHarness({ clients: { evm: chain.evmClient() } })
    await importCatalog(imports(), localCatalog())
  })
  afterAll(() => own.close())
  const direct = () => localCatalog().opportunities.find((o) => o.id === chain.directId)!
  const portfolioOf = (address: string, query = '') => own.get(`/v2/wallet/${address}/portfolio${query}`, { key: own.org.publishableKey })
  /** `amount` of tUSD deposited straight into `vault` by a fresh wallet (not through the API: no membership needed). */
  async function depositor(vault: Address, amount: bigint) {
    const wallet = await fundedMember(h, chain, amount)
    const call = (to: Address, data: Hex) => sendUnsigned(chain.anvil, wallet, { to, data, value: '0', gasLimit: '500000', chainId: Number(chain.anvil.chainId) })
    await call(chain.token, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [vault, amount] }))
    await call(vault, encodeFunctionData({ abi: erc4626Abi, functionName: 'deposit', args: [amount, wallet.address] }))
    return wallet
  }

  test("a receipt token the file gives no decimals for has the chain's in tokens[], not the asset's", async () => {
    // Shares of 18 decimals over a 6-decimal asset (a decimals offset, as MetaMorpho's).
    const offset = await deployOffsetVault(chain.anvil, chain.token)
    const id = '0b6cf0a4-5f0f-4d8e-9a6e-1f2d3c4b5a69'
    await importCatalog(imports(), { opportunities: [...localCatalog().opportunities, { ...direct(), id, name: 'Offset vault', vaultAddress: offset, receiptToken: { symbol: 'ovtUSD' } }] })
    const wallet = await depositor(offset, 10n * TUSD)
    const r = await portfolioOf(wallet.address, '?includeProtocolTokens=true')
    expect(r.status, r.text).toBe(200)
    const [holdings] = r.body.portfolio.holdings.wallets as Json[]
    const token = (holdings!.tokens as Json[]).find((t) => t.address === getAddress(offset))
    expect(token).toMatchObject({ decimals: 18, balance: (await balanceOf(offset, wallet.address)).toString() })
    expect((holdings!.protocols as Json[]).find((p) => p.opportunityId === id)!.receiptToken.decimals).toBe(18)
  })

  test('one vault listed under two ids (delisted, then imported again under a new one) is one position, the listed one', async () => {
    const wallet = await depositor(chain.vault, 40n * TUSD)
    // A member who went in and out through the API under the old id: its history is the vault's, under the new id too.
    const exited = await fundedMember(own, chain, 10n * TUSD)
    const through = (kind: string, body: Json) => own.post(`/v2/actions/${kind}/${chain.directId}`, { userAddress: exited.address, distributorId: own.distributorId, ...body })
    await send(exited, await through('deposit', { tokenIn: chain.token, amount: (10n * TUSD).toString() }))
    await send(exited, await through('withdraw', { amount: (await balanceOf(chain.vault, exited.address)).toString() }))
    const exitedRow = ((await portfolioOf(exited.address)).body.portfolio.productsEarnings as Json[]).find((e) => e.opportunityId === chain.directId)
    expect(exitedRow).toMatchObject({ currentValue: '0' })
    await setOpportunityDelisted(imports(), chain.directId, true)
    const relisted = 'f1d3b0a2-7c55-4e0e-9d0b-6a0c9a6f0c11'
    await importCatalog(imports(), { opportunities: [...localCatalog().opportunities, { ...direct(), id: relisted, name: 'Test USD Vault (v2 listing)' }] })
    const r = await portfolioOf(wallet.address)
    expect(r.status, r.text).toBe(200)
    const [holdings] = r.body.portfolio.holdings.wallets as Json[]
    const shares = await balanceOf(chain.vault, wallet.address)
    expect((holdings!.protocols as Json[]).filter((p) => p.vaultAddress === getAddress(chain.vault)).map((p) => [p.opportunityId, p.shares])).toEqual([[relisted, shares.toString()]])
    const earnings = (r.body.portfolio.productsEarnings as Json[]).filter((e) => e.opportunityId === relisted || e.opportunityId === chain.directId)
    expect(earnings.map((e) => [e.opportunityId, e.netDeposited])).toEqual([[relisted, (40n * TUSD).toString()]])
    expect((await portfolioOf(exited.address)).body.portfolio.productsEarnings).toEqual([{ ...exitedRow, opportunityId: relisted }])
  })
})

describe('an id moved to another vault (a store of its own)', () => {
  test('a wallet that acted under it on the old vault keeps its row, under the id that now stands for that vault', async () => {
    const mine = await createHarness({ clients: { evm: chain.evmClient() } })
    try {
      const imports = { store: mine.store, ecosystems: mine.deps.ecosystems, clock: mine.deps.clock }
      await importCatalog(imports, localCatalog())
      // In straight (no deposit built under the id, so it may be moved), out through the API.
      const wallet = await fundedMember(mine, chain, 10n * TUSD)
      const call = (to: Address, data: Hex) => sendUnsigned(chain.anvil, wallet, { to, data, value: '0', gasLimit: '500000', chainId: Number(chain.anvil.chainId) })
      await call(chain.token, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [chain.vault, 10n * TUSD] }))
      await call(chain.vault, encodeFunctionData({ abi: erc4626Abi, functionName: 'deposit', args: [10n * TUSD, wallet.address] }))
      const shares = await balanceOf(chain.vault, wallet.address)
      await send(wallet, await mine.post(`/v2/actions/withdraw/${chain.directId}`, { userAddress: wallet.address, amount: shares.toString(), distributorId: mine.distributorId }))
      const earnings = async () => (await mine.get(`/v2/wallet/${wallet.address}/portfolio`, { key: mine.org.publishableKey })).body.portfolio.productsEarnings as Json[]
      const [before] = await earnings()
      expect(before).toMatchObject({ opportunityId: chain.directId, currentValue: '0' })
      // The id now names another vault; the old one is listed under a new id.
      const direct = localCatalog().opportunities.find((o) => o.id === chain.directId)!
      const other = await deployVault(chain.anvil, chain.token, { symbol: 'vnUSD' })
      const oldVault = '5d0a1b2c-3d4e-4f50-8a6b-7c8d9e0f1a2b'
      const moved = { ...direct, vaultAddress: other, receiptToken: { symbol: 'vnUSD', decimals: 6 } }
      await importCatalog(imports, { opportunities: [...localCatalog().opportunities.filter((o) => o.id !== chain.directId), moved, { ...direct, id: oldVault, name: 'Test USD Vault (old)' }] })
      expect(await earnings()).toEqual([{ ...before, opportunityId: oldVault }])
    } finally {
      await mine.close()
    }
  })
})

describe('a catalog contract the chain no longer reads as one (a store of its own)', () => {
  test('is named in unreadable, its position unknown; the wallet\'s other positions and tokens still show', async () => {
    const own = await createHarness({ clients: { evm: chain.evmClient() } })
    try {
      const imports = { store: own.store, ecosystems: own.deps.ecosystems, clock: own.deps.clock }
      const direct = localCatalog().opportunities.find((o) => o.id === chain.directId)!
      // A vault over a token of its own, whose conversion will overflow; another whose code will be gone.
      const xusd = await deployToken(chain.anvil, { name: 'Other USD', symbol: 'xUSD' })
      const overflowing = await deployVault(chain.anvil, xusd, { symbol: 'vxUSD' })
      const vanishing = await deployVault(chain.anvil, chain.token, { symbol: 'vgUSD' })
      const xusdToken = { address: xusd, symbol: 'xUSD', decimals: 6 }
      const entries = [
        direct,
        { ...direct, id: '7d0f6c1e-2a3b-4c5d-8e9f-0a1b2c3d4e51', name: 'Overflowing vault', vaultAddress: overflowing, baseToken: xusdToken, depositTokens: [xusdToken], receiptToken: { symbol: 'vxUSD', decimals: 6 } },
        { ...direct, id: '7d0f6c1e-2a3b-4c5d-8e9f-0a1b2c3d4e52', name: 'Vanishing vault', vaultAddress: vanishing, receiptToken: { symbol: 'vgUSD', decimals: 6 } },
      ]
      expect((await importCatalog(imports, { opportunities: entries })).opportunities.map((o) => o.chainFacts)).toEqual(['read', 'read', 'read'])
      const wallet = await fundedMember(h, chain, 30n * TUSD)
      await mintToken(chain.anvil, xusd, wallet.address, 10n * TUSD)
      const call = (to: Address, data: Hex) => sendUnsigned(chain.anvil, wallet, { to, data, value: '0', gasLimit: '500000', chainId: Number(chain.anvil.chainId) })
      for (const [token, vault] of [[chain.token, chain.vault], [xusd, overflowing], [chain.token, vanishing]] as const) {
        await call(token, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [vault, 10n * TUSD] }))
        await call(vault, encodeFunctionData({ abi: erc4626Abi, functionName: 'deposit', args: [10n * TUSD, wallet.address] }))
      }
      // xUSD's whole remaining supply sent to its vault: totalAssets() + 1 overflows, so convertToAssets reverts
      // while balanceOf still answers. The other vault's code is replaced by a bare revert.
      const supply = await client().readContract({ address: xusd, abi: erc20Abi, functionName: 'totalSupply' })
      await mintToken(chain.anvil, xusd, overflowing, 2n ** 256n - 1n - supply)
      await chain.anvil.testClient.setCode({ address: vanishing, bytecode: '0x5f5ffd' })

      const r = await own.get(`/v2/wallet/${wallet.address}/portfolio`, { key: own.org.publishableKey })
      expect(r.status, r.text).toBe(200)
      const [holdings] = r.body.portfolio.holdings.wallets as Json[]
      expect((holdings!.protocols as Json[]).map((p) => p.opportunityId)).toEqual([chain.directId])
      expect((r.body.portfolio.productsEarnings as Json[]).map((e) => e.opportunityId)).toEqual([chain.directId])
      expect((holdings!.tokens as Json[]).map((t) => t.symbol).sort()).toEqual(['ETH', 'tUSD'])
      expect((holdings!.unreadable as Json[]).map((u) => u.address).sort()).toEqual([getAddress(overflowing), getAddress(vanishing)].sort())
      for (const u of holdings!.unreadable as Json[]) expect(u).toEqual({ chainId: '31337', address: u.address, reason: expect.stringContaining(u.address) })
    } finally {
      await own.close()
    }
  })
})

describe('whose vault histories are read', () => {
  test('the vaults a wallet holds shares in now, and those it acted on through this deployment; no other (a browser key may ask any address, and anyone may make members)', async () => {
    const proxy = recordingProxy(chain.anvil.url)
    const counted = await createHarness({ store: h.store, clients: { evm: connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${proxy.url}` }) } })
    try {
      const getLogs = () => proxy.calls.filter((c) => c.method === 'eth_getLogs').map((c) => (c.params[0] as { address: string | string[] }).address)
      const portfolioOf = (address: string) => counted.get(`/v2/wallet/${address}/portfolio`, { key: counted.org.publishableKey })

      // An address that holds nothing and is no member: its balances, and no history scan.
      expect((await portfolioOf(privateKeyToAccount(generatePrivateKey()).address)).status).toBe(200)
      expect(getLogs()).toEqual([])

      // An address that is no member but holds shares (it deposited straight into the vault): that vault's history.
      const holder = privateKeyToAccount(generatePrivateKey())
      await setNativeBalance(chain.anvil, holder.address, 10n ** 18n)
      await mintToken(chain.anvil, chain.token, holder.address, 5n * TUSD)
      const call = (to: Address, data: Hex) => sendUnsigned(chain.anvil, holder, { to, data, value: '0', gasLimit: '500000', chainId: Number(chain.anvil.chainId) })
      await call(chain.token, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [chain.vault, 5n * TUSD] }))
      await call(chain.vault, encodeFunctionData({ abi: erc4626Abi, functionName: 'deposit', args: [5n * TUSD, holder.address] }))
      const held = await portfolioOf(holder.address)
      expect(held.status, held.text).toBe(200)
      expect((held.body.portfolio.productsEarnings as Json[]).map((e) => [e.opportunityId, e.netDeposited])).toEqual([[chain.directId, (5n * TUSD).toString()]])
      expect(new Set(getLogs().flat().map((a) => a.toLowerCase()))).toEqual(new Set([chain.vault.toLowerCase()]))

      // A fresh member: no holdings and no actions, so no history scan (members cost 6 units to make: a first portfolio
      // of every vault's history each had been ~2,000 eth_getLogs on a long-lived chain).
      proxy.calls.length = 0
      const member = await fundedMember(h, chain, 20n * TUSD)
      expect((await portfolioOf(member.address)).status).toBe(200)
      expect(getLogs()).toEqual([])
      // Once it deposited through the API and withdrew in full, that vault's history, so the position still shows
      // what it earned; not the catalog's other vaults.
      await deposit(member, 10n * TUSD)
      await withdraw(member, await balanceOf(chain.vault, member.address))
      proxy.calls.length = 0
      const exited = await portfolioOf(member.address)
      expect(exited.status, exited.text).toBe(200)
      expect((exited.body.portfolio.productsEarnings as Json[]).map((e) => [e.opportunityId, e.currentValue])).toEqual([[chain.directId, '0']])
      expect(new Set(getLogs().flat().map((a) => a.toLowerCase()))).toEqual(new Set([chain.vault.toLowerCase()]))
      const others = localCatalog().opportunities.filter((o) => o.ecosystem === 'evm' && o.vaultAddress.toLowerCase() !== chain.vault.toLowerCase())
      expect(others.length).toBeGreaterThan(0)
    } finally {
      // Not closed: it shares the file's store, which its close would close.
      await proxy.stop()
    }
  })
})

describe('portfolio of other wallets', () => {
  test('a wallet with nothing shows no tokens and no positions', async () => {
    const r = await portfolio('0x' + '42'.repeat(20))
    expect(r.status, r.text).toBe(200)
    expect(r.body).toEqual({
      portfolio: { productsEarnings: [], holdings: { wallets: [{ address: getAddress('0x' + '42'.repeat(20)), ecosystem: 'evm', tokens: [], protocols: [], unreadable: [] }] } },
    })
  })

  test('a Solana address is read as Solana: this catalog lists nothing there', async () => {
    const r = await portfolio('11111111111111111111111111111111')
    expect(r.status, r.text).toBe(200)
    expect(r.body.portfolio.holdings.wallets).toEqual([{ address: '11111111111111111111111111111111', ecosystem: 'solana', tokens: [], protocols: [], unreadable: [] }])
  })

  test('a TON address in any form, its standard base64 URL-encoded in the path, is read as TON', async () => {
    const ton = new TonAddress(0, Buffer.alloc(32, 0xfb))
    const shown = ton.toString({ bounceable: false })
    for (const form of [ton.toRawString(), ton.toString({ urlSafe: false }), shown]) {
      const r = await portfolio(encodeURIComponent(form))
      expect(r.status, `${form}: ${r.text}`).toBe(200)
      expect(r.body.portfolio.holdings.wallets).toEqual([{ address: shown, ecosystem: 'ton', tokens: [], protocols: [], unreadable: [] }])
    }
  })
})

test('/openapi.json lists both versions (and the activity endpoints) with their costs', async () => {
  const { body } = await h.get('/openapi.json', { key: null })
  const op = (path: string) => body.paths[path]?.get
  expect(op('/v2/wallet/{address}/portfolio')).toMatchObject({ operationId: 'portfolio.v2', 'x-cost-units': 5 })
  expect(op('/v1/wallet/{address}/portfolio')).toMatchObject({ operationId: 'portfolio.v1', 'x-cost-units': 5 })
  expect(Object.keys(op('/v2/wallet/{address}/portfolio').responses)).toContain('503')
  expect(op('/v2/wallets/activity')).toMatchObject({ operationId: 'activity.wallets' })
  expect(op('/v2/distributors/{distributorId}/activity')).toMatchObject({ operationId: 'activity.distributor' })
})

describe('portfolio rejections', () => {
  test('an address no ecosystem accepts is 400 naming address', async () => {
    for (const address of ['0x1234', 'not-a-wallet', '0x' + 'g'.repeat(40)]) {
      const r = await portfolio(address)
      expect(r.status, address).toBe(400)
      expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
      expect(Object.keys(r.body.context)).toEqual(['address'])
    }
  })

  test('includeProtocolTokens other than true or false is 400 naming it, on both versions', async () => {
    for (const version of ['v1', 'v2'])
      for (const value of ['yes', '1', 'maybe']) {
        const r = await portfolio('0x' + '42'.repeat(20), `?includeProtocolTokens=${value}`, version)
        expect(r.status, `${version} ${value}`).toBe(400)
        expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
        expect(r.body.context).toEqual({ includeProtocolTokens: 'must be true or false' })
      }
  })

  test('no key is 401 on both versions', async () => {
    for (const version of ['v1', 'v2']) {
      const r = await h.get(`/${version}/wallet/${'0x' + '42'.repeat(20)}/portfolio`, { key: null })
      expect(r.status).toBe(401)
      expectEnvelope(r.body, 401, 'UNAUTHORIZED')
    }
  })

  test('a chain whose RPC is down, or that this server has no RPC for, is 503: never a partial portfolio', async () => {
    const down = evmClientFromPublicClients({ [chain.anvil.chainId]: createPublicClient({ chain: chain.anvil.chain, transport: http(await closedPortUrl(), { retryCount: 0 }) }) })
    for (const evm of [down, evmClientFromPublicClients({})]) {
      // The same store (and catalog) behind a server whose EVM client cannot reach chain 31337.
      const broken = await createHarness({ store: h.store, clients: { evm } })
      const r = await broken.get(`/v2/wallet/${'0x' + '42'.repeat(20)}/portfolio`)
      expect(r.status, r.text).toBe(503)
      expectEnvelope(r.body, 503, 'UNAVAILABLE')
      expect(r.body.context).toEqual({ chainId: '31337' })
    }
  })

  test('an RPC that serves another chain is 503 for any address, member or not: never its balances shown as this chain\'s', async () => {
    const other = await startAnvil({ args: ['--chain-id', '8453'] })
    try {
      const misrouted = await createHarness({ store: h.store, clients: { evm: connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${other.url}` }) } })
      const member = await fundedMember(h, chain, 0n)
      for (const address of [privateKeyToAccount(generatePrivateKey()).address, member.address]) {
        const r = await misrouted.get(`/v2/wallet/${address}/portfolio`)
        expect(r.status, r.text).toBe(503)
        expect(r.body).toMatchObject({ error: `the RPC configured for EVM chain ${chain.anvil.chainId} serves chain 8453`, context: { chainId: '31337' } })
      }
    } finally {
      await other.stop()
    }
  })
})
