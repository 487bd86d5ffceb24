/**
 * Building deposit and withdrawal transactions: the shared checks, the endpoint's own checks, the
 * balance preflight, the plugin's builder with the attribution tag, and the record of the action.
 * The action id is made before building because the tag names it.
 */
import { attributionTag } from '../attribution.ts'
import { hasControlCharacter, InvalidArgumentError } from '../errors.ts'
import type { Clock } from '../clock.ts'
import type { BuildParameters, OpportunityTarget } from '../ecosystem.ts'
import type { NewAction } from '../store/schema.ts'
import { parseAmount } from './amount.ts'
import { type CheckDeps, type Checked, checkCommon, parseField, preflight, preflightThenBuild } from './checks.ts'
import { ModeNotEnabledError, TokenNotAllowedError } from './errors.ts'
import type { ActionRecorder } from './recorder.ts'
import type { Answering } from '../idempotency.ts'
import { type ActionResult, DEFAULT_MAX_PRICE_IMPACT_BPS, DEFAULT_SLIPPAGE_BPS, type DepositBody, type WithdrawBody } from './schema.ts'

/**
 * UUID v7: time-ordered, so each new action lands at the end of the primary-key index instead of on a random page
 * (under load every commit otherwise rewrites a page per row). Still 16 random-looking bytes in the tag.
 */
const newActionId = () => Bun.randomUUIDv7()

export interface ActionDeps extends CheckDeps {
  clock: Clock
  /** The attribution secret (see attribution.ts: configured, or generated once and stored). */
  attributionSecret: () => Promise<string>
  /** Stores built actions (see recorder.ts). */
  recorder: ActionRecorder
}

export interface ActionParameters<Body> {
  orgId: string
  opportunityId: string
  body: Body
  /** An idempotent build's: its answer is stored with its action (see idempotency.ts). */
  answering?: Answering
}

function target(c: Checked): OpportunityTarget {
  const { listing, facts } = c.opportunity
  return { id: listing.id, chainId: listing.chainId, vaultAddress: listing.vaultAddress, baseToken: facts.baseToken, receiptToken: facts.receiptToken }
}

async function tagFor(deps: ActionDeps, c: Checked, actionId: string): Promise<string> {
  return attributionTag(await deps.attributionSecret(), {
    distributorId: c.distributor.id,
    actionId,
    wallet: c.wallet,
    chainId: c.opportunity.listing.chainId,
  })
}

function actionRow(deps: ActionDeps, c: Checked, orgId: string, row: Pick<NewAction, 'id' | 'kind' | 'token' | 'amount' | 'referralCode'>): NewAction {
  return {
    ...row,
    orgId,
    distributorId: c.distributor.id,
    ecosystem: c.ecosystem.plugin.id,
    chainId: c.opportunity.listing.chainId,
    wallet: c.wallet,
    opportunityId: c.opportunity.listing.id,
    vault: c.opportunity.listing.vaultAddress,
    txHash: null,
    createdAt: deps.clock.now(),
  }
}

export async function buildDeposit(deps: ActionDeps, p: ActionParameters<DepositBody>): Promise<ActionResult> {
  const { body } = p
  // A body fault, told first: the code is shown back (verify, activity) as one line of text.
  if (body.referralCode !== undefined && hasControlCharacter(body.referralCode))
    throw new InvalidArgumentError('referralCode must be one line of text, without control characters', { referralCode: 'has a control character' })
  const c = await checkCommon(deps, {
    kind: 'deposit',
    orgId: p.orgId,
    opportunityId: p.opportunityId,
    userAddress: body.userAddress,
    distributorId: body.distributorId,
  })
  const { listing, facts } = c.opportunity
  const { plugin, client } = c.ecosystem

  const mode = body.mode ?? 'direct'
  const enabled = [...(listing.swapDirectEnabled ? ['direct'] : []), ...(listing.swapRouteEnabled ? ['swap'] : [])]
  if (!enabled.includes(mode)) throw new ModeNotEnabledError(mode, enabled)

  const tokenIn = parseField(plugin, body.tokenIn, 'tokenIn')
  if (tokenIn === facts.receiptToken) throw new TokenNotAllowedError('tokenIn', "is the opportunity's receipt token; deposit one of its deposit tokens")
  // Swapping the vault's own token for itself is a direct deposit: where the operator took those off, it is refused as
  // mode direct would be (an audit: the approve and plain deposit were built anyway).
  if (mode === 'swap' && tokenIn === facts.baseToken && !listing.swapDirectEnabled)
    throw new TokenNotAllowedError('tokenIn', "is the vault's own token, which only a direct deposit takes, and direct deposits are not enabled on this opportunity; swap another token in")
  if (mode === 'direct' && !listing.depositTokens.some((t) => t.address === tokenIn))
    throw new TokenNotAllowedError(
      'tokenIn',
      `is not a deposit token of this opportunity (${listing.depositTokens.map((t) => t.symbol).join(', ')})${listing.swapRouteEnabled ? '; other tokens need mode swap' : ''}`,
    )
  const amount = parseAmount(body.amount)

  const actionId = newActionId()
  const build: BuildParameters = {
    kind: 'deposit',
    chainId: listing.chainId,
    owner: c.wallet,
    opportunity: target(c),
    amount,
    tag: await tagFor(deps, c, actionId),
    slippageBps: body.slippageBps ?? DEFAULT_SLIPPAGE_BPS,
    maxPriceImpactBps: body.maxPriceImpactBps ?? DEFAULT_MAX_PRICE_IMPACT_BPS,
    tokenIn,
    mode,
  }
  plugin.transactions.check(client, build)
  const transactions = await preflightThenBuild(
    preflight(c.ecosystem, { chainId: listing.chainId, owner: c.wallet, token: tokenIn, required: amount, field: 'tokenIn' }),
    () => plugin.transactions.build(client, build),
    ['tokenIn'],
  )
  const result = { actionId, transactions }
  await deps.recorder.record(
    actionRow(deps, c, p.orgId, { id: actionId, kind: 'deposit', token: tokenIn, amount: amount.toString(), referralCode: body.referralCode ?? null }),
    p.answering?.(result),
  )
  return result
}

export async function buildWithdraw(deps: ActionDeps, p: ActionParameters<WithdrawBody>): Promise<ActionResult> {
  const { body } = p
  const c = await checkCommon(deps, {
    kind: 'withdraw',
    orgId: p.orgId,
    opportunityId: p.opportunityId,
    userAddress: body.userAddress,
    distributorId: body.distributorId,
  })
  const { listing, facts } = c.opportunity
  const { plugin, client } = c.ecosystem

  const tokenOut = body.tokenOut === undefined ? undefined : parseField(plugin, body.tokenOut, 'tokenOut')
  if (tokenOut === facts.receiptToken) throw new TokenNotAllowedError('tokenOut', "is the opportunity's receipt token; name the token to receive")
  if (tokenOut !== undefined && tokenOut !== facts.baseToken && !listing.swapRouteEnabled)
    throw new TokenNotAllowedError('tokenOut', `must be the base token ${listing.baseToken.symbol}; this opportunity does not route withdrawals into other tokens`)
  const shares = parseAmount(body.amount)

  const actionId = newActionId()
  const build: BuildParameters = {
    kind: 'withdraw',
    chainId: listing.chainId,
    owner: c.wallet,
    opportunity: target(c),
    amount: shares,
    tag: await tagFor(deps, c, actionId),
    slippageBps: body.slippageBps ?? DEFAULT_SLIPPAGE_BPS,
    maxPriceImpactBps: body.maxPriceImpactBps ?? DEFAULT_MAX_PRICE_IMPACT_BPS,
    ...(tokenOut === undefined ? {} : { tokenOut }),
  }
  plugin.transactions.check(client, build)
  const transactions = await preflightThenBuild(
    preflight(c.ecosystem, { chainId: listing.chainId, owner: c.wallet, token: facts.receiptToken, required: shares }),
    () => plugin.transactions.build(client, build),
    ['tokenOut'],
  )
  // The amount is in shares, so the token recorded is the share (receipt) token.
  const result = { actionId, transactions }
  await deps.recorder.record(
    actionRow(deps, c, p.orgId, { id: actionId, kind: 'withdraw', token: facts.receiptToken, amount: shares.toString(), referralCode: null }),
    p.answering?.(result),
  )
  return result
}
