import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { InvalidAddressError, InvalidArgumentError, NotFoundError, UnavailableError, type OpportunityTarget, type UnsignedTransaction } from '@earn/core'
import { decodeFunctionData, encodeFunctionData, erc20Abi, erc4626Abi, getAddress, maxUint256, parseUnits, stringToHex, type Address, type Hex } from 'viem'
import type { PrivateKeyAccount } from 'viem/accounts'
import { closedPortUrl, deployStrictApproveToken, deployVault, mintToken, sendUnsigned } from '../../../test/chains/evm.ts'
import { connect } from './client.ts'
import { startEarnChain, type EarnChain } from './fixtures.ts'
import { DEFAULT_GAS, reusedGasLimit } from './gas.ts'
import { build, check, readTag } from './transactions.ts'

let chain: EarnChain
beforeAll(async () => {
  chain = await startEarnChain()
})
afterAll(() => chain?.anvil.stop())

type EvmTx = { to: string; data: Hex; value: string; gasLimit: string; chainId: number }
const tx = (s: UnsignedTransaction) => s.transaction as EvmTx
const lower = (a: string) => a.toLowerCase()
const approveTx = (token: Address, spender: Address, amount: bigint) => ({
  transaction: { to: token, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [spender, amount] }), value: '0', gasLimit: '100000', chainId: 31337 },
})

describe('build: direct deposit', () => {
  test('with a short allowance: approve exactly the amount, then deposit with the tag appended', async () => {
    const owner = await chain.user(parseUnits('100', 6))
    const amount = parseUnits('40', 6)
    const tag = chain.tag()
    const steps = await build(chain.client(), chain.deposit({ owner, amount, tag }))

    expect(steps.map((s) => s.type)).toEqual(['approve', 'deposit'])
    const [approve, deposit] = steps.map(tx) as [EvmTx, EvmTx]
    expect(approve).toMatchObject({ to: lower(chain.asset), value: '0', chainId: 31337 })
    expect(decodeFunctionData({ abi: erc20Abi, data: approve.data })).toEqual({
      functionName: 'approve',
      args: [chain.vault, amount],
    })
    expect(deposit).toMatchObject({ to: lower(chain.vault), value: '0', chainId: 31337 })
    const call = encodeFunctionData({ abi: erc4626Abi, functionName: 'deposit', args: [amount, owner.address] })
    expect(deposit.data).toBe(`${call}${stringToHex(tag).slice(2)}`)
    for (const t of [approve, deposit]) expect(t.gasLimit).toMatch(/^[1-9]\d*$/)
    expect(steps[0]!.description).toBe(`Approve 40 tUSD for the vault vtUSD (${chain.vault})`)
    expect(steps[1]!.description).toBe(`Deposit 40 tUSD into vault vtUSD (${chain.vault})`)
    // A fresh client measures both, simulating the deposit behind its approve.
    expect(steps[0]!.metadata).toMatchObject({ gasLimitSource: 'estimated' })
    expect(steps[1]!.metadata).toMatchObject({ gasLimitSource: 'estimated', assets: amount.toString() })

    const expectedShares = await chain.read.previewDeposit(amount)
    const [, depositHash] = await chain.sendAll(owner, steps)
    expect(await chain.read.balance(chain.vault, owner.address)).toBe(expectedShares)
    expect(await readTag(chain.client(), { chainId: chain.anvil.chainId, txHash: depositHash! })).toEqual({
      tagsOn: expect.any(Function), coinMovedInside: expect.any(Function),
      txHash: depositHash!,
      tag,
      from: lower(owner.address),
      to: lower(chain.vault),
      vaultMoves: [{ kind: 'deposit', vault: lower(chain.vault), owner: lower(owner.address), caller: lower(owner.address), shares: expectedShares, assets: amount }],
    })
  })

  test('with a sufficient allowance: the deposit alone, its gas estimated', async () => {
    const owner = await chain.user(parseUnits('10', 6))
    await chain.sendAll(owner, [
      { transaction: { to: chain.asset, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [chain.vault, maxUint256] }), value: '0', gasLimit: '100000', chainId: 31337 } },
    ])
    const steps = await build(chain.client(), chain.deposit({ owner, amount: parseUnits('10', 6) }))
    expect(steps.map((s) => s.type)).toEqual(['deposit'])
    expect(steps[0]!.metadata).toMatchObject({ gasLimitSource: 'estimated' })
    await chain.sendAll(owner, steps)
    expect(await chain.read.balance(chain.asset, owner.address)).toBe(0n)
  })

  test('an allowance one unit short still gets an approve', async () => {
    const owner = await chain.user(parseUnits('5', 6))
    const amount = parseUnits('5', 6)
    await chain.sendAll(owner, [
      { transaction: { to: chain.asset, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [chain.vault, amount - 1n] }), value: '0', gasLimit: '100000', chainId: 31337 } },
    ])
    expect((await build(chain.client(), chain.deposit({ owner, amount }))).map((s) => s.type)).toEqual(['approve', 'deposit'])
  })

  test('a non-zero allowance short of the amount is raised by one approve where the token allows it', async () => {
    const owner = await chain.user(parseUnits('5', 6))
    await chain.sendAll(owner, [approveTx(chain.asset, chain.vault, 1n)])
    const steps = await build(chain.client(), chain.deposit({ owner, amount: parseUnits('5', 6) }))
    expect(steps.map((s) => s.type)).toEqual(['approve', 'deposit'])
    await chain.sendAll(owner, steps)
    expect(await chain.read.balance(chain.vault, owner.address)).toBeGreaterThan(0n)
  })

  describe('a token that changes a non-zero allowance only to zero (USDT)', () => {
    let strict: Address
    let opportunity: OpportunityTarget
    beforeAll(async () => {
      strict = getAddress(await deployStrictApproveToken(chain.anvil))
      const vault = getAddress(await deployVault(chain.anvil, strict, { symbol: 'vsUSD' }))
      opportunity = { ...chain.opportunity, vaultAddress: lower(vault), baseToken: lower(strict), receiptToken: lower(vault) }
    })
    const funded = async (amount: bigint) => {
      const owner = await chain.user()
      await mintToken(chain.anvil, strict, owner.address, amount)
      return owner
    }
    const deposit = (owner: PrivateKeyAccount, amount: bigint) => ({ ...chain.deposit({ owner, amount, tokenIn: strict }), opportunity })

    test('a short non-zero allowance is reset to zero first, and the three steps deposit on chain', async () => {
      const amount = parseUnits('7', 6)
      const owner = await funded(amount)
      const vault = opportunity.vaultAddress as Address
      await chain.sendAll(owner, [approveTx(strict, vault, 2n)])
      // The token is as strict as USDT: the one approve a build used to give reverts from here.
      expect(await sendUnsigned(chain.anvil, owner, approveTx(strict, vault, amount).transaction).then((r) => r.status)).toBe('reverted')

      const steps = await build(chain.client(), deposit(owner, amount))
      expect(steps.map((s) => s.type)).toEqual(['approve', 'approve', 'deposit'])
      const [reset, approve] = steps.map(tx) as [EvmTx, EvmTx]
      expect(decodeFunctionData({ abi: erc20Abi, data: reset.data })).toEqual({ functionName: 'approve', args: [getAddress(vault), 0n] })
      expect(decodeFunctionData({ abi: erc20Abi, data: approve.data })).toEqual({ functionName: 'approve', args: [getAddress(vault), amount] })
      expect(steps[0]!.description).toBe(`Reset the allowance of the vault vsUSD (${getAddress(vault)}) for sUSD to 0 (this token changes a non-zero allowance only from zero)`)
      expect(steps[0]!.metadata).toMatchObject({ amount: '0' })
      // Measured in one simulated sequence, so the approve behind the reset has a measure too.
      expect(steps.map((s) => s.metadata?.gasLimitSource)).toEqual(['estimated', 'estimated', 'estimated'])

      await chain.sendAll(owner, steps)
      expect(await chain.read.balance(strict, owner.address)).toBe(0n)
      expect(await chain.read.balance(vault, owner.address)).toBeGreaterThan(0n)
    })

    test('a zero or sufficient allowance needs no reset', async () => {
      const amount = parseUnits('3', 6)
      const owner = await funded(amount)
      const client = chain.client()
      expect((await build(client, deposit(owner, amount))).map((s) => s.type)).toEqual(['approve', 'deposit'])
      await chain.sendAll(owner, [approveTx(strict, opportunity.vaultAddress as Address, amount)])
      expect((await build(client, deposit(owner, amount))).map((s) => s.type)).toEqual(['deposit'])
    })
  })

  test("a measure taken for a wallet with shares carries a fresh wallet's deposit, once per opportunity", async () => {
    // A wallet that already holds shares writes no fresh storage slots: the cheapest deposit there is.
    const veteran = await chain.user(parseUnits('20', 6))
    await chain.sendAll(veteran, await build(chain.client(), chain.deposit({ owner: veteran, amount: parseUnits('10', 6) })))
    await chain.sendAll(veteran, [
      { transaction: { to: chain.asset, data: encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [chain.vault, maxUint256] }), value: '0', gasLimit: '100000', chainId: 31337 } },
    ])
    const client = chain.client()
    // Of the amount the fresh wallet deposits: a measure serves builds of at most its amount.
    const measuredStep = (await build(client, chain.deposit({ owner: veteran, amount: parseUnits('3', 6) })))[0]!
    expect(measuredStep.metadata).toMatchObject({ gasLimitSource: 'estimated' })

    const fresh = await chain.user(parseUnits('3', 6))
    const steps = await build(client, chain.deposit({ owner: fresh, amount: parseUnits('3', 6) }))
    expect(steps.map((s) => [s.type, s.metadata?.gasLimitSource])).toEqual([
      ['approve', 'estimated'],
      ['deposit', 'measured-once'],
    ])
    expect(tx(steps[1]!).gasLimit).toBe(tx(measuredStep).gasLimit)
    const measured = [...client.state.gasMeasured.entries()].find(([k]) => k.includes('|deposit|'))![1]!.gas
    // The measure's limit, or the default where that is more (a measure covers the state it was taken in).
    const reused = reusedGasLimit('deposit', measured)
    expect(tx(steps[1]!).gasLimit).toBe((reused > DEFAULT_GAS.deposit ? reused : DEFAULT_GAS.deposit).toString())
    const [, hash] = await chain.sendAll(fresh, steps)
    expect(await chain.read.balance(chain.vault, fresh.address)).toBeGreaterThan(0n)
    // The fresh wallet's deposit did cost more than the veteran's measure: the headroom is what carried it.
    const used = (await chain.anvil.publicClient.getTransactionReceipt({ hash: hash! })).gasUsed
    expect(used).toBeGreaterThan(measured)
    expect(used).toBeLessThan(BigInt(tx(steps[1]!).gasLimit))
  })

  test("a measure taken while the vault held others' funds carries a first deposit after it was emptied", async () => {
    // Its own vault: this test empties it.
    const vault = getAddress(await deployVault(chain.anvil, chain.asset))
    const opportunity = { ...chain.opportunity, vaultAddress: lower(vault), receiptToken: lower(vault) }
    const deposit = (owner: PrivateKeyAccount, amount: bigint) => ({ ...chain.deposit({ owner, amount }), opportunity })
    const redeemAll = async (owner: PrivateKeyAccount) => {
      const shares = await chain.read.balance(vault, owner.address)
      const data = encodeFunctionData({ abi: erc4626Abi, functionName: 'redeem', args: [shares, owner.address, owner.address] })
      await chain.sendAll(owner, [{ transaction: { to: vault, data, value: '0', gasLimit: '200000', chainId: 31337 } }])
    }
    const other = await chain.user(parseUnits('10', 6))
    await chain.sendAll(other, await build(chain.client(), deposit(other, parseUnits('10', 6))))
    const veteran = await chain.user(parseUnits('20', 6))
    await chain.sendAll(veteran, await build(chain.client(), deposit(veteran, parseUnits('10', 6))))
    // The cheapest deposit there is measures the client's limit: every slot it writes is already set.
    const client = chain.client()
    const measuredSteps = await build(client, deposit(veteran, parseUnits('10', 6)))
    expect(measuredSteps.at(-1)!.metadata).toMatchObject({ gasLimitSource: 'estimated' })
    await chain.sendAll(veteran, measuredSteps)
    await redeemAll(veteran)
    await redeemAll(other)
    expect(await chain.anvil.publicClient.readContract({ address: vault, abi: erc4626Abi, functionName: 'totalSupply' })).toBe(0n)

    // Now the dearest deposit there is: shares, supply and the vault's balance all written from zero.
    const first = await chain.user(parseUnits('10', 6))
    const steps = await build(client, deposit(first, parseUnits('10', 6)))
    expect(steps.at(-1)!.metadata).toMatchObject({ gasLimitSource: 'measured-once' })
    const [, hash] = await chain.sendAll(first, steps)
    expect(await chain.read.balance(vault, first.address)).toBeGreaterThan(0n)
    const used = (await chain.anvil.publicClient.getTransactionReceipt({ hash: hash! })).gasUsed
    expect(used).toBeLessThan(BigInt(tx(steps.at(-1)!).gasLimit))
  })

  test('tokenIn other than the asset is a 400 naming tokenIn in direct mode', async () => {
    const owner = await chain.user()
    const e = await build(chain.client(), chain.deposit({ owner, amount: 1n, tokenIn: chain.other })).catch((e: unknown) => e)
    expect(e).toBeInstanceOf(InvalidArgumentError)
    expect(e).toMatchObject({ status: 400, context: { tokenIn: expect.stringContaining('swap') } })
  })

  test('a zero amount, a malformed address or an unknown chain is a 400', async () => {
    const owner = await chain.user()
    const p = chain.deposit({ owner, amount: 0n })
    await expect(build(chain.client(), p)).rejects.toMatchObject({ status: 400, context: { amount: expect.any(String) } })
    await expect(build(chain.client(), { ...p, amount: 1n, tokenIn: 'usdc' })).rejects.toBeInstanceOf(InvalidAddressError)
    await expect(build(chain.client(), { ...p, amount: 1n, chainId: '8453' })).rejects.toMatchObject({
      status: 400,
      context: { chainId: expect.stringContaining('8453') },
    })
  })

  test('a malformed tag is our bug, never sent to a wallet', async () => {
    const owner = await chain.user()
    await expect(build(chain.client(), chain.deposit({ owner, amount: 1n, tag: 'earn:v1:has space' }))).rejects.toMatchObject({
      status: 500,
    })
  })
})

describe('build: withdraw', () => {
  test('redeem(shares, owner, owner) with the tag; the wallet receives previewRedeem(shares)', async () => {
    const owner = await chain.user(parseUnits('50', 6))
    await chain.sendAll(owner, await build(chain.client(), chain.deposit({ owner, amount: parseUnits('50', 6) })))
    const shares = (await chain.read.balance(chain.vault, owner.address)) / 2n
    const tag = chain.tag()
    const steps = await build(chain.client(), {
      kind: 'withdraw',
      chainId: chain.anvil.chainId,
      owner: lower(owner.address),
      opportunity: chain.opportunity,
      amount: shares,
      tag,
      slippageBps: 50,
      tokenOut: chain.asset,
    })
    expect(steps.map((s) => s.type)).toEqual(['withdraw'])
    const withdraw = tx(steps[0]!)
    expect(withdraw.to).toBe(lower(chain.vault))
    const call = encodeFunctionData({ abi: erc4626Abi, functionName: 'redeem', args: [shares, owner.address, owner.address] })
    expect(withdraw.data).toBe(`${call}${stringToHex(tag).slice(2)}`)
    expect(steps[0]!.description).toBe(`Redeem 25 vtUSD from vault vtUSD (${chain.vault}) for tUSD`)
    expect(steps[0]!.metadata).toMatchObject({ gasLimitSource: 'estimated', shares: shares.toString() })

    const before = await chain.read.balance(chain.asset, owner.address)
    const expected = await chain.read.previewRedeem(shares)
    const [hash] = await chain.sendAll(owner, steps)
    expect((await chain.read.balance(chain.asset, owner.address)) - before).toBe(expected)
    expect((await readTag(chain.client(), { chainId: chain.anvil.chainId, txHash: hash! })).tag).toBe(tag)
  })

  test('a tokenOut other than the asset needs a swap router, and the native coin is never routed: 400s naming tokenOut', async () => {
    const owner = await chain.user()
    const withdraw = (tokenOut: string) => ({
      kind: 'withdraw' as const,
      chainId: chain.anvil.chainId,
      owner: lower(owner.address),
      opportunity: chain.opportunity,
      amount: 1n,
      tag: chain.tag(),
      slippageBps: 50,
      tokenOut,
    })
    const cases = [
      [chain.client({ swapRouter: false }), chain.other, /no swap router is configured for chain 31337/],
      [chain.client(), 'native', /native is not routed/],
    ] as const
    for (const [client, tokenOut, why] of cases) {
      const e = await build(client, withdraw(tokenOut)).catch((e: unknown) => e)
      expect(e).toBeInstanceOf(InvalidArgumentError)
      expect((e as InvalidArgumentError).context.tokenOut).toMatch(why)
    }
  })
})

describe('check: what a build refuses without the chain', () => {
  // A client whose RPC port is closed: any read would be a 503, so a 400 here was decided without one.
  const offline = async () => connect({ EVM_RPC_URLS: `31337=${await closedPortUrl()}` })
  const refused = (f: () => void) => {
    try {
      f()
    } catch (e) {
      return e
    }
    throw new Error('check accepted the request')
  }

  test('direct deposit of another token, a swap of the native coin, a withdrawal into another token without a router', async () => {
    const owner = await chain.user()
    const client = await offline()
    const direct = refused(() => check(client, chain.deposit({ owner, amount: 1n, tokenIn: chain.other })))
    expect(direct).toMatchObject({ status: 400, context: { tokenIn: expect.stringContaining('other tokens need mode "swap"') } })
    const native = refused(() => check(client, { ...chain.deposit({ owner, amount: 1n, mode: 'swap' }), tokenIn: 'native' }))
    expect(native).toMatchObject({ status: 400, context: { tokenIn: expect.stringContaining('native is not routed') } })
    // Direct too: no mode takes the coin, so the answer does not send the client to swap mode.
    const nativeDirect = refused(() => check(client, { ...chain.deposit({ owner, amount: 1n }), tokenIn: 'native' }))
    expect(nativeDirect).toMatchObject({ status: 400, context: { tokenIn: 'native is not routed; name an ERC-20 token (wrap the native coin first)' } })
    const out = refused(() =>
      check(client, { kind: 'withdraw', chainId: '31337', owner: lower(owner.address), opportunity: chain.opportunity, amount: 1n, tag: chain.tag(), slippageBps: 50, tokenOut: chain.other }),
    )
    expect(out).toMatchObject({ status: 400, context: { tokenOut: expect.stringContaining('no swap router') } })
    const zero = refused(() => check(client, chain.deposit({ owner, amount: 0n })))
    expect(zero).toMatchObject({ status: 400, context: { amount: expect.any(String) } })
  })

  test('accepts what it can build, without asking the chain', async () => {
    const owner = await chain.user()
    const client = await offline()
    expect(() => check(client, chain.deposit({ owner, amount: 1n }))).not.toThrow()
  })
})

describe('readTag', () => {
  test('returns a tampered tag as found: judging it is the MAC check', async () => {
    const owner = await chain.user(parseUnits('2', 6))
    const tag = chain.tag()
    const steps = await build(chain.client(), chain.deposit({ owner, amount: parseUnits('2', 6), tag }))
    const deposit = tx(steps[1]!)
    const forged = { ...deposit, data: `${deposit.data}${stringToHex(':forged').slice(2)}` as Hex }
    await chain.sendAll(owner, [steps[0]!])
    const receipt = await sendUnsigned(chain.anvil, owner, forged)
    expect(receipt.status).toBe('success')
    expect(await readTag(chain.client(), { chainId: chain.anvil.chainId, txHash: receipt.transactionHash })).toEqual({
      tagsOn: expect.any(Function), coinMovedInside: expect.any(Function),
      txHash: receipt.transactionHash,
      tag: `${tag}:forged`,
      from: lower(owner.address),
      to: lower(chain.vault),
      vaultMoves: [{ kind: 'deposit', vault: lower(chain.vault), owner: lower(owner.address), caller: lower(owner.address), shares: await chain.read.balance(chain.vault, owner.address), assets: parseUnits('2', 6) }],
    })
  })

  test('an approve carries no tag', async () => {
    const owner = await chain.user(1n)
    const [approve] = await build(chain.client(), chain.deposit({ owner, amount: 1n }))
    const [hash] = await chain.sendAll(owner, [approve!])
    expect(await readTag(chain.client(), { chainId: chain.anvil.chainId, txHash: hash! })).toEqual({
      tagsOn: expect.any(Function), coinMovedInside: expect.any(Function),
      txHash: hash!,
      tag: null,
      from: lower(owner.address),
      to: lower(chain.asset),
      vaultMoves: [],
    })
  })

  test('a reverted deposit attributes nothing: its tag is not reported', async () => {
    const owner = await chain.user(parseUnits('1', 6))
    const steps = await build(chain.client(), chain.deposit({ owner, amount: parseUnits('1', 6) }))
    // The deposit without its approve reverts on chain.
    const receipt = await sendUnsigned(chain.anvil, owner, steps[1]!.transaction)
    expect(receipt.status).toBe('reverted')
    expect(await readTag(chain.client(), { chainId: chain.anvil.chainId, txHash: receipt.transactionHash })).toEqual({
      tagsOn: expect.any(Function), coinMovedInside: expect.any(Function),
      txHash: receipt.transactionHash,
      tag: null,
      from: lower(owner.address),
      to: lower(chain.vault),
      vaultMoves: [],
    })
  })

  test('an unknown hash is a 404, a malformed one a 400, a chain that is down a 503', async () => {
    const chainId = chain.anvil.chainId
    const unknown = `0x${'ab'.repeat(32)}`
    const missing = await readTag(chain.client(), { chainId, txHash: unknown }).catch((e: unknown) => e)
    expect(missing).toBeInstanceOf(NotFoundError)
    expect(missing).toMatchObject({ status: 404, context: { txHash: `no transaction ${unknown} on chain ${chainId}` } })
    for (const txHash of ['0x1234', 'ab'.repeat(32), `0x${'zz'.repeat(32)}`]) {
      const bad = await readTag(chain.client(), { chainId, txHash }).catch((e: unknown) => e)
      expect(bad).toBeInstanceOf(InvalidArgumentError)
      expect(bad).toMatchObject({ context: { txHash: expect.any(String) } })
    }
    const down = connect({ EVM_RPC_URLS: `${chainId}=${await closedPortUrl()}` })
    await expect(readTag(down, { chainId, txHash: unknown })).rejects.toBeInstanceOf(UnavailableError)
  })

  test('a transaction sent but not mined yet is a 404 that says so', async () => {
    const owner = await chain.user()
    await chain.anvil.testClient.setAutomine(false)
    try {
      const hash = await chain.anvil.walletClient.sendTransaction({ account: owner, to: owner.address, value: 1n })
      await expect(readTag(chain.client(), { chainId: chain.anvil.chainId, txHash: hash })).rejects.toMatchObject({
        status: 404,
        context: { txHash: expect.stringContaining('not mined yet') },
      })
    } finally {
      await chain.anvil.testClient.setAutomine(true)
    }
  })
})
