/**
 * The SOL a transaction takes from its fee payer besides the tokens the balance preflight checked: the fee (5,000
 * lamports for its one signature; builds add no priority fee), the rent of an account it creates, and for a SOL
 * deposit or transfer the amount itself. Solana refuses a transaction its fee payer cannot pay, and one that leaves
 * an account holding more than nothing but less than the rent-exempt minimum, so a build the wallet could sign but
 * never land is refused here instead (400), saying what the lamports are for.
 */
import { InsufficientBalanceError, InvalidArgumentError, NATIVE_TOKEN } from '@earn/core'
import type { Address, Rpc, SolanaRpcApi } from '@solana/kit'
import { COMMITMENT } from './rpc.ts'

export const LAMPORTS_PER_SIGNATURE = 5_000n

/** The rent-exempt minimum for an account of `dataBytes`, at the rent every public cluster charges. */
export const rentExempt = (dataBytes: number): bigint => BigInt((128 + dataBytes) * 3480 * 2)

/** A wallet (no data): less than this, but more than nothing, is a balance no transaction may leave. */
export const WALLET_RENT = rentExempt(0)

export const readLamports = (rpc: Rpc<SolanaRpcApi>, account: Address, abortSignal: AbortSignal): Promise<bigint> =>
  rpc
    .getBalance(account, { commitment: COMMITMENT })
    .send({ abortSignal })
    .then((r) => r.value)

export interface SolSpend {
  /** The fee payer's lamports, read with the build's other reads. */
  available: bigint
  /** SOL the transaction moves (a SOL deposit's amount), 0 for a token transfer. */
  moved: bigint
  /** The rent of the recipient's token account the transaction creates, the fee payer paying it (0: none). */
  newAccountRent: bigint
}

export function assertPaysFor(s: SolSpend): void {
  const short = (required: bigint, covers: string) => new InsufficientBalanceError({ required, available: s.available, token: NATIVE_TOKEN, covers })
  const rent = s.newAccountRent
  const needed = s.moved + LAMPORTS_PER_SIGNATURE + rent
  const parts = [...(s.moved ? [`${s.moved} to move`] : []), `the ${LAMPORTS_PER_SIGNATURE}-lamport fee`, ...(rent ? [`${rent} of rent for the recipient's new token account`] : [])]
  // The fee is taken first, and what it leaves must already be nothing or the minimum, whatever the instructions do;
  // and no wallet holds more than nothing and less than the minimum. So a wallet is emptied only where what the
  // transaction spends past the fee is the minimum or more; otherwise it keeps the minimum. `required` is the least
  // balance meeting every rule, so one top-up to it is enough (an audit: told the fee and the minimum, a wallet
  // topping up to it was then told the amount and the minimum; told 105,000 lamports, no wallet could hold that).
  const least = needed - LAMPORTS_PER_SIGNATURE >= WALLET_RENT ? needed : needed + WALLET_RENT
  if (s.available < least)
    throw short(least, least === needed ? parts.join(', ') : `${parts.join(', ')}, and the ${WALLET_RENT} lamports the wallet must keep: the fee must leave it nothing or at least that, and no wallet holds less than that and more than nothing`)
  const left = s.available - needed
  if (left > 0n && left < WALLET_RENT)
    throw short(
      needed + WALLET_RENT,
      `${parts.join(', ')}, and the ${WALLET_RENT} lamports a wallet must keep unless it is emptied (Solana refuses to leave ${left})` +
        (s.moved ? `; moving ${s.available - LAMPORTS_PER_SIGNATURE - rent} empties it (as built: a priority fee the wallet adds comes out of it too)` : ''),
    )
}

/**
 * A SOL transfer to an account that does not exist yet creates it, and Solana refuses to create one holding less
 * than the rent-exempt minimum.
 */
export function assertCreatesFunded(p: { recipientLamports: bigint; moved: bigint; field: string; recipient: Address }): void {
  if (p.recipientLamports === 0n && p.moved < WALLET_RENT)
    throw new InvalidArgumentError(
      `${p.recipient} holds no SOL yet, so this transfer would create it, and Solana refuses to create an account with less than the rent-exempt minimum (${WALLET_RENT} lamports)`,
      { [p.field]: `must be at least ${WALLET_RENT} while the recipient holds nothing` },
    )
}
