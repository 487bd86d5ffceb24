/**
 * The unsigned steps a build returns, in the API's EVM form `{to, data, value, gasLimit, chainId}` (strings, chain
 * id a number), each with a description a person can check before signing. Steps are drafted first and given gas
 * together, because one measure covers the whole sequence.
 */
import type { UnsignedTransaction } from '@earn/core'
import type { Address } from 'viem'
import { approveData, depositData, redeemData } from './calldata.ts'
import type { EvmClient } from './client.ts'
import { approveRefused, describeAmount, type TokenLabel } from './erc20.ts'
import { gasLimits, type GasCall } from './gas.ts'
import { appendTag } from './tag.ts'

/** What every step of one build shares. */
export interface BuildContext {
  chainId: string
  owner: Address
  vault: Address
  /** The vault's asset (ERC-4626 `asset()`), as the catalog knows it. */
  asset: Address
  tag: string
}

export interface Draft extends GasCall {
  type: UnsignedTransaction['type']
  description: string
  metadata?: Record<string, unknown>
}

/** Gives the drafts their gas and the API's shape, in signing order. */
export async function finish(client: EvmClient, ctx: BuildContext, drafts: Draft[]): Promise<UnsignedTransaction[]> {
  const gas = await gasLimits(client, ctx.chainId, ctx.owner, drafts)
  return drafts.map((d, i) => ({
    type: d.type,
    transaction: { to: d.to, data: d.data, value: '0', gasLimit: gas[i]!.gasLimit.toString(), chainId: Number(ctx.chainId) },
    description: d.description,
    metadata: { ...d.metadata, gasLimitSource: gas[i]!.source },
  }))
}

export const vaultName = (vault: TokenLabel) =>
  vault.symbol === undefined ? `vault ${vault.display}` : `vault ${vault.symbol} (${vault.display})`

export interface ApprovalParameters {
  token: TokenLabel
  spender: Address
  spenderName: string
  /** What the step after the approval spends. */
  amount: bigint
  /** The owner's allowance for the spender now. */
  allowed: bigint
}

/**
 * The approvals that let the spender take `amount`: none when the allowance already covers it, else one approve of
 * exactly the amount, never an unlimited allowance (a standing approval outlives this build and would let a
 * compromised vault or router take the wallet's whole balance of the token later). Where the allowance is non-zero
 * and the token refuses to change it (USDT), an approve to zero comes first.
 */
export async function approvals(client: EvmClient, ctx: BuildContext, p: ApprovalParameters): Promise<Draft[]> {
  if (p.allowed >= p.amount) return []
  const reset =
    p.allowed > 0n &&
    (await approveRefused(client, { chainId: ctx.chainId, token: p.token.address, owner: ctx.owner, spender: p.spender, amount: p.amount }))
  if (!reset) return [approveDraft(p, { to: p.amount, standalone: true })]
  // The second approve would revert until the reset is mined.
  return [approveDraft(p, { to: 0n, standalone: true }), approveDraft(p, { to: p.amount, standalone: false })]
}

const approveDraft = (p: ApprovalParameters, step: { to: bigint; standalone: boolean }): Draft => ({
  type: 'approve',
  step: 'approve',
  // A reset is measured apart: clearing a slot costs other gas than filling one.
  subject: `${p.token.address}|${p.spender}${step.to === 0n ? '|reset' : ''}`,
  to: p.token.address,
  data: approveData(p.spender, step.to),
  standalone: step.standalone,
  description:
    step.to === 0n
      ? `Reset the allowance of the ${p.spenderName} for ${p.token.symbol ?? p.token.display} to 0 (this token changes a non-zero allowance only from zero)`
      : `Approve ${describeAmount(step.to, p.token)} for the ${p.spenderName}`,
  metadata: { spender: p.spender, amount: step.to.toString() },
})

/**
 * For a step that spends what an earlier step brings (the swap's output, the redeem's assets): it would spend the
 * wallet's own balance of that token instead where that step failed, so its description says to send it only after.
 */
export const afterNote = (after: string | undefined, token: TokenLabel) =>
  after === undefined ? '' : `; send only once the ${after} has succeeded: the ${token.symbol ?? token.display} comes from it`

/** ERC-4626 `deposit(assets, owner)` with the attribution tag appended. */
export const depositDraft = (
  ctx: BuildContext,
  p: { assets: bigint; asset: TokenLabel; vault: TokenLabel; standalone: boolean; metadata?: Record<string, unknown>; after?: string },
): Draft => ({
  type: 'deposit',
  step: 'deposit',
  subject: ctx.vault,
  to: ctx.vault,
  data: appendTag(depositData(p.assets, ctx.owner), ctx.tag),
  standalone: p.standalone,
  amount: p.assets,
  description: `Deposit ${describeAmount(p.assets, p.asset)} into ${vaultName(p.vault)}${afterNote(p.after, p.asset)}`,
  metadata: { assets: p.assets.toString(), ...p.metadata },
})

/** ERC-4626 `redeem(shares, owner, owner)`: the owner burns its own shares, so no approval comes first. */
export const withdrawDraft = (ctx: BuildContext, p: { shares: bigint; asset: TokenLabel; vault: TokenLabel }): Draft => ({
  type: 'withdraw',
  step: 'withdraw',
  subject: ctx.vault,
  to: ctx.vault,
  data: appendTag(redeemData(p.shares, ctx.owner, ctx.owner), ctx.tag),
  standalone: true,
  amount: p.shares,
  description: `Redeem ${describeAmount(p.shares, p.vault)} from ${vaultName(p.vault)} for ${p.asset.symbol ?? p.asset.display}`,
  metadata: { shares: p.shares.toString() },
})
