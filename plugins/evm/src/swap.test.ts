import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { InvalidArgumentError, type UnsignedTransaction } from '@earn/core'
import { decodeFunctionData, encodeFunctionData, erc4626Abi, formatUnits, getAddress, parseUnits, stringToHex, type Hex } from 'viem'
import { createPair, deployToken, mintToken, testSwapPairAbi, testSwapRouterAbi } from '../../../test/chains/evm.ts'
import { startEarnChain, type EarnChain } from './fixtures.ts'
import { checkPriceImpact, minimumOut, priceImpactBps, SWAP_DEADLINE_SECONDS, swapRouterAbi } from './swap.ts'
import { build, readTag } from './transactions.ts'

let chain: EarnChain
beforeAll(async () => {
  chain = await startEarnChain()
})
afterAll(() => chain?.anvil.stop())

const tx = (s: UnsignedTransaction) => s.transaction as { to: string; data: Hex; gasLimit: string }

const quote = async (amountIn: bigint) =>
  (await chain.anvil.publicClient.readContract({
    address: chain.router,
    abi: testSwapRouterAbi,
    functionName: 'getAmountsOut',
    args: [amountIn, [chain.other, chain.asset]],
  }))[1]!

describe('minimumOut', () => {
  test('takes slippageBps off the quote, rounding up: never more off it than asked', () => {
    expect(minimumOut(999n, 50)).toBe(995n) // 999 · 9950 / 10000 = 994.005
    expect(minimumOut(10_000n, 0)).toBe(10_000n)
    expect(minimumOut(10_000n, 10_000)).toBe(0n)
    expect(minimumOut(3n, 3333)).toBe(3n) // 3 · 6667 / 10000 = 2.0001
    expect(minimumOut(19n, 50)).toBe(19n) // rounded down, 18: 526 bps off the quote where 50 were asked
    expect(minimumOut(10n ** 30n, 1)).toBe(9999n * 10n ** 26n)
  })

  test.each([-1, 10_001, 0.5, Number.NaN])('refuses slippageBps %p with a 400', (bps) => {
    expect(() => minimumOut(1n, bps)).toThrow(InvalidArgumentError)
  })
})

describe('priceImpactBps', () => {
  /** The pool's reserves of what is sold and what is bought. */
  const reserves = async (sell: `0x${string}`, buy: `0x${string}`) => {
    const pc = chain.anvil.publicClient
    const pair = await pc.readContract({ address: chain.router, abi: testSwapRouterAbi, functionName: 'getPair', args: [sell, buy] })
    const [r0, r1] = await pc.readContract({ address: pair, abi: testSwapPairAbi, functionName: 'getReserves' })
    const token0 = await pc.readContract({ address: pair, abi: testSwapPairAbi, functionName: 'token0' })
    return token0.toLowerCase() === sell.toLowerCase() ? { rIn: r0, rOut: r1 } : { rIn: r1, rOut: r0 }
  }

  test("is what a constant-product pool's formula says, but for rounding, either way", async () => {
    for (const [sell, buy] of [[chain.other, chain.asset], [chain.asset, chain.other]] as const) {
      const { rIn } = await reserves(sell, buy)
      // Per unit, a constant-product pool pays x·997 / (r·1000 + x·997) less for x than for nothing (the fee aside).
      for (const amountIn of [rIn / 1_000_000n, rIn / 100n, rIn / 6n, rIn, rIn * 50n]) {
        const quoted = (await chain.anvil.publicClient.readContract({ address: chain.router, abi: testSwapRouterAbi, functionName: 'getAmountsOut', args: [amountIn, [sell, buy]] }))[1]!
        const exact = Number((amountIn * 997n * 10_000n) / (rIn * 1000n + amountIn * 997n))
        const measured = await priceImpactBps(chain.client(), chain.anvil.chainId, chain.router, [sell, buy], amountIn, quoted)
        // The small trade's own impact taken out: exact, but for rounding.
        expect(Math.abs(measured! - exact)).toBeLessThanOrEqual(1)
      }
    }
  })

  test('a few units of a pool of a few: the reference, however large a part of the amount, is taken out of the figure', async () => {
    // A 0-decimal token, 10 of it against 1,000,000 tUSD: a unit is worth ~100,000 tUSD, and 2 units move the price ~17%.
    const rare = getAddress(await deployToken(chain.anvil, { symbol: 'RARE', decimals: 0 }))
    await createPair(chain.anvil, chain.router, rare, chain.asset, 10n, parseUnits('1000000', 6))
    for (const amountIn of [2n, 3n, 5n, 9n]) {
      const quoted = (await chain.anvil.publicClient.readContract({ address: chain.router, abi: testSwapRouterAbi, functionName: 'getAmountsOut', args: [amountIn, [rare, chain.asset]] }))[1]!
      const exact = Number((amountIn * 997n * 10_000n) / (10n * 1000n + amountIn * 997n))
      const measured = await priceImpactBps(chain.client(), chain.anvil.chainId, chain.router, [rare, chain.asset], amountIn, quoted)
      expect(Math.abs(measured! - exact)).toBeLessThanOrEqual(1)
    }
  })

  test('buying a token worth much a unit, whose tenth the pool pays nothing for: a half is the reference, and the bound holds', async () => {
    const rare = getAddress(await deployToken(chain.anvil, { symbol: 'RARE2', decimals: 0 }))
    await createPair(chain.anvil, chain.router, rare, chain.asset, 10n, parseUnits('1000000', 6))
    // 1,000,000 tUSD for ~4 units of a token priced at ~100,000 tUSD: a tenth buys less than one.
    const amountIn = parseUnits('1000000', 6)
    const quoted = (await chain.anvil.publicClient.readContract({ address: chain.router, abi: testSwapRouterAbi, functionName: 'getAmountsOut', args: [amountIn, [chain.asset, rare]] }))[1]!
    expect(quoted).toBe(4n)
    const measured = await priceImpactBps(chain.client(), chain.anvil.chainId, chain.router, [chain.asset, rare], amountIn, quoted)
    expect(measured).toBeGreaterThan(1000)
    expect(() => checkPriceImpact(measured, 1000)).toThrow(InvalidArgumentError)
    // At every size, however few units the quotes are, a price moved past the bound is refused (a tenth of the steps
    // here buy 2 to 4 units, where rounding alone had read some as moving nothing).
    for (let tusd = 50_000n; tusd <= 5_000_000n; tusd += 50_000n) {
      const amount = tusd * 10n ** 6n
      const q = (await chain.anvil.publicClient.readContract({ address: chain.router, abi: testSwapRouterAbi, functionName: 'getAmountsOut', args: [amount, [chain.asset, rare]] }))[1]!
      const truth = Number((amount * 997n * 10_000n) / (parseUnits('1000000', 6) * 1000n + amount * 997n))
      const impact = await priceImpactBps(chain.client(), chain.anvil.chainId, chain.router, [chain.asset, rare], amount, q)
      if (truth > 1000) expect(() => checkPriceImpact(impact, 1000), `${tusd} tUSD: ${impact} bps measured, ${truth} true`).toThrow(InvalidArgumentError)
    }
    // Past the bound only by what rounding may add, the refusal does not say "swap less" (a smaller swap reads worse: an
    // audit's 250,000 tUSD for a unit or two read 10,000 bps, truly 25): from a few units, whose band is wider than the bound
    // (a thin pool pays few at any size), it says the impact cannot be measured; from more, to swap more.
    const few = parseUnits('250000', 6)
    const fewQuoted = (await chain.anvil.publicClient.readContract({ address: chain.router, abi: testSwapRouterAbi, functionName: 'getAmountsOut', args: [few, [chain.asset, rare]] }))[1]!
    const fewImpact = await priceImpactBps(chain.client(), chain.anvil.chainId, chain.router, [chain.asset, rare], few, fewQuoted)
    expect(() => checkPriceImpact(fewImpact, 1000, fewQuoted)).toThrow(/cannot be measured within maxPriceImpactBps 1000: the pool pays \d+ units?.*raise maxPriceImpactBps/)
    expect(() => checkPriceImpact(1500, 1000, 300n)).toThrow(/cannot be measured finely enough.*swap more/)
    // A deep pool pays more units for a larger swap, which settles it: the answer names how many (a thin one cannot).
    expect(() => checkPriceImpact(111, 50, 99n)).toThrow(/the pool pays 99 units.*swap enough that the pool pays over 5051 units, where it can, or raise maxPriceImpactBps/)
    expect(() => checkPriceImpact(20, 0, 99n)).toThrow(/up to 2526 over the truth; raise maxPriceImpactBps to accept it/)
    // A figure past the bound by more than rounding can add is the pool's price moving: swap less.
    expect(() => checkPriceImpact(1500, 1000, 10n ** 9n)).toThrow(/more than maxPriceImpactBps 1000: swap less/)
    expect(() => checkPriceImpact(900, 1000, 2n)).not.toThrow()
    // Where nothing smaller is priced at all, the bound cannot be checked: refused unless any impact is accepted.
    expect(() => checkPriceImpact(undefined, 9_999)).toThrow('cannot be measured at this size')
    expect(() => checkPriceImpact(undefined, 10_000)).not.toThrow()
  })

  test("from small quotes the figure is as coarse as the routers' rounding makes it, never under the truth, over it by at most 0.5 + 250,000 / quote; an amount of 1 has none", async () => {
    const { rIn } = await reserves(chain.other, chain.asset)
    for (const amountIn of [rIn / 10n ** 9n, rIn / 10n ** 8n, rIn / 10n ** 7n]) {
      const quoted = (await chain.anvil.publicClient.readContract({ address: chain.router, abi: testSwapRouterAbi, functionName: 'getAmountsOut', args: [amountIn, [chain.other, chain.asset]] }))[1]!
      const truth = Number(amountIn * 997n * 10n ** 9n / (rIn * 1000n + amountIn * 997n)) / 10 ** 5
      const measured = await priceImpactBps(chain.client(), chain.anvil.chainId, chain.router, [chain.other, chain.asset], amountIn, quoted)
      expect(measured!).toBeGreaterThanOrEqual(truth - 0.5)
      expect(measured!).toBeLessThanOrEqual(truth + 0.5 + 250_000 / Number(quoted))
    }
    expect(await priceImpactBps(chain.client(), chain.anvil.chainId, chain.router, [chain.other, chain.asset], 1n, 1n)).toBeUndefined()
  })
})

describe('build: swap deposit', () => {
  test('approve(router), swap, approve(vault), deposit: sent in order, they deposit at least the minimum', async () => {
    const owner = await chain.user()
    const amountIn = parseUnits('0.5', 18)
    await mintToken(chain.anvil, chain.other, owner.address, amountIn)
    const quoted = await quote(amountIn)
    const tag = chain.tag()
    const now = Date.parse('2030-01-01T00:00:00Z')
    const client = chain.client()
    const steps = await build(
      { ...client, now: () => now },
      chain.deposit({ owner, amount: amountIn, tokenIn: chain.other, mode: 'swap', slippageBps: 75, tag }),
    )
    expect(steps.map((s) => s.type)).toEqual(['approve', 'swap', 'approve', 'deposit'])
    const [approveRouter, swap, approveVault, deposit] = steps as [UnsignedTransaction, UnsignedTransaction, UnsignedTransaction, UnsignedTransaction]
    const minOut = (quoted * 9925n + 9_999n) / 10_000n // rounded up

    expect(tx(approveRouter).to).toBe(chain.other.toLowerCase())
    expect(approveRouter.metadata).toMatchObject({ spender: chain.router.toLowerCase(), amount: amountIn.toString() })
    expect(tx(swap).to).toBe(chain.router.toLowerCase())
    const deadline = BigInt(now / 1000 + SWAP_DEADLINE_SECONDS)
    expect(decodeFunctionData({ abi: swapRouterAbi, data: tx(swap).data })).toEqual({
      functionName: 'swapExactTokensForTokens',
      args: [amountIn, minOut, [chain.other, chain.asset], owner.address, deadline],
    })
    expect(swap.metadata).toMatchObject({
      quotedAmountOut: quoted.toString(),
      minAmountOut: minOut.toString(),
      slippageBps: 75,
      amountIn: amountIn.toString(),
    })
    // The whole sequence is simulated once, so even the steps behind an approve are measured.
    expect(steps.map((s) => s.metadata?.gasLimitSource)).toEqual(['estimated', 'estimated', 'estimated', 'estimated'])
    expect(swap.description).toBe(`Swap 0.5 tETH for at least ${formatUnits(minOut, 6)} tUSD`)
    expect(approveVault.metadata).toMatchObject({ spender: chain.vault.toLowerCase(), amount: minOut.toString() })
    const depositCall = encodeFunctionData({ abi: erc4626Abi, functionName: 'deposit', args: [minOut, owner.address] })
    expect(tx(deposit).data).toBe(`${depositCall}${stringToHex(tag).slice(2)}`)
    expect(deposit.metadata).toMatchObject({ quotedAmountOut: quoted.toString(), minAmountOut: minOut.toString() })
    // Where the swap failed, the deposit would take tUSD the wallet already held: its description says to wait for it.
    expect(deposit.description).toEndWith('; send only once the swap has succeeded: the tUSD comes from it')

    // The deadline above is years away, so it is also valid on anvil's clock.
    const expectedShares = await chain.read.previewDeposit(minOut)
    const hashes = await chain.sendAll(owner, steps)
    expect(await chain.read.balance(chain.vault, owner.address)).toBe(expectedShares)
    expect(expectedShares).toBeGreaterThan(0n)
    // What the swap paid above the minimum stays in the wallet: the swap met its minimum.
    const surplus = await chain.read.balance(chain.asset, owner.address)
    expect(surplus + minOut).toBe(quoted)
    expect(surplus).toBeGreaterThan(0n)
    expect((await readTag(client, { chainId: chain.anvil.chainId, txHash: hashes[3]! })).tag).toBe(tag)
  })

  test('allowances already in place leave only the swap and the deposit, the swap estimated', async () => {
    const owner = await chain.user()
    const amountIn = parseUnits('0.01', 18)
    await mintToken(chain.anvil, chain.other, owner.address, amountIn)
    const first = await build(chain.client(), chain.deposit({ owner, amount: amountIn, tokenIn: chain.other, mode: 'swap' }))
    // Only the approvals: the wallet now allows both spenders enough.
    await chain.sendAll(owner, first.filter((s) => s.type === 'approve'))
    const steps = await build(chain.client(), chain.deposit({ owner, amount: amountIn, tokenIn: chain.other, mode: 'swap' }))
    expect(steps.map((s) => s.type)).toEqual(['swap', 'deposit'])
    expect(steps[0]!.metadata).toMatchObject({ gasLimitSource: 'estimated' })
    await chain.sendAll(owner, steps)
    expect(await chain.read.balance(chain.vault, owner.address)).toBeGreaterThan(0n)
  })

  test('swap mode with the asset itself is a direct deposit', async () => {
    const owner = await chain.user(parseUnits('1', 6))
    const steps = await build(chain.client(), chain.deposit({ owner, amount: parseUnits('1', 6), mode: 'swap' }))
    expect(steps.map((s) => s.type)).toEqual(['approve', 'deposit'])
  })

  test('no router on the chain, or no pool for the token, is a 400', async () => {
    const owner = await chain.user()
    const cases = [
      [chain.client({ swapRouter: false }), chain.other, /no swap router is configured for chain 31337/],
      [chain.client(), chain.lonely, /no pool/],
    ] as const
    for (const [client, tokenIn, why] of cases) {
      const e = await build(client, chain.deposit({ owner, amount: 10n ** 18n, tokenIn, mode: 'swap' })).catch((e: unknown) => e)
      expect(e).toBeInstanceOf(InvalidArgumentError)
      expect(e).toMatchObject({ status: 400, message: 'a swap is not available for this token on chain 31337' })
      expect((e as InvalidArgumentError).context.tokenIn).toMatch(why)
    }
  })

  test('a slippage that guarantees nothing is a 400 naming slippageBps; an amount the pool pays nothing for one naming amount', async () => {
    const owner = await chain.user()
    const all = chain.deposit({ owner, amount: 10n ** 18n, tokenIn: chain.other, mode: 'swap', slippageBps: 10_000 })
    await expect(build(chain.client(), all)).rejects.toMatchObject({ status: 400, context: { slippageBps: 'must be below 10000 for a swap' } })
    const dust = chain.deposit({ owner, amount: 1n, tokenIn: chain.other, mode: 'swap' })
    await expect(build(chain.client(), dust)).rejects.toMatchObject({ status: 400, message: 'amount is too small to swap: the pool pays nothing for 1', context: { amount: expect.stringContaining('too small') } })
    const bad = chain.deposit({ owner, amount: 10n ** 18n, tokenIn: chain.other, mode: 'swap', slippageBps: 20_000 })
    await expect(build(chain.client(), bad)).rejects.toMatchObject({ status: 400, context: { slippageBps: expect.any(String) } })
  })
})

describe('build: swap withdrawal', () => {
  const withdraw = (owner: { address: string }, shares: bigint, p: { tokenOut: string; slippageBps?: number; tag?: string }) => ({
    kind: 'withdraw' as const,
    chainId: chain.anvil.chainId,
    owner: owner.address.toLowerCase(),
    opportunity: chain.opportunity,
    amount: shares,
    tag: p.tag ?? chain.tag(),
    slippageBps: p.slippageBps ?? 50,
    tokenOut: p.tokenOut,
  })

  test('redeem, approve(router), swap what the redeem pays: sent in order, the wallet receives at least the minimum', async () => {
    const owner = await chain.user(parseUnits('300', 6))
    await chain.sendAll(owner, await build(chain.client(), chain.deposit({ owner, amount: parseUnits('300', 6) })))
    const shares = await chain.read.balance(chain.vault, owner.address)
    const redeemed = await chain.read.previewRedeem(shares)
    const quoted = (await chain.anvil.publicClient.readContract({
      address: chain.router,
      abi: testSwapRouterAbi,
      functionName: 'getAmountsOut',
      args: [redeemed, [chain.asset, chain.other]],
    }))[1]!
    const tag = chain.tag()
    const now = Date.parse('2030-01-01T00:00:00Z')
    const steps = await build({ ...chain.client(), now: () => now }, withdraw(owner, shares, { tokenOut: chain.other, slippageBps: 100, tag }))

    expect(steps.map((s) => s.type)).toEqual(['withdraw', 'approve', 'swap'])
    const [redeem, approve, swap] = steps as [UnsignedTransaction, UnsignedTransaction, UnsignedTransaction]
    const call = encodeFunctionData({ abi: erc4626Abi, functionName: 'redeem', args: [shares, owner.address, owner.address] })
    expect(tx(redeem).data).toBe(`${call}${stringToHex(tag).slice(2)}`)
    expect(approve.metadata).toMatchObject({ spender: chain.router.toLowerCase(), amount: redeemed.toString() })
    const minOut = (quoted * 9900n + 9_999n) / 10_000n // rounded up
    expect(decodeFunctionData({ abi: swapRouterAbi, data: tx(swap).data })).toEqual({
      functionName: 'swapExactTokensForTokens',
      args: [redeemed, minOut, [chain.asset, chain.other], owner.address, BigInt(now / 1000 + SWAP_DEADLINE_SECONDS)],
    })
    expect(swap.description).toBe(`Swap ${formatUnits(redeemed, 6)} tUSD for at least ${formatUnits(minOut, 18)} tETH; send only once the redeem has succeeded: the tUSD comes from it`)
    // Simulated as one sequence, so the swap behind the redeem is measured too.
    expect(steps.map((s) => s.metadata?.gasLimitSource)).toEqual(['estimated', 'estimated', 'estimated'])

    const hashes = await chain.sendAll(owner, steps)
    expect(await chain.read.balance(chain.vault, owner.address)).toBe(0n)
    const received = await chain.read.balance(chain.other, owner.address)
    expect(received).toBeGreaterThanOrEqual(minOut)
    expect(received).toBe(quoted)
    expect((await readTag(chain.client(), { chainId: chain.anvil.chainId, txHash: hashes[0]! })).tag).toBe(tag)
  })

  test('no pool for tokenOut is a 400 naming tokenOut; a slippage that guarantees nothing one naming slippageBps', async () => {
    const owner = await chain.user(parseUnits('5', 6))
    await chain.sendAll(owner, await build(chain.client(), chain.deposit({ owner, amount: parseUnits('5', 6) })))
    const shares = await chain.read.balance(chain.vault, owner.address)
    await expect(build(chain.client(), withdraw(owner, shares, { tokenOut: chain.lonely }))).rejects.toMatchObject({
      status: 400,
      context: { tokenOut: expect.stringContaining('no pool') },
    })
    await expect(build(chain.client(), withdraw(owner, shares, { tokenOut: chain.other, slippageBps: 10_000 }))).rejects.toMatchObject({
      status: 400,
      context: { slippageBps: 'must be below 10000 for a swap' },
    })
  })
})
