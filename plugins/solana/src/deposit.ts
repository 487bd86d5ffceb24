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
import { assertDeliversSome, toStep, withFee, type BuildContext } from './build.ts'
import { assertCreatesFunded, assertPaysFor, readLamports } from './fees.ts'
import { latestLifetime } from './message.ts'
import { readMintWithAccounts } from './token.ts'
import { tokenTransferToVault } from './transfer.ts'

export type DepositParameters = Extract<BuildParameters, { kind: 'deposit' }>

const wrongToken = (baseToken: string) =>
  new InvalidArgumentError(`tokenIn must be this opportunity's base token, ${baseToken}, for a direct deposit`, {
    tokenIn: `must be ${baseToken}`,
  })

/**
 * Direct deposits move the vault's own token; turning another token into it is a swap, which has no route on
 * Solana here. Needs no chain, so it runs before the balance preflight.
 */
export function checkDeposit(p: DepositParameters): void {
  if (p.mode !== 'direct')
    throw new InvalidArgumentError('swap deposits are not supported on Solana; use mode "direct"', {
      mode: 'only "direct" is supported on Solana',
    })
  const tokenIn = p.tokenIn === 'native' ? 'native' : parseAddress(p.tokenIn, 'tokenIn')
  if (tokenIn !== p.opportunity.baseToken) throw wrongToken(p.opportunity.baseToken)
}

export async function buildDeposit(ctx: BuildContext, p: DepositParameters): Promise<UnsignedTransaction> {
  checkDeposit(p)
  const baseToken = p.opportunity.baseToken
  const wrong = () => wrongToken(baseToken)
  return p.tokenIn === 'native' ? depositSol(ctx, baseToken, wrong) : depositToken(ctx, p.tokenIn, baseToken, wrong)
}

/** SOL vaults (catalog base token `native`) hold lamports at the deposit authority itself. */
async function depositSol(ctx: BuildContext, baseToken: string, wrongToken: () => Error): Promise<UnsignedTransaction> {
  if (baseToken !== 'native') throw wrongToken()
  const [lifetime, available, vaultLamports] = await Promise.all([
    latestLifetime(ctx.rpc, ctx.abortSignal),
    readLamports(ctx.rpc, ctx.owner, ctx.abortSignal),
    readLamports(ctx.rpc, ctx.vault, ctx.abortSignal),
  ])
  assertCreatesFunded({ recipientLamports: vaultLamports, moved: ctx.amount, field: 'amount', recipient: ctx.vault })
  assertPaysFor({ available, moved: ctx.amount, newAccountRent: 0n })
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
  const [lifetime, token, available] = await Promise.all([
    latestLifetime(ctx.rpc, ctx.abortSignal),
    readMintWithAccounts(ctx.rpc, { mint, owners: [ctx.owner, ctx.vault], field: 'tokenIn', abortSignal: ctx.abortSignal }),
    readLamports(ctx.rpc, ctx.owner, ctx.abortSignal),
  ])
  // Before the shortfalls: no top-up mends an amount the fee takes whole (an audit: told the SOL to add first, a wallet
  // adding it was refused again).
  const fee = await assertDeliversSome(ctx, token)
  const transfer = tokenTransferToVault({ token, owner: ctx.owner, vault: ctx.vault, amount: ctx.amount, memo: ctx.memo })
  assertPaysFor({ available, moved: 0n, newAccountRent: transfer.newAccountRent })
  return toStep(ctx, {
    type: 'deposit',
    ...withFee(
      { description: `Deposit ${formatUnits(ctx.amount, token.decimals)} of token ${mint} into vault ${ctx.vault}`, metadata: { createsVaultTokenAccount: transfer.createsVaultAccount } },
      ctx.amount,
      fee,
      token.decimals,
    ),
    lifetime,
    instructions: transfer.instructions,
  })
}
