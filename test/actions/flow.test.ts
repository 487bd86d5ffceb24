/**
 * End to end on anvil: build deposits and withdrawals through the API, sign and send them as the user, and check
 * the chain: vault shares after a deposit, assets after a withdrawal, the output of a swap deposit and of a swap
 * withdrawal; then verify
 * the mined deposit's attribution tag, and refuse tampered or copied tags.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { createOrganization, importCatalog } from '@earn/core'
import { encodeFunctionData, erc20Abi, stringToHex, type Address, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { deploySmartWallet, mintToken, sendThroughWallet, sendUnsigned, setNativeBalance, testVaultAbi } from '../chains/evm.ts'
import { createHarness, expectEnvelope, type Harness, type Json } from '../harness.ts'
import { localCatalog, startLocalChain, type LocalChain } from './localChain.ts'
import { fundedMember, registerContractWallet } from './members.ts'
import { fileStore } from './records.ts'

// Chains and server processes start here; bun 1.4.5 does not apply bunfig's [test] timeout, so set it per file.
setDefaultTimeout(60_000)

let chain: LocalChain
let h: Harness
const db = fileStore()
beforeAll(async () => {
  chain = await startLocalChain()
  h = await createHarness({ store: db.store, clients: { evm: chain.evmClient() } })
  const imported = await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, localCatalog())
  expect(imported.opportunities.map((o) => o.chainFacts)).toEqual(['read', 'read'])
})
afterAll(async () => {
  await h.close()
  await chain.anvil.stop()
  db.cleanup()
})

const read = (address: Address, abi: typeof erc20Abi | typeof testVaultAbi, functionName: string, args: unknown[]) =>
  chain.anvil.publicClient.readContract({ address, abi: abi as typeof erc20Abi, functionName: functionName as 'balanceOf', args: args as [Address] })
const balanceOf = (token: Address, owner: Address) => read(token, erc20Abi, 'balanceOf', [owner]) as Promise<bigint>

async function sendAll(wallet: Parameters<typeof sendUnsigned>[1], transactions: Json[]) {
  const receipts = []
  for (const t of transactions) {
    const receipt = await sendUnsigned(chain.anvil, wallet, t.transaction)
    expect(receipt.status, `${t.type} step reverted`).toBe('success')
    receipts.push(receipt)
  }
  return receipts
}

describe('direct deposit, verify, withdraw', () => {
  let wallet: Awaited<ReturnType<typeof fundedMember>>
  let depositHash: Hex
  let depositData: Hex
  let actionId: string

  test('a deposit built by the API, signed and sent by the user, gives the user vault shares', async () => {
    wallet = await fundedMember(h, chain, 1_000n * 10n ** 6n)
    const amount = 250n * 10n ** 6n
    const r = await h.post(`/v2/actions/deposit/${chain.directId}`, {
      userAddress: wallet.address.toLowerCase(),
      tokenIn: chain.token,
      amount: amount.toString(),
      // In capitals: a UUID reads the same either way, and the tag and the action carry its stored form.
      distributorId: h.distributorId.toUpperCase(),
      referralCode: 'spring-promo',
    })
    expect(r.status).toBe(200)
    expect(r.body.actionId).toMatch(/^[0-9a-f-]{36}$/)
    expect(r.body.transactions.map((t: Json) => t.type)).toEqual(['approve', 'deposit'])
    const [approve, deposit] = r.body.transactions as Json[]
    expect(approve!.transaction.to.toLowerCase()).toBe(chain.token.toLowerCase())
    expect(deposit!.transaction.value).toBe('0')
    expect(deposit!.transaction.chainId).toBe(31337)
    expect(deposit!.transaction.to.toLowerCase()).toBe(chain.vault.toLowerCase())
    expect(deposit!.transaction.data).toStartWith('0x6e553f65')
    // The tag rides at the end of the deposit's calldata only.
    expect(Buffer.from(deposit!.transaction.data.slice(2), 'hex').toString('latin1')).toContain(`earn:v1:${h.distributorId}:${r.body.actionId}:`)
    expect(Buffer.from(approve!.transaction.data.slice(2), 'hex').toString('latin1')).not.toContain('earn:v1:')

    const sharesBefore = await balanceOf(chain.vault, wallet.address)
    const expected = (await read(chain.vault, testVaultAbi, 'previewDeposit', [amount])) as bigint
    const receipts = await sendAll(wallet, r.body.transactions)
    expect(await balanceOf(chain.vault, wallet.address)).toBe(sharesBefore + expected)
    expect(expected).toBeGreaterThan(0n)
    depositHash = receipts[1]!.transactionHash
    depositData = deposit!.transaction.data
    actionId = r.body.actionId

    const recorded = await h.store.getAction(actionId)
    expect(recorded).toMatchObject({
      kind: 'deposit',
      orgId: h.org.orgId,
      distributorId: h.distributorId,
      wallet: wallet.address.toLowerCase(),
      opportunityId: chain.directId,
      token: chain.token.toLowerCase(),
      amount: amount.toString(),
      referralCode: 'spring-promo',
      chainId: '31337',
    })
  })

  test('verify recognises the mined deposit (publishable key) and records it once', async () => {
    const path = `/v2/actions/verify?chainId=31337&txHash=${depositHash}`
    const r = await h.get(path, { key: h.org.publishableKey })
    expect(r.status, r.text).toBe(200)
    expect(r.body).toEqual({
      tag: expect.stringMatching(new RegExp(`^earn:v1:${h.distributorId}:${actionId}:[0-9a-f]{32}$`)),
      verified: true,
      metadata: { distributorId: h.distributorId, actionId, opportunityId: chain.directId, referralCode: 'spring-promo' },
    })
    expect((await h.get(path)).body.verified).toBe(true)
    // Another organization may verify the public tag, but does not see this organization's referral code.
    const other = await createOrganization({ store: h.store, clock: h.deps.clock }, { name: 'Other org' })
    const seen = await h.get(path, { key: other.publishableKey })
    expect(seen.body).toEqual({ ...r.body, metadata: { distributorId: h.distributorId, actionId, opportunityId: chain.directId } })
    // The same hash spelled in capitals is the same transaction: recorded as the chain spells it, once.
    const capitals = await h.get(`/v2/actions/verify?chainId=31337&txHash=0x${depositHash.slice(2).toUpperCase()}`)
    expect(capitals.body.verified).toBe(true)
    expect(db.actions("kind = 'verify' and lower(tx_hash) = ?", depositHash.toLowerCase())).toHaveLength(1)
    const verifications = db.actions("kind = 'verify' and tx_hash = ?", depositHash)
    expect(verifications).toHaveLength(1)
    expect(verifications[0]).toMatchObject({ chain_id: '31337', wallet: wallet.address.toLowerCase(), opportunity_id: chain.directId, distributor_id: h.distributorId })
    // What the vault took in, in its asset: here all that was built.
    expect(verifications[0]).toMatchObject({ token: chain.token.toLowerCase(), amount: String(250n * 10n ** 6n), verifies: actionId })
  })

  test('one built deposit verifies one transaction, recorded with what it moved: its tag on further deposits is not verified', async () => {
    const built = 1_000n * 10n ** 6n
    const member = await fundedMember(h, chain, built)
    const r = await h.post(`/v2/actions/deposit/${chain.directId}`, { userAddress: member.address, tokenIn: chain.token, amount: built.toString(), distributorId: h.distributorId })
    expect(r.status, r.text).toBe(200)
    // The built deposit is never sent: the wallet deposits 1 unit at a time with its tag, three times.
    const tagHex = (r.body.transactions.at(-1).transaction.data as string).slice(2 + 2 * 68)
    await sendUnsigned(chain.anvil, member, { to: chain.token, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [chain.vault, 3n] }), value: '0', gasLimit: '100000', chainId: 31337 })
    const answers = []
    for (let i = 0; i < 3; i++) {
      const data = (encodeFunctionData({ abi: testVaultAbi, functionName: 'deposit', args: [1n, member.address] }) + tagHex) as Hex
      const receipt = await sendUnsigned(chain.anvil, member, { to: chain.vault, data, value: '0', gasLimit: '300000', chainId: 31337 })
      expect(receipt.status).toBe('success')
      answers.push((await h.get(`/v2/actions/verify?chainId=31337&txHash=${receipt.transactionHash}`)).body.verified)
    }
    expect(answers).toEqual([true, false, false])
    const recorded = db.actions("kind = 'verify' and wallet = ?", member.address.toLowerCase())
    expect(recorded.map((v) => [v.token, v.amount, v.verifies])).toEqual([[chain.token.toLowerCase(), '1', r.body.actionId]])
  })

  test("bytes the wallet appends after the built deposit (an ERC-8021 builder code) leave its tag verifiable", async () => {
    const member = await fundedMember(h, chain, 10n ** 6n)
    const r = await h.post(`/v2/actions/deposit/${chain.directId}`, { userAddress: member.address, tokenIn: chain.token, amount: '1000000', distributorId: h.distributorId })
    expect(r.status, r.text).toBe(200)
    const [approve, deposit] = r.body.transactions as Json[]
    await sendAll(member, [approve!])
    // ERC-8021: the codes in ASCII ("bc_abc123": its first letters are hex digits too, as a MAC's), their length,
    // the schema id, then the 16-byte marker. viem's `dataSuffix` appends bytes the same way.
    const suffix = `${stringToHex('bc_abc123').slice(2)}0900${'8021'.repeat(8)}`
    const sent = await sendUnsigned(chain.anvil, member, { ...deposit!.transaction, data: `${deposit!.transaction.data}${suffix}` })
    expect(sent.status).toBe('success')
    const v = await h.get(`/v2/actions/verify?chainId=31337&txHash=${sent.transactionHash}`)
    expect(v.status, v.text).toBe(200)
    expect(v.body).toMatchObject({ verified: true, metadata: { actionId: r.body.actionId } })
    // The tag as built, without the bytes after it.
    expect(v.body.tag).toMatch(new RegExp(`^earn:v1:${h.distributorId}:${r.body.actionId}:[0-9a-f]{32}$`))
  })

  test('a forged tag of 20,000 characters is answered cut, as no tag of ours', async () => {
    const sender = await fundedMember(h, chain, 0n)
    const forged = `earn:v1:${h.distributorId}:${'a'.repeat(20_000)}:${'0'.repeat(32)}`
    const sent = await sendUnsigned(chain.anvil, sender, { to: privateKeyToAccount(generatePrivateKey()).address, data: stringToHex(forged), value: '0', gasLimit: '2000000', chainId: 31337 })
    const v = await h.get(`/v2/actions/verify?chainId=31337&txHash=${sent.transactionHash}`)
    expect(v.status, v.text).toBe(200)
    expect(v.body).toMatchObject({ verified: false, metadata: { distributorId: null, actionId: null, opportunityId: null } })
    expect(v.body.tag).toStartWith(`earn:v1:${h.distributorId}:aaa`)
    expect(v.body.tag).toEndWith(`… (${forged.length} characters)`)
    expect(v.text.length).toBeLessThan(1_000)
  })

  test('a tampered tag is found but not verified; a copied tag sent by another wallet is not verified', async () => {
    // Same deposit with the MAC's last character changed: the vault ignores trailing bytes, so it still mines.
    await mintToken(chain.anvil, chain.token, wallet.address, 10n ** 6n)
    const again = await h.post(`/v2/actions/deposit/${chain.directId}`, { userAddress: wallet.address, tokenIn: chain.token, amount: '1000000', distributorId: h.distributorId })
    expect(again.status).toBe(200)
    const [approve, deposit] = again.body.transactions as Json[]
    const data = deposit!.transaction.data as string
    const last = data.slice(-2) === '30' ? '31' : '30' // ASCII '0' or '1': still a hex digit, still a well-formed tag
    const tampered = { ...deposit!.transaction, data: data.slice(0, -2) + last }
    await sendAll(wallet, [approve!])
    const receipt = await sendUnsigned(chain.anvil, wallet, tampered)
    expect(receipt.status).toBe('success')
    const r = await h.get(`/v2/actions/verify?chainId=31337&txHash=${receipt.transactionHash}`)
    expect(r.status).toBe(200)
    expect(r.body.verified).toBe(false)
    expect(r.body.metadata).toMatchObject({ distributorId: h.distributorId, actionId: again.body.actionId, opportunityId: chain.directId })
    expect(db.actions('tx_hash = ?', receipt.transactionHash)).toHaveLength(0)

    // Another wallet replays the original deposit's calldata (depositing for the user with its own tokens).
    const copier = privateKeyToAccount(generatePrivateKey())
    await setNativeBalance(chain.anvil, copier.address, 10n ** 18n)
    await mintToken(chain.anvil, chain.token, copier.address, 250n * 10n ** 6n)
    const approved = await sendUnsigned(chain.anvil, copier, { to: chain.token, data: approveData(chain.vault, 250n * 10n ** 6n), value: '0', gasLimit: '100000', chainId: 31337 })
    expect(approved.status).toBe('success')
    const copied = await sendUnsigned(chain.anvil, copier, { to: chain.vault, data: depositData, value: '0', gasLimit: '300000', chainId: 31337 })
    expect(copied.status).toBe('success')
    const c = await h.get(`/v2/actions/verify?chainId=31337&txHash=${copied.transactionHash}`)
    expect(c.body).toMatchObject({ verified: false, metadata: { actionId } })
  })

  test("the user's own wallet sending the deposit's calldata elsewhere is not verified, and nothing is recorded", async () => {
    // The calldata of a verified deposit, sent by the same wallet to other contracts: one that takes any call
    // (the token ignores no selector, so use a plain account) and the other vault, which would take the deposit.
    const elsewhere = privateKeyToAccount(generatePrivateKey()).address
    const toAccount = await sendUnsigned(chain.anvil, wallet, { to: elsewhere, data: depositData, value: '0', gasLimit: '300000', chainId: 31337 })
    expect(toAccount.status).toBe('success')
    await mintToken(chain.anvil, chain.token, wallet.address, 250n * 10n ** 6n)
    await sendUnsigned(chain.anvil, wallet, { to: chain.token, data: approveData(chain.swapVault, 250n * 10n ** 6n), value: '0', gasLimit: '100000', chainId: 31337 })
    const toOtherVault = await sendUnsigned(chain.anvil, wallet, { to: chain.swapVault, data: depositData, value: '0', gasLimit: '300000', chainId: 31337 })
    expect(toOtherVault.status).toBe('success')
    for (const sent of [toAccount, toOtherVault]) {
      const r = await h.get(`/v2/actions/verify?chainId=31337&txHash=${sent.transactionHash}`)
      expect(r.status, r.text).toBe(200)
      expect(r.body).toMatchObject({ verified: false, metadata: { actionId, opportunityId: chain.directId } })
      expect(db.actions('tx_hash = ?', sent.transactionHash)).toHaveLength(0)
    }
  })

  test('the tag on a call to the vault that deposits nothing (a zero share transfer) is not verified', async () => {
    // deposit(assets, receiver) is 4 + 64 bytes; the tag follows.
    const tagHex = depositData.slice(2 + 2 * 68)
    const data = `${encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [wallet.address, 0n] })}${tagHex}`
    const nothing = await sendUnsigned(chain.anvil, wallet, { to: chain.vault, data, value: '0', gasLimit: '100000', chainId: 31337 })
    expect(nothing.status).toBe('success')
    const r = await h.get(`/v2/actions/verify?chainId=31337&txHash=${nothing.transactionHash}`)
    expect(r.status, r.text).toBe(200)
    expect(r.body).toMatchObject({ verified: false, metadata: { actionId, opportunityId: chain.directId } })
    expect(db.actions('tx_hash = ?', nothing.transactionHash)).toHaveLength(0)
  })

  test('a withdrawal built by the API pays the user the assets of the redeemed shares', async () => {
    const shares = await balanceOf(chain.vault, wallet.address)
    const redeem = shares / 2n
    const r = await h.post(`/v2/actions/withdraw/${chain.directId}`, { userAddress: wallet.address, amount: redeem.toString(), distributorId: h.distributorId })
    expect(r.status).toBe(200)
    expect(r.body.transactions.map((t: Json) => t.type)).toEqual(['withdraw'])
    const assetsBefore = await balanceOf(chain.token, wallet.address)
    const expected = (await read(chain.vault, testVaultAbi, 'previewRedeem', [redeem])) as bigint
    const [redeemed] = await sendAll(wallet, r.body.transactions)
    // Its tag verifies, but activity lists verified deposits only.
    const v = await h.get(`/v2/actions/verify?chainId=31337&txHash=${redeemed!.transactionHash}`)
    expect(v.body).toMatchObject({ verified: true, metadata: { actionId: r.body.actionId } })
    expect(db.actions('tx_hash = ?', redeemed!.transactionHash)).toHaveLength(0)
    expect(await balanceOf(chain.token, wallet.address)).toBe(assetsBefore + expected)
    expect(await balanceOf(chain.vault, wallet.address)).toBe(shares - redeem)
    expect((await h.store.getAction(r.body.actionId))).toMatchObject({ kind: 'withdraw', amount: redeem.toString(), token: chain.vault.toLowerCase() })
  })
})

describe('a contract wallet member (ERC-1271)', () => {
  test("its deposit and withdrawal, made by the wallet inside its owner's call, verify; its owner sending the deposit directly does not", async () => {
    const owner = privateKeyToAccount(generatePrivateKey())
    await setNativeBalance(chain.anvil, owner.address, 10n ** 18n)
    const wallet = await deploySmartWallet(chain.anvil, owner.address)
    await registerContractWallet(h, wallet, owner, '31337')
    const amount = 40n * 10n ** 6n
    await mintToken(chain.anvil, chain.token, wallet, amount)
    const r = await h.post(`/v2/actions/deposit/${chain.directId}`, { userAddress: wallet, tokenIn: chain.token, amount: amount.toString(), distributorId: h.distributorId })
    expect(r.status, r.text).toBe(200)
    const [approve, deposit] = r.body.transactions as Json[]

    // The owner first sends the built deposit itself, with its own tokens: the shares go to the wallet, but the
    // vault's caller is the owner, not the member.
    await mintToken(chain.anvil, chain.token, owner.address, amount)
    expect((await sendUnsigned(chain.anvil, owner, { ...approve!.transaction })).status).toBe('success')
    const direct = await sendUnsigned(chain.anvil, owner, deposit!.transaction)
    expect(direct.status).toBe('success')
    const byOwner = await h.get(`/v2/actions/verify?chainId=31337&txHash=${direct.transactionHash}`)
    expect(byOwner.body).toMatchObject({ verified: false, metadata: { actionId: r.body.actionId } })

    // Through the wallet: the tag sits inside execute's bytes argument, followed by padding.
    const sharesBefore = await balanceOf(chain.vault, wallet)
    const approved = await sendThroughWallet(chain.anvil, owner, wallet, approve!.transaction)
    expect(approved.status).toBe('success')
    const deposited = await sendThroughWallet(chain.anvil, owner, wallet, deposit!.transaction)
    expect(deposited.status).toBe('success')
    expect(await balanceOf(chain.vault, wallet)).toBeGreaterThan(sharesBefore)
    const v = await h.get(`/v2/actions/verify?chainId=31337&txHash=${deposited.transactionHash}`)
    expect(v.status, v.text).toBe(200)
    expect(v.body).toMatchObject({ verified: true, metadata: { distributorId: h.distributorId, actionId: r.body.actionId, opportunityId: chain.directId } })
    expect(db.actions("kind = 'verify' and tx_hash = ?", deposited.transactionHash)).toHaveLength(1)
    expect(db.actions('tx_hash = ?', direct.transactionHash)).toHaveLength(0)

    const shares = await balanceOf(chain.vault, wallet)
    const w = await h.post(`/v2/actions/withdraw/${chain.directId}`, { userAddress: wallet, amount: shares.toString(), distributorId: h.distributorId })
    expect(w.status, w.text).toBe(200)
    const redeemed = await sendThroughWallet(chain.anvil, owner, wallet, (w.body.transactions as Json[])[0]!.transaction)
    expect(redeemed.status).toBe('success')
    expect(await balanceOf(chain.vault, wallet)).toBe(0n)
    const wv = await h.get(`/v2/actions/verify?chainId=31337&txHash=${redeemed.transactionHash}`)
    expect(wv.body).toMatchObject({ verified: true, metadata: { actionId: w.body.actionId } })
  })
})

describe('swap deposit', () => {
  test('tEUR is swapped into tUSD and deposited: the user gets at least the guaranteed shares', async () => {
    const wallet = await fundedMember(h, chain)
    const amountIn = 100n * 10n ** 18n
    await mintToken(chain.anvil, chain.otherToken, wallet.address, amountIn)
    const r = await h.post(`/v2/actions/deposit/${chain.swapId}`, {
      userAddress: wallet.address,
      tokenIn: chain.otherToken,
      amount: amountIn.toString(),
      distributorId: h.distributorId,
      mode: 'swap',
      slippageBps: 100,
    })
    expect(r.status).toBe(200)
    const types = (r.body.transactions as Json[]).map((t) => t.type)
    expect(types).toEqual(['approve', 'swap', 'approve', 'deposit'])
    const deposit = (r.body.transactions as Json[]).at(-1)!
    const minOut = BigInt(deposit.metadata.minAmountOut)
    expect(minOut).toBeGreaterThan(100n * 10n ** 6n) // ~110 tUSD for 100 tEUR, less slippage
    const usdBefore = await balanceOf(chain.token, wallet.address)
    const expectedShares = (await read(chain.swapVault, testVaultAbi, 'previewDeposit', [minOut])) as bigint
    await sendAll(wallet, r.body.transactions)
    expect(await balanceOf(chain.otherToken, wallet.address)).toBe(0n)
    expect(await balanceOf(chain.swapVault, wallet.address)).toBe(expectedShares)
    // What the swap paid above the guaranteed minimum stays in the wallet.
    expect(await balanceOf(chain.token, wallet.address)).toBeGreaterThanOrEqual(usdBefore)
    const verify = await h.get(`/v2/actions/verify?chainId=31337&txHash=${(await lastTxHash(wallet.address))}`)
    expect(verify.body).toMatchObject({ verified: true, metadata: { actionId: r.body.actionId, opportunityId: chain.swapId } })
    // Recorded as what reached the vault: the guaranteed tUSD, not the tEUR the build was asked for.
    const recorded = db.actions("kind = 'verify' and wallet = ?", wallet.address.toLowerCase())
    expect(recorded.map((v) => [v.token, v.amount])).toEqual([[chain.token.toLowerCase(), minOut.toString()]])
  })
})

describe('swap withdrawal', () => {
  test('shares redeemed and the tUSD they pay swapped into tEUR: the user gets at least the guaranteed tEUR', async () => {
    const wallet = await fundedMember(h, chain, 200n * 10n ** 6n)
    const deposit = await h.post(`/v2/actions/deposit/${chain.swapId}`, {
      userAddress: wallet.address,
      tokenIn: chain.token,
      amount: (200n * 10n ** 6n).toString(),
      distributorId: h.distributorId,
    })
    expect(deposit.status, deposit.text).toBe(200)
    await sendAll(wallet, deposit.body.transactions)
    const shares = await balanceOf(chain.swapVault, wallet.address)

    const r = await h.post(`/v2/actions/withdraw/${chain.swapId}`, {
      userAddress: wallet.address,
      amount: shares.toString(),
      distributorId: h.distributorId,
      tokenOut: chain.otherToken,
      slippageBps: 100,
    })
    expect(r.status, r.text).toBe(200)
    expect((r.body.transactions as Json[]).map((t) => t.type)).toEqual(['withdraw', 'approve', 'swap'])
    const swap = (r.body.transactions as Json[]).at(-1)!
    const minOut = BigInt(swap.metadata.minAmountOut)
    expect(minOut).toBeGreaterThan(170n * 10n ** 18n) // ~182 tEUR for 200 tUSD, less slippage
    await sendAll(wallet, r.body.transactions)
    expect(await balanceOf(chain.swapVault, wallet.address)).toBe(0n)
    expect(await balanceOf(chain.otherToken, wallet.address)).toBeGreaterThanOrEqual(minOut)
    expect(await h.store.getAction(r.body.actionId)).toMatchObject({ kind: 'withdraw', amount: shares.toString() })
  })
})

function approveData(spender: Address, amount: bigint): Hex {
  return ('0x095ea7b3' + spender.slice(2).toLowerCase().padStart(64, '0') + amount.toString(16).padStart(64, '0')) as Hex
}

async function lastTxHash(from: Address): Promise<Hex> {
  const block = await chain.anvil.publicClient.getBlock({ includeTransactions: true })
  const tx = block.transactions.find((t) => typeof t !== 'string' && t.from.toLowerCase() === from.toLowerCase())
  if (!tx || typeof tx === 'string') throw new Error('no transaction from the wallet in the latest block')
  return tx.hash
}

describe('verify answers', () => {
  test('a transaction without a tag is 404; an unknown chain is 400; a bad hash is 400; an unknown transaction is 404', async () => {
    const sender = privateKeyToAccount(generatePrivateKey())
    await setNativeBalance(chain.anvil, sender.address, 10n ** 18n)
    const plain = await sendUnsigned(chain.anvil, sender, { to: chain.token, data: '0x', value: '0', gasLimit: '100000', chainId: 31337 })
    const cases: [string, number, string, string][] = [
      [`chainId=31337&txHash=${plain.transactionHash}`, 404, 'NOT_FOUND', 'txHash'],
      [`chainId=0&txHash=${plain.transactionHash}`, 400, 'INVALID_ARGUMENT', 'chainId'],
      ['chainId=31337&txHash=0x1234', 400, 'INVALID_ARGUMENT', 'txHash'],
      [`chainId=31337&txHash=0x${'ab'.repeat(32)}`, 404, 'NOT_FOUND', 'txHash'],
      ['chainId=31337', 400, 'INVALID_ARGUMENT', 'txHash'],
    ]
    for (const [query, code, status, field] of cases) {
      const r = await h.get(`/v2/actions/verify?${query}`, { key: h.org.publishableKey })
      expect(r.status, query).toBe(code)
      expectEnvelope(r.body, code, status)
      expect(r.body.context, query).toHaveProperty(field)
    }
    const r = await h.get(`/v2/actions/verify?chainId=31337&txHash=${plain.transactionHash}`)
    expect(r.body.error).toBe('no attribution tag in this transaction, or it failed on chain')
  })

  test('a tag naming no action built here, or one that does not parse, is answered verified false', async () => {
    const sender = privateKeyToAccount(generatePrivateKey())
    await setNativeBalance(chain.anvil, sender.address, 10n ** 18n)
    const send = async (tag: string) => {
      // To an account without code: the call succeeds whatever its data, as a tagged transaction to a vault would.
      const receipt = await sendUnsigned(chain.anvil, sender, { to: privateKeyToAccount(generatePrivateKey()).address, data: `0x${Buffer.from(tag).toString('hex')}`, value: '0', gasLimit: '100000', chainId: 31337 })
      expect(receipt.status).toBe('success')
      return (await h.get(`/v2/actions/verify?chainId=31337&txHash=${receipt.transactionHash}`)).body
    }
    const unknownAction = crypto.randomUUID()
    const forged = `earn:v1:${h.distributorId}:${unknownAction}:${'ab'.repeat(16)}`
    expect(await send(forged)).toEqual({ tag: forged, verified: false, metadata: { distributorId: h.distributorId, actionId: unknownAction, opportunityId: null } })
    expect(await send('earn:v1:not-a-tag')).toEqual({ tag: 'earn:v1:not-a-tag', verified: false, metadata: { distributorId: null, actionId: null, opportunityId: null } })
  })
})
