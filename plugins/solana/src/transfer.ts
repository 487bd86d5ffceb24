/**
 * Moving SPL tokens from a wallet to a vault: the instructions a deposit (base token) and a
 * withdrawal request (receipt token) share.
 */
import { InsufficientBalanceError } from '@earn/core'
import { createNoopSigner, type Address, type Instruction } from '@solana/kit'
import { getCreateAssociatedTokenIdempotentInstruction, getTransferCheckedInstruction } from '@solana-program/token'
import { rentExempt } from './fees.ts'
import type { MintWithAccounts } from './token.ts'

export interface TokenTransferParameters {
  /** Read with `owners: [owner, vault]`. */
  token: MintWithAccounts
  owner: Address
  vault: Address
  amount: bigint
}

export interface TokenTransfer {
  instructions: Instruction[]
  /** Whether the wallet pays the rent (~0.002 SOL) for the vault's token account. */
  createsVaultAccount: boolean
  /** That rent in lamports; 0 when the account exists. */
  newAccountRent: bigint
}

/**
 * `transferChecked`, not `transfer`: the program checks the mint and decimals, so a wallet's preview
 * shows the amount in tokens and a wrong mint cannot slip through (Token-2022 accepts only this one).
 *
 * The vault's associated account is created only when the read found it missing: operators create
 * vault accounts ahead, so most deposits carry no creation the user must pay for and puzzle over in
 * the wallet's preview. When it is added it is the idempotent form, so a deposit racing another
 * first deposit does not fail because the account appeared between build and execution.
 *
 * The source is the wallet's associated account. Balances count every account of the wallet for
 * the mint (the preflight passes on them), so a source holding less than the amount is refused here,
 * naming it: the transaction could only fail, and tokens in another account must be moved first.
 */
export function tokenTransferToVault(p: TokenTransferParameters): TokenTransfer {
  const [source, destination] = p.token.accounts
  const spendable = source!.amount ?? 0n
  if (spendable < p.amount)
    throw new InsufficientBalanceError({
      required: p.amount,
      available: spendable,
      token: p.token.mint,
      source: source!.address,
    })
  const wallet = createNoopSigner(p.owner) // signs later, in the wallet; the message only needs its role
  const createsVaultAccount = destination!.amount === undefined
  const instructions: Instruction[] = []
  if (createsVaultAccount)
    instructions.push(
      getCreateAssociatedTokenIdempotentInstruction({
        payer: wallet,
        ata: destination!.address,
        owner: p.vault,
        mint: p.token.mint,
        tokenProgram: p.token.tokenProgram,
      }),
    )
  instructions.push(
    getTransferCheckedInstruction(
      {
        source: source!.address,
        mint: p.token.mint,
        destination: destination!.address,
        authority: wallet,
        amount: p.amount,
        decimals: p.token.decimals,
      },
      { programAddress: p.token.tokenProgram },
    ),
  )
  return { instructions, createsVaultAccount, newAccountRent: createsVaultAccount ? rentExempt(p.token.accountSize) : 0n }
}
