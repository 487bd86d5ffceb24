/**
 * A contract wallet's deposit submitted by someone else (a Safe relayer, an ERC-4337 bundler): the submitter writes
 * the transaction's input around the call the wallet's owner signed, may append a tag of its own, and may put calls
 * of its own, with tags, ahead of the wallet's. Only the tag on the wallet's own call to the vault counts, which a
 * trace of the calls shows; on an RPC that gives no trace such a deposit is a 503 naming what is missing.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { createDistributor, createOrganization, importCatalog } from '@earn/core'
import { evm, evmClientFromPublicClients } from '@earn/plugin-evm'
import { concatHex, createPublicClient, encodeFunctionData, erc20Abi, erc4626Abi, http, stringToHex, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { anvilChain, deployBundler, deployDepositSpammer, deploySmartWallet, mintToken, recordingProxy, relayThroughWallet, setNativeBalance, signedWalletCall, testBundlerAbi, testDepositSpammerAbi, testSmartWalletAbi } from '../chains/evm.ts'
import { createHarness, expectEnvelope, type Harness, type Json } from '../harness.ts'
import { localCatalog, startLocalChain, type LocalChain } from './localChain.ts'
import { registerContractWallet } from './members.ts'
import { fileStore } from './records.ts'

setDefaultTimeout(60_000)

let chain: LocalChain
const db = fileStore()
/** Through an RPC that traces, and through one that refuses `debug_traceTransaction`; one store, one catalog. */
let h: Harness
let noTrace: Harness
let tracing: ReturnType<typeof recordingProxy>
let refusing: ReturnType<typeof recordingProxy>
let thief: { secretKey: string; distributorId: string }
let second: { secretKey: string; distributorId: string }
const relayer = privateKeyToAccount(generatePrivateKey())

const clientVia = (url: string) =>
  evmClientFromPublicClients({ [chain.anvil.chainId]: createPublicClient({ chain: anvilChain, transport: http(url), batch: { multicall: true } }) })

beforeAll(async () => {
  chain = await startLocalChain()
  tracing = recordingProxy(chain.anvil.url)
  refusing = recordingProxy(chain.anvil.url, { refuse: (call) => call.method === 'debug_traceTransaction' })
  h = await createHarness({ store: db.store, clients: { evm: clientVia(tracing.url) } })
  noTrace = await createHarness({ store: db.store, clients: { evm: clientVia(refusing.url) } })
  await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, localCatalog())
  // Membership is global: another organization may build for any member wallet, and so hold a valid tag for it.
  const other = await createOrganization({ store: h.store, clock: h.deps.clock }, { name: 'Thief org' })
  thief = { secretKey: other.secretKey, distributorId: (await createDistributor({ store: h.store, clock: h.deps.clock }, { orgId: other.orgId })).distributorId }
  const honest = await createOrganization({ store: h.store, clock: h.deps.clock }, { name: 'Second org' })
  second = { secretKey: honest.secretKey, distributorId: (await createDistributor({ store: h.store, clock: h.deps.clock }, { orgId: honest.orgId })).distributorId }
  await setNativeBalance(chain.anvil, relayer.address, 10n ** 18n)
})
afterAll(async () => {
  await h.close()
  await noTrace.close()
  tracing.stop()
  refusing.stop()
  await chain.anvil.stop()
  db.cleanup()
})

const AMOUNT = 40n * 10n ** 6n

/** A contract wallet member holding `AMOUNT` tUSD, its owner, and the honest deposit built for it (by `org`: the harness's own by default). */
async function walletWithBuiltDeposit(server: Harness, org: { secretKey: string; distributorId: string } = { secretKey: server.org.secretKey, distributorId: server.distributorId }) {
  const owner = privateKeyToAccount(generatePrivateKey())
  const wallet = await deploySmartWallet(chain.anvil, owner.address)
  await registerContractWallet(server, wallet, owner, chain.anvil.chainId)
  await mintToken(chain.anvil, chain.token, wallet, AMOUNT)
  const r = await server.request('POST', `/v2/actions/deposit/${chain.directId}`, {
    key: org.secretKey,
    body: { userAddress: wallet, tokenIn: chain.token, amount: AMOUNT.toString(), distributorId: org.distributorId },
  })
  expect(r.status, r.text).toBe(200)
  const [approve, deposit] = r.body.transactions as Json[]
  expect((await relayThroughWallet(chain.anvil, { owner, relayer, wallet, tx: approve!.transaction })).status).toBe('success')
  return { owner, wallet, actionId: r.body.actionId as string, deposit: deposit!.transaction }
}

/** The tag a deposit built by the thief's organization for `wallet` carries: everything after deposit(assets, receiver). */
async function thiefTag(server: Harness, wallet: Address): Promise<string> {
  const r = await server.request('POST', `/v2/actions/deposit/${chain.directId}`, {
    key: thief.secretKey,
    body: { userAddress: wallet, tokenIn: chain.token, amount: '1', distributorId: thief.distributorId },
  })
  expect(r.status, r.text).toBe(200)
  const data = (r.body.transactions as Json[]).at(-1)!.transaction.data as string
  return Buffer.from(data.slice(2 + 2 * 68), 'hex').toString('ascii')
}

const verify = (server: Harness, hash: Hex, key = server.org.secretKey) =>
  server.request('GET', `/v2/actions/verify?chainId=${chain.anvil.chainId}&txHash=${hash}`, { key })

/** `calls` made by a TestBundler in one transaction the relayer sends. */
async function bundle(calls: readonly { to: Address; data: Hex }[]) {
  const bundler = await deployBundler(chain.anvil)
  const hash = await chain.anvil.walletClient.sendTransaction({ account: relayer, to: bundler, data: encodeFunctionData({ abi: testBundlerAbi, functionName: 'run', args: [calls] }) })
  const mined = await chain.anvil.publicClient.waitForTransactionReceipt({ hash })
  expect(mined.status).toBe('success')
  return mined.transactionHash
}

describe('a relayed contract wallet deposit', () => {
  test("a relayer appending another distributor's valid tag claims nothing: the tag on the wallet's own call verifies", async () => {
    const { owner, wallet, actionId, deposit } = await walletWithBuiltDeposit(h)
    const stolen = await thiefTag(h, wallet)
    expect(stolen).toStartWith(`earn:v1:${thief.distributorId}:`)
    const mined = await relayThroughWallet(chain.anvil, { owner, relayer, wallet, tx: deposit, appended: stringToHex(stolen) })
    expect(mined.status).toBe('success')
    const traces = tracing.count('debug_traceTransaction')

    const v = await verify(h, mined.transactionHash)
    expect(v.status, v.text).toBe(200)
    expect(v.body).toMatchObject({ verified: true, metadata: { distributorId: h.distributorId, actionId } })
    expect(v.body.tag).toStartWith(`earn:v1:${h.distributorId}:${actionId}:`)
    expect(tracing.count('debug_traceTransaction')).toBe(traces + 1)
    const recorded = db.actions("kind = 'verify' and tx_hash = ?", mined.transactionHash)
    expect(recorded.map((r) => [r.distributor_id, r.verifies, r.amount])).toEqual([[h.distributorId, actionId, AMOUNT.toString()]])
  })

  test('junk appended by a relayer does not hide the tag on the wallet\'s call', async () => {
    const { owner, wallet, actionId, deposit } = await walletWithBuiltDeposit(h)
    const mined = await relayThroughWallet(chain.anvil, { owner, relayer, wallet, tx: deposit, appended: stringToHex('earn:v1:junk') })
    expect(mined.status).toBe('success')
    const v = await verify(h, mined.transactionHash)
    expect(v.body).toMatchObject({ verified: true, metadata: { actionId } })
  })

  test("an account's own deposit is read from its input: no trace is asked for", async () => {
    const account = privateKeyToAccount(generatePrivateKey())
    await setNativeBalance(chain.anvil, account.address, 10n ** 18n)
    await mintToken(chain.anvil, chain.token, account.address, 1n)
    await chain.anvil.walletClient.sendTransaction({ account, to: chain.token, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [chain.vault, 1n] }) })
    // Tagged with a tag of no action: what matters here is which calls the read makes, not the answer.
    const data = concatHex([encodeFunctionData({ abi: depositAbi, functionName: 'deposit', args: [1n, account.address] }), stringToHex(`earn:v1:${h.distributorId}:none:00`)])
    const hash = await chain.anvil.walletClient.sendTransaction({ account, to: chain.vault, data })
    await chain.anvil.publicClient.waitForTransactionReceipt({ hash })
    const traces = tracing.count('debug_traceTransaction')
    const v = await verify(h, hash)
    expect(v.body).toMatchObject({ tag: `earn:v1:${h.distributorId}:none:00`, verified: false })
    expect(tracing.count('debug_traceTransaction')).toBe(traces)
  })

  test('a bundler that puts tagged calls of its own ahead of the wallet\'s (a transfer, a deposit of its own) claims nothing', async () => {
    const { owner, wallet, actionId, deposit } = await walletWithBuiltDeposit(h)
    const stolen = stringToHex(await thiefTag(h, wallet))
    const bundler = await deployBundler(chain.anvil)
    await mintToken(chain.anvil, chain.token, bundler, 1n)
    const calls = [
      // A transfer the bundler itself makes, carrying the thief's tag: a token move by the bundler.
      { to: chain.token, data: concatHex([encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [relayer.address, 0n] }), stolen]) },
      // A deposit of its own into the same vault, tagged the same: a vault move, but the bundler's, for the bundler.
      { to: chain.token, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [chain.vault, 1n] }) },
      { to: chain.vault, data: concatHex([encodeFunctionData({ abi: depositAbi, functionName: 'deposit', args: [1n, bundler] }), stolen]) },
      { to: wallet, data: await signedWalletCall(chain.anvil, owner, wallet, deposit) },
    ] as const
    const hash = await chain.anvil.walletClient.sendTransaction({
      account: relayer,
      to: bundler,
      data: concatHex([encodeFunctionData({ abi: testBundlerAbi, functionName: 'run', args: [calls.map((c) => ({ to: c.to, data: c.data }))] }), stolen]),
    })
    const mined = await chain.anvil.publicClient.waitForTransactionReceipt({ hash })
    expect(mined.status).toBe('success')
    const v = await verify(h, mined.transactionHash)
    expect(v.status, v.text).toBe(200)
    expect(v.body).toMatchObject({ verified: true, metadata: { distributorId: h.distributorId, actionId } })
    const recorded = db.actions("kind = 'verify' and tx_hash = ?", mined.transactionHash)
    expect(recorded.map((r) => [r.distributor_id, r.verifies])).toEqual([[h.distributorId, actionId]])
  })

  test("a bundle of two wallets' deposits built by two organizations: each is recorded, and each organization is answered its own", async () => {
    const first = await walletWithBuiltDeposit(h)
    const other = await walletWithBuiltDeposit(h, second)
    const hash = await bundle([
      { to: first.wallet, data: await signedWalletCall(chain.anvil, first.owner, first.wallet, first.deposit) },
      { to: other.wallet, data: await signedWalletCall(chain.anvil, other.owner, other.wallet, other.deposit) },
    ])
    const asFirst = await verify(h, hash)
    expect(asFirst.status, asFirst.text).toBe(200)
    expect(asFirst.body).toMatchObject({ verified: true, metadata: { distributorId: h.distributorId, actionId: first.actionId } })
    const asSecond = await verify(h, hash, second.secretKey)
    expect(asSecond.body).toMatchObject({ verified: true, metadata: { distributorId: second.distributorId, actionId: other.actionId } })
    // An organization with neither: the first that holds, whoever asked first.
    expect((await verify(h, hash, thief.secretKey)).body).toMatchObject({ verified: true, metadata: { actionId: first.actionId } })
    const recorded = db.actions("kind = 'verify' and tx_hash = ?", hash).sort((a, b) => (a.verifies === first.actionId ? -1 : b.verifies === first.actionId ? 1 : 0))
    expect(recorded.map((r) => [r.distributor_id, r.verifies, r.wallet, r.amount])).toEqual([
      [h.distributorId, first.actionId, first.wallet, AMOUNT.toString()],
      [second.distributorId, other.actionId, other.wallet, AMOUNT.toString()],
    ])
  })

  test("a wallet's one deposit counts for one tag, though its calls to the vault in that transaction carried two", async () => {
    const { owner, wallet, actionId, deposit } = await walletWithBuiltDeposit(h)
    const tagged = stringToHex(await thiefTag(h, wallet))
    // The wallet's second call to the vault moves nothing and carries the other organization's valid tag.
    const nothing = { to: chain.vault, value: '0', data: concatHex([encodeFunctionData({ abi: depositAbi, functionName: 'totalAssets' }), tagged]) }
    const hash = await bundle([
      { to: wallet, data: await signedWalletCall(chain.anvil, owner, wallet, deposit) },
      { to: wallet, data: await signedWalletCall(chain.anvil, owner, wallet, nothing, 1n) },
    ])
    expect((await verify(h, hash)).body).toMatchObject({ verified: true, metadata: { actionId } })
    // The other organization's tag held too, but the move was its first tag's.
    expect((await verify(h, hash, thief.secretKey)).body).toMatchObject({ verified: true, metadata: { distributorId: h.distributorId, actionId } })
    const recorded = db.actions("kind = 'verify' and tx_hash = ?", hash)
    expect(recorded.map((r) => [r.distributor_id, r.verifies, r.amount])).toEqual([[h.distributorId, actionId, AMOUNT.toString()]])
  })

  test('a deposit the wallet takes back out in the same transaction is recorded as what stayed: nothing for a round trip, the rest otherwise', async () => {
    const call = (to: Address, data: Hex) => ({ to, value: '0', data })
    const out = (wallet: Address, assets: bigint) => call(chain.vault, encodeFunctionData({ abi: depositAbi, functionName: 'withdraw', args: [assets, wallet, wallet] }))
    const into = (wallet: Address, assets: bigint) => call(chain.vault, encodeFunctionData({ abi: depositAbi, functionName: 'deposit', args: [assets, wallet] }))
    const asWallet = async (p: Awaited<ReturnType<typeof walletWithBuiltDeposit>>, calls: { to: Address; value: string; data: Hex }[]) =>
      bundle(await Promise.all(calls.map(async (c, i) => ({ to: p.wallet, data: await signedWalletCall(chain.anvil, p.owner, p.wallet, c, BigInt(i)) }))))

    // The tagged deposit, then out and (untagged) in again three times, and out: the wallet ends as it began.
    const trips = await walletWithBuiltDeposit(h)
    const more = call(chain.token, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [chain.vault, AMOUNT * 3n] }))
    const hash = await asWallet(trips, [trips.deposit, more, out(trips.wallet, AMOUNT), ...[1, 2, 3].flatMap(() => [into(trips.wallet, AMOUNT), out(trips.wallet, AMOUNT)])])
    // Summed alone, the deposits were recorded as 4 × AMOUNT, though none stayed.
    expect((await verify(h, hash)).body).toMatchObject({ verified: false })
    expect(db.actions("kind = 'verify' and tx_hash = ?", hash)).toEqual([])

    // Out with a quarter: three quarters stayed, and that is what is recorded.
    const partly = await walletWithBuiltDeposit(h)
    const partial = await asWallet(partly, [partly.deposit, out(partly.wallet, AMOUNT / 4n)])
    expect((await verify(h, partial)).body).toMatchObject({ verified: true, metadata: { actionId: partly.actionId } })
    expect(db.actions("kind = 'verify' and tx_hash = ?", partial).map((r) => r.amount)).toEqual([((AMOUNT * 3n) / 4n).toString()])
  })

  test('shares sent out and redeemed by another owner in the same transaction are no deposit kept: what counts is the shares the wallet still holds', async () => {
    const call = (to: Address, data: Hex) => ({ to, value: '0', data })
    const asWallet = async (p: Awaited<ReturnType<typeof walletWithBuiltDeposit>>, calls: { to: Address; value: string; data: Hex }[]) =>
      bundle(await Promise.all(calls.map(async (c, i) => ({ to: p.wallet, data: await signedWalletCall(chain.anvil, p.owner, p.wallet, c, BigInt(i)) }))))
    const helper = privateKeyToAccount(generatePrivateKey())
    await setNativeBalance(chain.anvil, helper.address, 10n ** 18n)
    const shares = await chain.anvil.publicClient.readContract({ address: chain.vault, abi: erc4626Abi, functionName: 'previewDeposit', args: [AMOUNT] })
    const give = (to: Address, amount: bigint) => call(chain.vault, encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }))

    // The tagged deposit four times, each time its shares handed to the helper and redeemed from there back to the
    // wallet (the helper let the wallet spend its shares): the wallet ends with what it had, and no shares.
    const trips = await walletWithBuiltDeposit(h)
    await mintToken(chain.anvil, chain.token, trips.wallet, AMOUNT) // rounding's headroom
    const allowed = await chain.anvil.walletClient.writeContract({ account: helper, address: chain.vault, abi: erc20Abi, functionName: 'approve', args: [trips.wallet, 2n ** 255n] })
    expect((await chain.anvil.publicClient.waitForTransactionReceipt({ hash: allowed })).status).toBe('success')
    const redeem = call(chain.vault, encodeFunctionData({ abi: erc4626Abi, functionName: 'redeem', args: [shares, trips.wallet, helper.address] }))
    const more = call(chain.token, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [chain.vault, AMOUNT * 3n] }))
    const round = [trips.deposit, give(helper.address, shares), redeem]
    const hash = await asWallet(trips, [...round, more, ...round, ...round, ...round])
    expect(await chain.anvil.publicClient.readContract({ address: chain.vault, abi: erc20Abi, functionName: 'balanceOf', args: [trips.wallet] })).toBe(0n)
    // Counted by the vault's Deposit events less the wallet's own withdrawals, it was recorded as 4 x AMOUNT.
    expect((await verify(h, hash)).body).toMatchObject({ verified: false })
    expect(db.actions("kind = 'verify' and tx_hash = ?", hash)).toEqual([])

    // A quarter of the shares handed on: three quarters of the deposit stayed with the wallet, and that is recorded.
    const partly = await walletWithBuiltDeposit(h)
    const partial = await asWallet(partly, [partly.deposit, give(helper.address, shares / 4n)])
    expect((await verify(h, partial)).body).toMatchObject({ verified: true, metadata: { actionId: partly.actionId } })
    expect(db.actions("kind = 'verify' and tx_hash = ?", partial).map((r) => r.amount)).toEqual([((AMOUNT * (shares - shares / 4n)) / shares).toString()])
  })

  test('on an RPC that gives no trace, a deposit a contract made inside another sender\'s transaction is a 503 that says what is missing', async () => {
    // The input alone cannot be trusted: its one tag may be the relayer's, the wallet's encoded so it does not read.
    for (const withThiefTag of [false, true]) {
      const built = await walletWithBuiltDeposit(noTrace)
      const appended = withThiefTag ? stringToHex(await thiefTag(noTrace, built.wallet)) : undefined
      const mined = await relayThroughWallet(chain.anvil, { owner: built.owner, relayer, wallet: built.wallet, tx: built.deposit, appended })
      const refused = await verify(noTrace, mined.transactionHash)
      expect(refused.status, refused.text).toBe(503)
      expectEnvelope(refused.body, 503, 'UNAVAILABLE')
      expect(refused.body.error).toMatch(/needs a call trace.*debug_traceTransaction/)
      expect(refused.body.context).toEqual({ chainId: chain.anvil.chainId, txHash: 'needs a call trace' })
      expect(db.actions("kind = 'verify' and tx_hash = ?", mined.transactionHash)).toHaveLength(0)
      // Through the tracing RPC the same transaction is the wallet's.
      expect((await verify(h, mined.transactionHash)).body).toMatchObject({ verified: true, metadata: { actionId: built.actionId } })
    }
    expect(refusing.count('debug_traceTransaction')).toBeGreaterThan(0)
  })

  test("many moves of one caller, each call padded, cost a verify the trace's size once, not once per move", async () => {
    // Its own zero deposits, each as caller and owner (moves a verify must look at), each call 4 KB: no tag anywhere.
    const spammer = await deployDepositSpammer(chain.anvil)
    const hash = await chain.anvil.walletClient.writeContract({ address: spammer, abi: testDepositSpammerAbi, functionName: 'go', args: [chain.vault, 300n, 4_000n], gas: 15_000_000n })
    expect((await chain.anvil.publicClient.waitForTransactionReceipt({ hash })).status).toBe('success')
    const started = performance.now()
    const r = await verify(h, hash)
    // Each move had the whole trace's inputs searched again: 300 moves took ~8 s of the one thread (1,200, ~90 s).
    expect(performance.now() - started).toBeLessThan(2_000)
    expect(r.status, r.text).toBe(404)
    expectEnvelope(r.body, 404, 'NOT_FOUND')
  })

  test("a member wallet's moves beside many tags of its own action under made-up MACs: cheap, however many", async () => {
    // A real action's tag, then the same tag under other MACs, each on a call of the wallet's own to the vault, beside
    // its deposits of one unit there: every tag names the action, and only the MAC tells them false.
    const { owner, wallet, deposit } = await walletWithBuiltDeposit(h)
    const tag = Buffer.from(deposit.data.slice(2 + 2 * 68), 'hex').toString('ascii')
    const forged = (i: number) => `${tag.slice(0, -8)}${i.toString(16).padStart(8, '0')}`
    const unitDeposit = encodeFunctionData({ abi: erc4626Abi, functionName: 'deposit', args: [1n, wallet] })
    const decimals = encodeFunctionData({ abi: erc20Abi, functionName: 'decimals' })
    const send = async (deposits: number, tags: number) => {
      const calls = [...Array(deposits).fill(unitDeposit), ...Array.from({ length: tags }, (_, i) => concatHex([decimals, stringToHex(forged(i))]))]
      const hash = await chain.anvil.walletClient.writeContract({
        account: owner,
        address: wallet,
        abi: testSmartWalletAbi,
        functionName: 'executeBatch',
        args: [Array(calls.length).fill(chain.vault), calls],
        gas: 15_000_000n,
      })
      expect((await chain.anvil.publicClient.waitForTransactionReceipt({ hash })).status).toBe('success')
      return hash
    }
    await setNativeBalance(chain.anvil, owner.address, 10n ** 18n)
    // Each made-up tag had been walked over every move before its MAC was checked, a cost growing with the square of
    // the tags (an audit's 5,000 tags over 600 moves: 25 s). The MAC comes first now, and the tags' actions are read
    // together, so no cap is needed (one had let a bundler make the deposits it carried unverifiable).
    for (const [deposits, tags] of [
      [300, 250],
      [60, 2_000],
    ]) {
      const hash = await send(deposits!, tags!)
      const started = performance.now()
      const r = await verify(h, hash)
      expect(performance.now() - started).toBeLessThan(1_000)
      expect(r.status, r.text).toBe(200)
      expect(r.body).toMatchObject({ verified: false })
    }
  })

  test("a node's trace is checked: `error: null` on calls that succeeded reads as success, a malformed one is a 503, never a 500", async () => {
    const { owner, wallet, actionId, deposit } = await walletWithBuiltDeposit(h)
    const mined = await relayThroughWallet(chain.anvil, { owner, relayer, wallet, tx: deposit })
    // An RPC in front of anvil that rewrites the answers to debug_traceTransaction.
    const rewriting = (rewrite: (frame: Json) => unknown) =>
      Bun.serve({
        port: 0,
        hostname: '127.0.0.1',
        async fetch(req) {
          const call = (await req.json()) as Json
          const answer = (await (await fetch(chain.anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(call) })).json()) as Json
          return Response.json(call.method === 'debug_traceTransaction' ? { ...answer, result: rewrite(answer.result) } : answer)
        },
      })
    const withNullErrors = (frame: Json): Json => ({ ...frame, error: null, calls: (frame.calls ?? []).map(withNullErrors) })
    const nulls = rewriting(withNullErrors)
    const junk = rewriting((frame) => ({ ...frame, calls: {} }))
    try {
      const viaNulls = await createHarness({ store: db.store, clients: { evm: clientVia(`http://127.0.0.1:${nulls.port}`) } })
      expect((await verify(viaNulls, mined.transactionHash)).body).toMatchObject({ verified: true, metadata: { actionId } })
      const viaJunk = await createHarness({ store: db.store, clients: { evm: clientVia(`http://127.0.0.1:${junk.port}`) } })
      const r = await verify(viaJunk, mined.transactionHash)
      expect(r.status, r.text).toBe(503)
      expectEnvelope(r.body, 503, 'UNAVAILABLE')
    } finally {
      // The harnesses share this file's store and stay open: closing one would shut it.
      nulls.stop(true)
      junk.stop(true)
    }
  })

  test("a contract wallet's funding transfer: the tag on the wallet's own transfer call, not the relayer's", async () => {
    const owner = privateKeyToAccount(generatePrivateKey())
    const wallet = await deploySmartWallet(chain.anvil, owner.address)
    await mintToken(chain.anvil, chain.token, wallet, 5n)
    const transfer = concatHex([encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [relayer.address, 5n] }), stringToHex('earn:v1:the-wallets')])
    const tx = { to: chain.token, data: transfer, value: '0', gasLimit: '100000', chainId: Number(chain.anvil.chainId) }
    const mined = await relayThroughWallet(chain.anvil, { owner, relayer, wallet, tx, appended: stringToHex('earn:v1:the-relayers') })
    const read = await evm.transactions.readTransfers(clientVia(tracing.url), { chainId: chain.anvil.chainId, txHash: mined.transactionHash })
    expect(read.tag).toBe('earn:v1:the-relayers')
    expect(await read.tagsOn!({ from: wallet, to: chain.token })).toEqual(['earn:v1:the-wallets'])
    expect(await read.tagsOn!({ from: relayer.address, to: wallet })).toEqual(['earn:v1:the-relayers'])
    expect(await read.tagsOn!({ from: relayer.address, to: chain.token })).toEqual([])
    const untraced = await evm.transactions.readTransfers(clientVia(refusing.url), { chainId: chain.anvil.chainId, txHash: mined.transactionHash })
    expect(await untraced.tagsOn!({ from: wallet, to: chain.token })).toBeUndefined()
    // The sender's own call needs no trace.
    expect(await untraced.tagsOn!({ from: relayer.address, to: wallet })).toEqual(['earn:v1:the-relayers'])
  })
})

const depositAbi = [
  { type: 'function', name: 'deposit', stateMutability: 'nonpayable', inputs: [{ name: 'assets', type: 'uint256' }, { name: 'receiver', type: 'address' }], outputs: [{ type: 'uint256' }] },
  { type: 'function', name: 'totalAssets', stateMutability: 'view', inputs: [], outputs: [{ type: 'uint256' }] },
  { type: 'function', name: 'withdraw', stateMutability: 'nonpayable', inputs: [{ name: 'assets', type: 'uint256' }, { name: 'receiver', type: 'address' }, { name: 'owner', type: 'address' }], outputs: [{ type: 'uint256' }] },
] as const
