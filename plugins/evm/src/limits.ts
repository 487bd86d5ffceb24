/**
 * What the vault takes now, read with a build's other reads (batched and shared, never cached). A paused or capped
 * ERC-4626 vault reverts a deposit above `maxDeposit` or a redeem above `maxRedeem`, after the wallet has signed
 * the approve; at a share price that mints nothing for the amount, a deposit takes the assets for no shares. The
 * build refuses these, saying what the vault takes. A vault that does not answer a view is not refused on its
 * account (not every vault implements the limits): the build goes on as before. A preview that reverts with a reason
 * (a Panic, an error) is an answer: ERC-4626 lets `previewDeposit`/`previewRedeem` revert only where the deposit or
 * redeem itself would (an amount whose conversion overflows), so the build is refused rather than handed out to revert.
 */
import { InvalidArgumentError, UnavailableError } from '@earn/core'
import { AbiDecodingZeroDataError, type Hex } from 'viem'
import { maxDepositData, maxRedeemData, previewDepositData, previewRedeemData, readUint256 } from './calldata.ts'
import { requirePublicClient, type EvmClient } from './client.ts'
import { ask, revertData } from './rpc.ts'
import { shareUnsent } from './shared.ts'
import type { BuildContext } from './steps.ts'

const REVERTED = Symbol('reverted with a reason')
/** A call that ran and returned no data at all, as empty code answers every call. */
const SILENT = Symbol('answered no data')

type ViewAnswer = bigint | undefined | typeof REVERTED | typeof SILENT

/**
 * The vault's answer to a uint256 view: undefined where it has none (a revert without a reason: a contract lacking
 * the function), SILENT where the call returned no data, REVERTED where it reverted with a reason.
 */
function vaultView(client: EvmClient, ctx: BuildContext, data: Hex): Promise<ViewAnswer> {
  const publicClient = requirePublicClient(client, ctx.chainId)
  return shareUnsent(client, ctx.chainId, publicClient, `${ctx.chainId}|vaultView|${ctx.vault}|${data}`, () =>
    ask<ViewAnswer>(
      ctx.chainId,
      () => readUint256(client, ctx.chainId, publicClient, ctx.vault, data),
      (error) => (revertData(error) ? REVERTED : error instanceof AbiDecodingZeroDataError ? SILENT : undefined),
    ),
  )
}

/** A limit that reverted, or said nothing, is no limit the build can state: the preview, asked beside it, speaks for the amount. */
const limitOf = (answer: ViewAnswer) => (answer === REVERTED || answer === SILENT ? undefined : answer)

/** Refuses an amount above the vault's limit for the wallet, naming the limit (`what` says what it takes). */
function withinLimit(amount: bigint, max: bigint | undefined, limit: 'maxDeposit' | 'maxRedeem', what: { none: string; atMost: string }): void {
  if (max === undefined || amount <= max) return
  throw new InvalidArgumentError(max === 0n ? `${what.none} (its ${limit} is 0)` : `${what.atMost} ${max} ${limit === 'maxDeposit' ? 'smallest units' : 'shares'} from this wallet now (its ${limit})`, {
    amount: max === 0n ? (limit === 'maxDeposit' ? 'the vault takes none now' : 'the vault redeems none now') : `at most ${max} now`,
    [limit]: max.toString(),
  })
}

/**
 * Refuses a deposit of `assets` for the wallet that the vault would revert, or that would mint no shares. `swapped`:
 * the assets are a swap's guaranteed output, so a limit is stated in the asset against that output: the request's
 * `amount` is in another token, and "at most N" of it would be read in the wrong units.
 */
export async function checkDepositTaken(client: EvmClient, ctx: BuildContext, assets: bigint, options: { swapped?: boolean } = {}): Promise<void> {
  const [maxAnswer, shares] = await Promise.all([vaultView(client, ctx, maxDepositData(ctx.owner)), vaultView(client, ctx, previewDepositData(assets))])
  // No data from either, as empty code answers every call: no contract at the address now (self-destructed, a proxy
  // pointing at nothing), or a node that has not seen it. The catalog keeps its last facts, and an approve and deposit
  // sent into empty code both land and deposit nothing (an audit), leaving an allowance to the address. A contract
  // lacking the views reverts without a reason instead, and is built for as before.
  if (maxAnswer === SILENT && shares === SILENT)
    throw new UnavailableError(
      `the vault ${ctx.vault} answers neither maxDeposit nor previewDeposit on chain ${ctx.chainId} now (no ERC-4626 vault there?); no deposit into it is built`,
      { chainId: ctx.chainId, vaultAddress: 'answers no ERC-4626 view now' },
    )
  const max = limitOf(maxAnswer)
  if (options.swapped && max !== undefined && max > 0n && assets > max)
    throw new InvalidArgumentError(
      `the swap's guaranteed output, ${assets} smallest units of the vault's asset, is more than the vault takes from this wallet now (its maxDeposit, ${max}); swap less`,
      { amount: `swaps into more of the asset than the vault takes now (maxDeposit ${max})`, maxDeposit: max.toString(), minAmountOut: assets.toString() },
    )
  withinLimit(assets, max, 'maxDeposit', { none: 'the vault takes no deposits from this wallet now: paused, full or closed to it', atMost: 'the vault takes at most' })
  if (shares === REVERTED)
    throw new InvalidArgumentError(`the vault refuses a deposit of ${assets} smallest units now: its previewDeposit reverts for it, as the deposit would`, {
      amount: 'refused by the vault (its previewDeposit reverts); deposit less',
    })
  if (shares === 0n)
    throw new InvalidArgumentError("this amount would mint no shares at the vault's share price now; deposit more", { amount: 'mints 0 shares' })
}

/**
 * Refuses a redeem of `shares` the vault would revert, or that would pay nothing; resolves to what it pays
 * (`previewRedeem`, undefined where the vault does not say).
 */
export async function checkRedeemTaken(client: EvmClient, ctx: BuildContext, shares: bigint): Promise<bigint | undefined> {
  const [max, assets] = await Promise.all([vaultView(client, ctx, maxRedeemData(ctx.owner)), vaultView(client, ctx, previewRedeemData(shares))])
  withinLimit(shares, limitOf(max), 'maxRedeem', { none: "the vault redeems none of this wallet's shares now: paused or locked", atMost: 'the vault redeems at most' })
  if (assets === REVERTED)
    throw new InvalidArgumentError(`the vault refuses to redeem ${shares} shares now: its previewRedeem reverts for them, as the redeem would`, {
      amount: 'refused by the vault (its previewRedeem reverts); withdraw less',
    })
  if (assets === 0n) throw new InvalidArgumentError('these shares redeem for nothing now', { amount: 'redeems for 0 of the asset' })
  return assets === SILENT ? undefined : assets
}
