/**
 * A deposit is a plain transfer of the base token to the vault's deposit authority, tagged with a
 * memo: Solana vaults in the catalog take deposits into an account they own, so no vault program
 * instruction is needed, and the memo lets the API attribute the deposit without one.
 */
import { InvalidArgumentError, type BuildParameters, type UnsignedTransaction } from '@earn/core'
import { address, createNoopSigner } from '@solana/kit'
import { getTransferSolInstruction } from '@solana-program/system'
import { parseAddress } from './address.ts'
import { formatUnits, SOL_DECIMALS } from './amount.ts'
import { toStep, type BuildContext } from './build.ts'
import { latestLifetime } from './message.ts'
import { readMintWithAccounts } from './token.ts'
import { tokenTransferToVault } from './transfer.ts'

export type DepositParameters = Extract<BuildParameters, { kind: 'deposit' }>

export async function buildDeposit(ctx: BuildContext, p: DepositParameters): Promise<UnsignedTransaction> {
  // Direct deposits move the vault's own token; turning another token into it is a swap, which has
  // no route on Solana here. Checked before any read.
  if (p.mode !== 'direct')
    throw new InvalidArgumentError('swap deposits are not supported on Solana; use mode "direct"', {
      mode: 'only "direct" is supported on Solana',
    })
  const baseToken = p.opportunity.baseToken
  const wrongToken = () =>
    new InvalidArgumentError(`tokenIn must be this opportunity's base token, ${baseToken}, for a direct deposit`, {
      tokenIn: `must be ${baseToken}`,
    })
  return p.tokenIn === 'native' ? depositSol(ctx, baseToken, wrongToken) : depositToken(ctx, p.tokenIn, baseToken, wrongToken)
}

/** SOL vaults (catalog base token `native`) hold lamports at the deposit authority itself. */
async function depositSol(ctx: BuildContext, baseToken: string, wrongToken: () => Error): Promise<UnsignedTransaction> {
  if (baseToken !== 'native') throw wrongToken()
  const lifetime = await latestLifetime(ctx.rpc, ctx.abortSignal)
  return toStep(ctx, {
    type: 'deposit',
    description: `Deposit ${formatUnits(ctx.amount, SOL_DECIMALS)} SOL into vault ${ctx.vault}`,
    lifetime,
    instructions: [
      getTransferSolInstruction({ source: createNoopSigner(ctx.owner), destination: ctx.vault, amount: ctx.amount }),
      ctx.memo,
    ],
  })
}

async function depositToken(
  ctx: BuildContext,
  tokenIn: string,
  baseToken: string,
  wrongToken: () => Error,
): Promise<UnsignedTransaction> {
  const mint = address(parseAddress(tokenIn, 'tokenIn'))
  if (mint !== baseToken) throw wrongToken()
  const [lifetime, token] = await Promise.all([
    latestLifetime(ctx.rpc, ctx.abortSignal),
    readMintWithAccounts(ctx.rpc, { mint, owners: [ctx.owner, ctx.vault], field: 'tokenIn', abortSignal: ctx.abortSignal }),
  ])
  const transfer = tokenTransferToVault({ token, owner: ctx.owner, vault: ctx.vault, amount: ctx.amount })
  return toStep(ctx, {
    type: 'deposit',
    description: `Deposit ${formatUnits(ctx.amount, token.decimals)} of token ${mint} into vault ${ctx.vault}`,
    lifetime,
    instructions: [...transfer.instructions, ctx.memo],
    metadata: { createsVaultTokenAccount: transfer.createsVaultAccount },
  })
}
