/**
 * A withdrawal is a request: the wallet sends its receipt tokens back to the vault, tagged with a
 * memo, and the vault's operator pays out the base token against them. Solana vaults in the catalog
 * have no common redeem instruction (unlike ERC-4626), so returning the position is the one step
 * every one of them understands.
 */
import { InvalidArgumentError, type BuildParameters, type UnsignedTransaction } from '@earn/core'
import { address } from '@solana/kit'
import { parseAddress } from './address.ts'
import { formatUnits } from './amount.ts'
import { assertDeliversSome, toStep, withFee, type BuildContext } from './build.ts'
import { assertPaysFor, readLamports } from './fees.ts'
import { latestLifetime } from './message.ts'
import { readMintWithAccounts } from './token.ts'
import { tokenTransferToVault } from './transfer.ts'

export type WithdrawParameters = Extract<BuildParameters, { kind: 'withdraw' }>

/** Needs no chain, so it runs before the balance preflight. */
export function checkWithdraw(p: WithdrawParameters): void {
  // The vault pays out in its base token; any other tokenOut would need a swap after the payout.
  if (p.tokenOut !== undefined && p.tokenOut !== p.opportunity.baseToken)
    throw new InvalidArgumentError(`tokenOut must be this opportunity's base token, ${p.opportunity.baseToken}, on Solana`, {
      tokenOut: `must be ${p.opportunity.baseToken} or omitted`,
    })
  if (!p.opportunity.receiptToken)
    throw new InvalidArgumentError('this opportunity names no receipt token, so there is nothing to withdraw', {
      receiptToken: 'missing from the catalog',
    })
}

export async function buildWithdraw(ctx: BuildContext, p: WithdrawParameters): Promise<UnsignedTransaction> {
  checkWithdraw(p)
  const mint = address(parseAddress(p.opportunity.receiptToken, 'receiptToken'))
  const [lifetime, token, available] = await Promise.all([
    latestLifetime(ctx.rpc, ctx.abortSignal),
    readMintWithAccounts(ctx.rpc, { mint, owners: [ctx.owner, ctx.vault], field: 'receiptToken', abortSignal: ctx.abortSignal }),
    readLamports(ctx.rpc, ctx.owner, ctx.abortSignal),
  ])
  // Before the shortfalls: no top-up mends an amount the fee takes whole (an audit: told the SOL to add first, a wallet
  // adding it was refused again).
  const fee = await assertDeliversSome(ctx, token)
  const transfer = tokenTransferToVault({ token, owner: ctx.owner, vault: ctx.vault, amount: ctx.amount, memo: ctx.memo })
  assertPaysFor({ available, moved: 0n, newAccountRent: transfer.newAccountRent })
  return toStep(ctx, {
    type: 'withdraw',
    ...withFee(
      {
        description: `Return ${formatUnits(ctx.amount, token.decimals)} receipt tokens (${mint}) to vault ${ctx.vault} to withdraw`,
        metadata: { createsVaultTokenAccount: transfer.createsVaultAccount },
      },
      ctx.amount,
      fee,
      token.decimals,
    ),
    lifetime,
    instructions: transfer.instructions,
  })
}
