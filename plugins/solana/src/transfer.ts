/**
 * Moving SPL tokens from a wallet to a vault: the instructions a deposit (base token) and a
 * withdrawal request (receipt token) share.
 */
import { InsufficientBalanceError, InvalidArgumentError } from '@earn/core'
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
  /** The attribution tag's memo: it goes just before the transfer, where an account that requires memos looks. */
  memo: Instruction
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
 * naming it: the transaction could only fail, and tokens in another account must be moved first. So is every
 * transfer the token program would refuse whatever the wallet signs: a mint that moves no tokens now, an account
 * frozen by the mint's freeze authority, a vault account to be created where new accounts start frozen.
 *
 * The memo comes just before `transferChecked`: a recipient account that requires memos (Token-2022's MemoTransfer)
 * reads the instruction before the transfer.
 */
export function tokenTransferToVault(p: TokenTransferParameters): TokenTransfer {
  const [source, destination] = p.token.accounts
  const { field, mint } = p.token
  const refuse = (problem: string, message: string) => new InvalidArgumentError(`${message}; no transaction moving it can land`, { [field]: problem })
  if (p.token.untransferable) throw refuse(p.token.untransferable, `token ${mint} ${p.token.untransferable}`)
  if (source!.frozen) throw refuse("frozen in the wallet's account", `the wallet's account ${source!.address} for token ${mint} is frozen by the mint's freeze authority`)
  if (destination!.frozen) throw refuse("frozen in the recipient's account", `the account ${destination!.address} of ${p.vault} for token ${mint} is frozen by the mint's freeze authority`)
  // Only the vault can hand its account to another (Token's SetAuthority; Token-2022's are immutable): what arrives would be theirs.
  if (destination!.owner !== undefined && destination!.owner !== p.vault)
    throw refuse("recipient's account belongs to another", `the account ${destination!.address} of ${p.vault} for token ${mint} now belongs to ${destination!.owner}, who would receive it`)
  if (destination!.amount === undefined && p.token.newAccountsFrozen)
    throw refuse('new accounts start frozen', `${p.vault} has no account for token ${mint}, and the mint's new accounts start frozen (DefaultAccountState), so one created here could not receive it; the mint's freeze authority must create and thaw it first`)
  // An account the wallet handed to another is no longer its to spend from.
  const spendable = source!.owner === p.owner ? (source!.amount ?? 0n) : 0n
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
    p.memo,
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
  // The creation pays only what lamports already at the address (sent there before it existed) leave short of the rent.
  const rent = rentExempt(p.token.accountSize) - destination!.lamports
  return { instructions, createsVaultAccount, newAccountRent: createsVaultAccount && rent > 0n ? rent : 0n }
}
