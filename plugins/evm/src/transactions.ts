/**
 * Unsigned deposit and withdraw steps for ERC-4626 vaults, in signing order. Every read a build makes (allowances,
 * quotes, token names) goes through the client's batched and shared path, and gas comes from `gas.ts`, so a burst
 * of builds costs a few batched eth_calls and no per-request estimate.
 */
import { InvalidArgumentError, type BuildParameters, type UnsignedTransaction } from '@earn/core'
import type { Address } from 'viem'
import { parse } from './address.ts'
import { requirePublicClient, type EvmClient } from './client.ts'
import { allowance, tokenLabel } from './erc20.ts'
import { approveDraft, depositDraft, finish, vaultName, withdrawDraft, type BuildContext } from './steps.ts'
import { checkSlippageBps, minimumOut, quote, routerFor, swapDraft, unavailable } from './swap.ts'

export { readTag } from './readTag.ts'

export async function build(client: EvmClient, p: BuildParameters): Promise<UnsignedTransaction[]> {
  const ctx = context(client, p)
  if (p.amount <= 0n) throw new InvalidArgumentError('amount must be greater than zero', { amount: 'must be > 0' })
  if (p.kind === 'withdraw') {
    if (p.tokenOut !== undefined && parse(p.tokenOut, 'tokenOut') !== ctx.asset)
      throw new InvalidArgumentError(`tokenOut must be the vault's asset ${ctx.asset}`, {
        tokenOut: `this vault pays out only ${ctx.asset}`,
      })
    return withdraw(client, ctx, p.amount)
  }
  const tokenIn = parse(p.tokenIn, 'tokenIn')
  // Swapping the asset for itself is a direct deposit.
  if (p.mode === 'swap' && tokenIn !== ctx.asset) return swapDeposit(client, ctx, tokenIn, p.amount, p.slippageBps)
  if (tokenIn !== ctx.asset)
    throw new InvalidArgumentError(`tokenIn must be the vault's asset ${ctx.asset} for a direct deposit`, {
      tokenIn: `a direct deposit takes only ${ctx.asset}; other tokens need mode "swap"`,
    })
  return directDeposit(client, ctx, p.amount)
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
  ])
  const short = allowed < amount
  return finish(client, ctx, [
    ...(short ? [approveDraft({ token: asset, spender: ctx.vault, spenderName: vaultName(vault), amount })] : []),
    depositDraft(ctx, { assets: amount, asset, vault, standalone: !short }),
  ])
}

async function swapDeposit(
  client: EvmClient,
  ctx: BuildContext,
  tokenIn: Address,
  amount: bigint,
  slippageBps: number,
): Promise<UnsignedTransaction[]> {
  const router = routerFor(client, ctx.chainId)
  checkSlippageBps(slippageBps)
  const [quoted, routerAllowed, vaultAllowed, tokenInLabel, asset, vault] = await Promise.all([
    quote(client, ctx.chainId, router, [tokenIn, ctx.asset], amount),
    allowance(client, { chainId: ctx.chainId, token: tokenIn, owner: ctx.owner, spender: router, field: 'tokenIn' }),
    allowance(client, { chainId: ctx.chainId, token: ctx.asset, owner: ctx.owner, spender: ctx.vault, field: 'baseToken' }),
    tokenLabel(client, ctx.chainId, tokenIn),
    tokenLabel(client, ctx.chainId, ctx.asset),
    tokenLabel(client, ctx.chainId, ctx.vault),
  ])
  const minOut = minimumOut(quoted, slippageBps)
  if (minOut === 0n) throw unavailable(ctx.chainId, 'with this slippageBps the swap guarantees nothing to deposit')
  const routerShort = routerAllowed < amount
  return finish(client, ctx, [
    ...(routerShort ? [approveDraft({ token: tokenInLabel, spender: router, spenderName: 'swap router', amount })] : []),
    swapDraft(client, ctx, { router, tokenIn: tokenInLabel, asset, amountIn: amount, quoted, minOut, slippageBps, standalone: !routerShort }),
    ...(vaultAllowed < minOut
      ? [approveDraft({ token: asset, spender: ctx.vault, spenderName: vaultName(vault), amount: minOut })]
      : []),
    // The asset arrives with the swap, so the deposit cannot run on its own before the swap is mined. It deposits
    // the guaranteed minimum; whatever the swap pays above it stays in the wallet.
    depositDraft(ctx, {
      assets: minOut,
      asset,
      vault,
      standalone: false,
      metadata: { quotedAmountOut: quoted.toString(), minAmountOut: minOut.toString() },
    }),
  ])
}

async function withdraw(client: EvmClient, ctx: BuildContext, shares: bigint): Promise<UnsignedTransaction[]> {
  const [asset, vault] = await Promise.all([tokenLabel(client, ctx.chainId, ctx.asset), tokenLabel(client, ctx.chainId, ctx.vault)])
  return finish(client, ctx, [withdrawDraft(ctx, { shares, asset, vault })])
}
