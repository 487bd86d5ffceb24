/**
 * Unsigned deposit and withdraw steps for ERC-4626 vaults, in signing order. Every read a build makes (allowances,
 * the vault's limits, quotes, token names) goes through the client's batched and shared path, and gas comes from `gas.ts`, so a burst
 * of builds costs a few batched eth_calls and no per-request estimate.
 */
import { InvalidArgumentError, NATIVE_TOKEN, type BuildParameters, type UnsignedTransaction } from '@earn/core'
import type { Address } from 'viem'
import { format, parse } from './address.ts'
import { requirePublicClient, type EvmClient } from './client.ts'
import { allowance, tokenLabel } from './erc20.ts'
import { approvals, depositDraft, finish, vaultName, withdrawDraft, type BuildContext } from './steps.ts'
import { checkDepositTaken, checkRedeemTaken } from './limits.ts'
import { checkSlippageBps, nothingGuaranteed, quote, quoteSwap, routerFor, swapDraft, unavailable } from './swap.ts'

export { readTag } from './readTag.ts'

/** What a build makes, decided from the request alone (see `check`). */
type Plan =
  | { kind: 'direct' }
  | { kind: 'swap-in'; tokenIn: Address; router: Address }
  | { kind: 'withdraw' }
  | { kind: 'swap-out'; tokenOut: Address; router: Address }

/** The swap adapter trades ERC-20s on a V2 pool; the chain's own coin would need wrapping first. */
function swappable(input: string, field: 'tokenIn' | 'tokenOut'): Address {
  if (input === NATIVE_TOKEN)
    throw new InvalidArgumentError(`${field} native is not routed: the swap router trades ERC-20 tokens only`, {
      [field]: 'native is not routed; name an ERC-20 token (wrap the native coin first)',
    })
  return parse(input, field)
}

/** What a swap build is held to: the request's slippage and price impact (none: no bound). */
type SwapBounds = Pick<BuildParameters, 'slippageBps' | 'maxPriceImpactBps'>

/** A swap's slippage, refused before the chain is asked where no quote could help: 10000 guarantees nothing. */
function checkSwapSlippage(slippageBps: number): void {
  checkSlippageBps(slippageBps)
  if (slippageBps === 10_000) throw nothingGuaranteed()
}

function plan(client: EvmClient, p: BuildParameters): { ctx: BuildContext; plan: Plan } {
  const ctx = context(client, p)
  if (p.amount <= 0n) throw new InvalidArgumentError('amount must be greater than zero', { amount: 'must be > 0' })
  if (p.kind === 'withdraw') {
    // An ERC-4626 asset is always an ERC-20, so `native` is never it.
    const tokenOut = p.tokenOut === undefined ? ctx.asset : swappable(p.tokenOut, 'tokenOut')
    if (tokenOut === ctx.asset) return { ctx, plan: { kind: 'withdraw' } }
    checkSwapSlippage(p.slippageBps)
    return { ctx, plan: { kind: 'swap-out', tokenOut, router: routerFor(client, ctx.chainId, 'tokenOut') } }
  }
  if (p.mode === 'swap') {
    const tokenIn = swappable(p.tokenIn, 'tokenIn')
    // Swapping the asset for itself is a direct deposit.
    if (tokenIn === ctx.asset) return { ctx, plan: { kind: 'direct' } }
    checkSwapSlippage(p.slippageBps)
    return { ctx, plan: { kind: 'swap-in', tokenIn, router: routerFor(client, ctx.chainId, 'tokenIn') } }
  }
  // The chain's own coin is taken by no mode (a swap trades ERC-20s): "use swap" would send the client round again.
  if (p.tokenIn === NATIVE_TOKEN) swappable(p.tokenIn, 'tokenIn')
  if (parse(p.tokenIn, 'tokenIn') !== ctx.asset)
    throw new InvalidArgumentError(`tokenIn must be the vault's asset ${format(ctx.asset)} for a direct deposit`, {
      tokenIn: `a direct deposit takes only ${format(ctx.asset)}; other tokens need mode "swap"`,
    })
  return { ctx, plan: { kind: 'direct' } }
}

/** Everything `build` would refuse without reading the chain, refused the same way. */
export function check(client: EvmClient, p: BuildParameters): void {
  plan(client, p)
}

export async function build(client: EvmClient, p: BuildParameters): Promise<UnsignedTransaction[]> {
  const { ctx, plan: made } = plan(client, p)
  switch (made.kind) {
    case 'direct':
      return directDeposit(client, ctx, p.amount)
    case 'swap-in':
      return swapDeposit(client, ctx, made.tokenIn, made.router, p.amount, p)
    case 'withdraw':
      return withdraw(client, ctx, p.amount)
    case 'swap-out':
      return swapWithdraw(client, ctx, made.tokenOut, made.router, p.amount, p)
  }
}

function context(client: EvmClient, p: BuildParameters): BuildContext {
  requirePublicClient(client, p.chainId)
  if (p.opportunity.chainId !== p.chainId)
    throw new InvalidArgumentError(`the opportunity is on chain ${p.opportunity.chainId}, not ${p.chainId}`, {
      chainId: `must be the opportunity's chain ${p.opportunity.chainId}`,
    })
  return {
    chainId: p.chainId,
    owner: parse(p.owner, 'userAddress'),
    vault: parse(p.opportunity.vaultAddress, 'vaultAddress'),
    asset: parse(p.opportunity.baseToken, 'baseToken'),
    tag: p.tag,
  }
}

async function directDeposit(client: EvmClient, ctx: BuildContext, amount: bigint): Promise<UnsignedTransaction[]> {
  const [allowed, asset, vault] = await Promise.all([
    allowance(client, { chainId: ctx.chainId, token: ctx.asset, owner: ctx.owner, spender: ctx.vault, field: 'tokenIn' }),
    tokenLabel(client, ctx.chainId, ctx.asset),
    tokenLabel(client, ctx.chainId, ctx.vault),
    checkDepositTaken(client, ctx, amount),
  ])
  const approve = await approvals(client, ctx, { token: asset, spender: ctx.vault, spenderName: vaultName(vault), amount, allowed })
  return finish(client, ctx, [...approve, depositDraft(ctx, { assets: amount, asset, vault, standalone: approve.length === 0 })])
}

async function swapDeposit(
  client: EvmClient,
  ctx: BuildContext,
  tokenIn: Address,
  router: Address,
  amount: bigint,
  bounds: SwapBounds,
): Promise<UnsignedTransaction[]> {
  const [{ quoted, minOut, impact }, routerAllowed, vaultAllowed, tokenInLabel, asset, vault] = await Promise.all([
    quoteSwap(client, ctx.chainId, { router, path: [tokenIn, ctx.asset], amountIn: amount, field: 'tokenIn' }, bounds),
    allowance(client, { chainId: ctx.chainId, token: tokenIn, owner: ctx.owner, spender: router, field: 'tokenIn' }),
    allowance(client, { chainId: ctx.chainId, token: ctx.asset, owner: ctx.owner, spender: ctx.vault, field: 'baseToken' }),
    tokenLabel(client, ctx.chainId, tokenIn),
    tokenLabel(client, ctx.chainId, ctx.asset),
    tokenLabel(client, ctx.chainId, ctx.vault),
  ])
  const [, routerApprove, vaultApprove] = await Promise.all([
    checkDepositTaken(client, ctx, minOut, { swapped: true }),
    approvals(client, ctx, { token: tokenInLabel, spender: router, spenderName: 'swap router', amount, allowed: routerAllowed }),
    approvals(client, ctx, { token: asset, spender: ctx.vault, spenderName: vaultName(vault), amount: minOut, allowed: vaultAllowed }),
  ])
  return finish(client, ctx, [
    ...routerApprove,
    swapDraft(client, ctx, { router, sell: tokenInLabel, buy: asset, amountIn: amount, quoted, minOut, slippageBps: bounds.slippageBps, priceImpactBps: impact, standalone: routerApprove.length === 0 }),
    ...vaultApprove,
    // The asset arrives with the swap, so the deposit cannot run on its own before the swap is mined. It deposits
    // the guaranteed minimum; whatever the swap pays above it stays in the wallet.
    depositDraft(ctx, {
      assets: minOut,
      asset,
      vault,
      standalone: false,
      metadata: { quotedAmountOut: quoted.toString(), minAmountOut: minOut.toString() },
      after: 'swap',
    }),
  ])
}

async function withdraw(client: EvmClient, ctx: BuildContext, shares: bigint): Promise<UnsignedTransaction[]> {
  const [asset, vault] = await Promise.all([
    tokenLabel(client, ctx.chainId, ctx.asset),
    tokenLabel(client, ctx.chainId, ctx.vault),
    checkRedeemTaken(client, ctx, shares),
  ])
  return finish(client, ctx, [withdrawDraft(ctx, { shares, asset, vault })])
}

/**
 * Redeem, then sell what the shares redeem for. The vault's `previewRedeem` (read now) is what the redeem pays at
 * least on today's share price (ERC-4626), so the swap sells exactly that, and anything the redeem pays above stays
 * in the wallet as the asset. A vault whose share price falls before the redeem is mined (a loss, a fee) pays
 * less: the swap then reverts and the wallet keeps the asset, to swap on a new build (unless the wallet held enough
 * of the asset beside to make up the difference, which the swap then sells too: README). Selling less than the
 * preview to allow for that would leave part of every withdrawal unswapped. The swap cannot run before the redeem
 * is mined.
 */
async function swapWithdraw(
  client: EvmClient,
  ctx: BuildContext,
  tokenOut: Address,
  router: Address,
  shares: bigint,
  bounds: SwapBounds,
): Promise<UnsignedTransaction[]> {
  const [redeemed, routerAllowed, asset, out, vault] = await Promise.all([
    checkRedeemTaken(client, ctx, shares).catch(async (refused: unknown) => {
      // The vault refusing these shares (a wallet short of them: an OpenZeppelin vault's maxRedeem is its balance)
      // must not hide a tokenOut no pool prices, which no top-up mends and which outranks a short balance (as a
      // swap deposit's tokenIn does): a client told to top up its shares was then refused for the token (an audit).
      // A probe that could not run (the node did not answer) cannot rank them: its 503, retried, will (an audit).
      await quote(client, ctx.chainId, router, [ctx.asset, tokenOut], 1n, 'tokenOut').catch((e: unknown) => {
        if (!(e instanceof InvalidArgumentError) || 'tokenOut' in e.context) throw e
      })
      throw refused
    }),
    allowance(client, { chainId: ctx.chainId, token: ctx.asset, owner: ctx.owner, spender: router, field: 'baseToken' }),
    tokenLabel(client, ctx.chainId, ctx.asset),
    tokenLabel(client, ctx.chainId, tokenOut),
    tokenLabel(client, ctx.chainId, ctx.vault),
  ])
  if (redeemed === undefined)
    throw new InvalidArgumentError(`${format(ctx.vault)} answers no ERC-4626 previewRedeem() on chain ${ctx.chainId}`, { vaultAddress: 'not an ERC-4626 vault' })
  const { quoted, minOut, impact } = await quoteSwap(client, ctx.chainId, { router, path: [ctx.asset, tokenOut], amountIn: redeemed, field: 'tokenOut' }, bounds)
  const routerApprove = await approvals(client, ctx, { token: asset, spender: router, spenderName: 'swap router', amount: redeemed, allowed: routerAllowed })
  return finish(client, ctx, [
    withdrawDraft(ctx, { shares, asset, vault }),
    ...routerApprove,
    swapDraft(client, ctx, { router, sell: asset, buy: out, amountIn: redeemed, quoted, minOut, slippageBps: bounds.slippageBps, priceImpactBps: impact, standalone: false, after: 'redeem' }),
  ])
}
