/**
 * The swap adapter: a Uniswap-V2-style router (`getAmountsOut`, `swapExactTokensForTokens`), configured per chain
 * by `EVM_SWAP_ROUTERS`. A swap deposit trades the deposit token for the vault's asset on one pool, then deposits the
 * minimum the trade guarantees; a swap withdrawal redeems, then trades the asset for `tokenOut`.
 */
import { InvalidArgumentError } from '@earn/core'
import { encodeFunctionData, parseAbi, type Address } from 'viem'
import { format } from './address.ts'
import { requirePublicClient, type EvmClient } from './client.ts'
import { describeAmount, type TokenLabel } from './erc20.ts'
import { ask } from './rpc.ts'
import { shareUnsent } from './shared.ts'
import { afterNote, type BuildContext, type Draft } from './steps.ts'

export const swapRouterAbi = parseAbi([
  'function getAmountsOut(uint256 amountIn, address[] path) view returns (uint256[] amounts)',
  'function swapExactTokensForTokens(uint256 amountIn, uint256 amountOutMin, address[] path, address to, uint256 deadline) returns (uint256[] amounts)',
])

/** How long a signed swap stays valid: time to review and sign, short enough that a stale price cannot fill. */
export const SWAP_DEADLINE_SECONDS = 1200

const BPS = 10_000n

/** The side of the trade the request names: the deposit's `tokenIn` or the withdrawal's `tokenOut`. */
export type SwapField = 'tokenIn' | 'tokenOut'

/** The 400 for a token a swap cannot take; `why` goes in the context under the request's field. */
export const unavailable = (chainId: string, why: string, field: SwapField) =>
  new InvalidArgumentError(`a swap is not available for this token on chain ${chainId}`, { [field]: why })

/** The router for the chain, or the 400 for a chain where swap mode has none. */
export function routerFor(client: EvmClient, chainId: string, field: SwapField): Address {
  const router = client.swapRouter(chainId)
  if (!router) throw unavailable(chainId, `no swap router is configured for chain ${chainId}`, field)
  return router
}

/** What the router pays along `path` for `amount` now, undefined where it reverts; identical asks in flight share one read. */
function amountsOut(client: EvmClient, chainId: string, router: Address, path: [Address, Address], amount: bigint): Promise<readonly bigint[] | undefined> {
  const publicClient = requirePublicClient(client, chainId)
  return shareUnsent(client, chainId, publicClient, `${chainId}|quote|${router}|${path.join('>')}|${amount}`, () =>
    ask<readonly bigint[] | undefined>(
      chainId,
      () => publicClient.readContract({ address: router, abi: swapRouterAbi, functionName: 'getAmountsOut', args: [amount, path] }),
      () => undefined,
    ),
  )
}

/**
 * What the router pays for `amountIn` now. The router reverts for a pair it has no pool for, and also for an amount
 * its arithmetic overflows on (a uint256 product of amount and reserves): both are 400s, told apart by asking the
 * price of one unit, on the refusal's path only.
 */
export async function quote(
  client: EvmClient,
  chainId: string,
  router: Address,
  path: [Address, Address],
  amountIn: bigint,
  field: SwapField,
): Promise<bigint> {
  const amounts = await amountsOut(client, chainId, router, path, amountIn)
  if (amounts === undefined) {
    if (amountIn > 1n && (await amountsOut(client, chainId, router, path, 1n)) !== undefined)
      throw new InvalidArgumentError(`amount is too large to swap: the swap router cannot price ${amountIn} of ${format(path[0])}`, {
        amount: 'too large for the pool to price; swap less',
      })
    throw unavailable(chainId, `the swap router cannot price ${format(path[0])} in ${format(path[1])} (no pool, or an empty one)`, field)
  }
  const out = amounts.at(-1) ?? 0n
  if (out === 0n)
    throw new InvalidArgumentError(`amount is too small to swap: the pool pays nothing for ${amountIn}`, { amount: 'too small to swap; swap more' })
  return out
}

/**
 * How far the trade moves the pool's price against the wallet, in basis points (the pool's fee aside), from two
 * quotes of the same router: the amount's, and a tenth of it's (so any router of this interface will do, and the fee,
 * paid by both, cancels out). Per unit, a constant-product pool pays a trade of x p₀/(1 + kx); a tenth s is paid
 * out_s, the amount a paid q, and t = (out_s·a − q·s) / (out_s·(a − s)) is then exactly the amount's impact
 * kx/(1 + kx) at x = a, the smaller trade's own impact taken out (an audit: comparing per-unit prices alone, with a
 * reference of half the amount, all there is for 2 units, had halved it). A tenth, not less: the exact formula
 * needs no small reference, and the larger its quote, the less the routers' rounding down of both quotes weighs: the
 * figure is never more than half a basis point under the truth, and at most 0.5 + 250,000 / q over it (a basis
 * point from quotes of 500,000 units; coarse, and cautious, for a token worth much a unit). It leaves with the amount's
 * quote, in its batch; where the pool pays nothing for a tenth, a half is asked. Undefined where nothing smaller can
 * be priced (an amount of 1, or a half the pool pays nothing for). `quoted` may still be on its way.
 */
export async function priceImpactBps(
  client: EvmClient,
  chainId: string,
  router: Address,
  path: [Address, Address],
  amountIn: bigint,
  quoted: bigint | Promise<bigint>,
): Promise<number | undefined> {
  const paidFor = async (part: bigint) => (part > 0n && part < amountIn ? ((await amountsOut(client, chainId, router, path, part))?.at(-1) ?? 0n) : 0n)
  let small = amountIn / 10n > 0n ? amountIn / 10n : 1n
  let out = await paidFor(small)
  // A tenth paid nothing: a pool whose output token is worth that much a unit is where the impact matters most (an
  // audit: 1,000,000 tUSD sold for 4 units of a 0-decimal token worth 100,000 each, the bound skipped).
  if (out === 0n && amountIn / 2n > small) out = await paidFor((small = amountIn / 2n))
  const paid = await quoted
  if (out === 0n) return undefined
  // The reference as it may have been before the router rounded it down (t grows with it), so the figure is never
  // under the truth by more than its own rounding: from quotes of a few units (a token worth much a unit) the
  // rounded one read as 0 where the price moved 46% (an audit).
  const reference = out + 1n
  const short = reference * amountIn - paid * small
  // A pool paying as much per unit for more, or more (no constant-product pool does), moves nothing against the wallet.
  if (short <= 0n) return 0
  const whole = reference * (amountIn - small)
  const bps = (short * BPS + whole / 2n) / whole
  return Number(bps > BPS ? BPS : bps)
}

/**
 * The 400 for a swap moving the price further than the request accepts, naming both ways out; and for one whose
 * impact could not be measured, unless the request accepts any (a bound that cannot be checked is not met). Where the
 * figure is past the bound only by what the routers' rounding may add to it (0.5 + 250,000 / quote bps, a quote of a
 * few units of a token worth much a unit), it cannot tell: a smaller swap would read worse, and the answer says to
 * swap more (an audit: 250,000 tUSD read as 10,000 bps, truly 25, told "swap less").
 */
export function checkPriceImpact(impactBps: number | undefined, maxPriceImpactBps: number, quoted?: bigint): void {
  if (impactBps === undefined && maxPriceImpactBps < Number(BPS))
    throw new InvalidArgumentError(
      "the swap's price impact cannot be measured at this size: the pool pays nothing for a part of the amount; swap more, or set maxPriceImpactBps 10000 to accept it unmeasured",
      { amount: 'too small to measure its price impact', maxPriceImpactBps: 'set 10000 to accept an unmeasured impact' },
    )
  if (impactBps === undefined || impactBps <= maxPriceImpactBps) return
  const rounding = quoted === undefined || quoted === 0n ? 0 : 0.5 + 250_000 / Number(quoted)
  // The band wider than the bound itself: only a quote of many more units settles it, which a deep pool pays for a
  // larger swap and a thin one at no size (audits: each advice alone was wrong for the other pool).
  if (impactBps - rounding <= maxPriceImpactBps && rounding >= maxPriceImpactBps)
    throw new InvalidArgumentError(
      `the swap's price impact cannot be measured within maxPriceImpactBps ${maxPriceImpactBps}: the pool pays ${quoted} unit${quoted === 1n ? '' : 's'}, from which it reads ${impactBps} bps, up to ${Math.ceil(rounding)} over the truth; ${maxPriceImpactBps >= 1 ? `swap enough that the pool pays over ${Math.ceil(250_000 / (maxPriceImpactBps - 0.5))} units, where it can, or ` : ''}raise maxPriceImpactBps to accept it`,
      { amount: `pays too few units (${quoted}) to measure its price impact`, maxPriceImpactBps: `${maxPriceImpactBps} is less than the swap's ${impactBps} as read` },
    )
  if (impactBps - rounding <= maxPriceImpactBps)
    throw new InvalidArgumentError(
      `the swap's price impact cannot be measured finely enough at this size: it reads ${impactBps} bps from a quote of ${quoted} units, which may be up to ${Math.ceil(rounding)} bps over the truth, past maxPriceImpactBps ${maxPriceImpactBps}; swap more (the figure sharpens), or raise maxPriceImpactBps to accept it`,
      { amount: `too small to measure its price impact within ${maxPriceImpactBps} bps; swap more`, maxPriceImpactBps: `${maxPriceImpactBps} is less than the swap's ${impactBps} as read` },
    )
  throw new InvalidArgumentError(
    `the swap would move the pool's price ${impactBps} bps against the wallet, more than maxPriceImpactBps ${maxPriceImpactBps}: swap less, or raise maxPriceImpactBps to accept it`,
    { amount: `moves the price ${impactBps} bps; swap less`, maxPriceImpactBps: `${maxPriceImpactBps} is less than the swap's ${impactBps}` },
  )
}

/**
 * A swap's quote, its price impact (measured beside it) and the least it may pay: refused where that guarantees
 * nothing, or where the price moves past the request's bound (none: no bound).
 */
export async function quoteSwap(
  client: EvmClient,
  chainId: string,
  trade: { router: Address; path: [Address, Address]; amountIn: bigint; field: SwapField },
  bounds: { slippageBps: number; maxPriceImpactBps?: number },
): Promise<{ quoted: bigint; minOut: bigint; impact: number | undefined }> {
  const { router, path, amountIn } = trade
  const quoting = quote(client, chainId, router, path, amountIn, trade.field)
  const [quoted, impact] = await Promise.all([quoting, priceImpactBps(client, chainId, router, path, amountIn, quoting)])
  const minOut = minimumOut(quoted, bounds.slippageBps)
  if (minOut === 0n) throw nothingGuaranteed()
  checkPriceImpact(impact, bounds.maxPriceImpactBps ?? Number(BPS), quoted)
  return { quoted, minOut, impact }
}

/**
 * The 400 for a swap whose guaranteed output is 0: only a slippage of 100% gives one (the minimum is rounded up, and
 * a pool paying nothing is refused before it).
 */
export function nothingGuaranteed(): InvalidArgumentError {
  return new InvalidArgumentError('slippageBps 10000 guarantees nothing from the swap: its minimum output would be 0', { slippageBps: 'must be below 10000 for a swap' })
}

export function checkSlippageBps(slippageBps: number): void {
  if (!Number.isInteger(slippageBps) || slippageBps < 0 || slippageBps > 10_000)
    throw new InvalidArgumentError('slippageBps must be an integer from 0 to 10000', { slippageBps: 'must be an integer 0..10000' })
}

/**
 * The least the swap may pay: the quote less `slippageBps`, rounded up, never more than the quote. Rounded down, a quote
 * of a few units of a token worth much a unit had its minimum a whole unit lower: 18 where 19 was quoted is 526 bps
 * where 50 were asked (an audit).
 */
export function minimumOut(quoted: bigint, slippageBps: number): bigint {
  checkSlippageBps(slippageBps)
  return (quoted * (BPS - BigInt(slippageBps)) + BPS - 1n) / BPS
}

export interface SwapStepParameters {
  router: Address
  /** The token paid in. */
  sell: TokenLabel
  /** The token received. */
  buy: TokenLabel
  amountIn: bigint
  quoted: bigint
  minOut: bigint
  slippageBps: number
  /** See `priceImpactBps`; undefined where it could not be measured. */
  priceImpactBps: number | undefined
  /** False when the router's approval must be mined first. */
  standalone: boolean
  /** The earlier step whose output it sells (a redeem), said in its description (see `afterNote`). */
  after?: string
}

export function swapDraft(client: EvmClient, ctx: BuildContext, p: SwapStepParameters): Draft {
  const path = [p.sell.address, p.buy.address] as const
  const deadline = BigInt(Math.floor(client.now() / 1000) + SWAP_DEADLINE_SECONDS)
  return {
    type: 'swap',
    step: 'swap',
    subject: `${p.router}|${path.join('>')}`,
    to: p.router,
    data: encodeFunctionData({
      abi: swapRouterAbi,
      functionName: 'swapExactTokensForTokens',
      args: [p.amountIn, p.minOut, [...path], ctx.owner, deadline],
    }),
    // No amount: a constant-product pair's swap costs the same gas whatever it trades (a swap-out sells what the
    // redeem pays, which grows as the vault earns, and every build had measured again).
    standalone: p.standalone,
    description: `Swap ${describeAmount(p.amountIn, p.sell)} for at least ${describeAmount(p.minOut, p.buy)}${afterNote(p.after, p.sell)}`,
    metadata: {
      router: p.router,
      path: [...path],
      amountIn: p.amountIn.toString(),
      quotedAmountOut: p.quoted.toString(),
      minAmountOut: p.minOut.toString(),
      slippageBps: p.slippageBps,
      ...(p.priceImpactBps === undefined ? {} : { priceImpactBps: p.priceImpactBps }),
      deadline: deadline.toString(),
    },
  }
}
