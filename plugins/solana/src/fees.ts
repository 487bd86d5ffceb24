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
  // The fee is taken first, and what it leaves must already be nothing or the minimum, whatever the instructions do.
  const afterFee = s.available - LAMPORTS_PER_SIGNATURE
  if (afterFee > 0n && afterFee < WALLET_RENT)
    throw short(
      LAMPORTS_PER_SIGNATURE + WALLET_RENT,
      `the ${LAMPORTS_PER_SIGNATURE}-lamport fee, after which the wallet must hold nothing or at least the rent-exempt minimum (${WALLET_RENT} lamports): Solana refuses a fee that leaves ${afterFee}`,
    )
  const rent = s.newAccountRent
  const needed = s.moved + LAMPORTS_PER_SIGNATURE + rent
  const parts = [...(s.moved ? [`${s.moved} to move`] : []), `the ${LAMPORTS_PER_SIGNATURE}-lamport fee`, ...(rent ? [`${rent} of rent for the recipient's new token account`] : [])]
  if (s.available < needed) throw short(needed, parts.join(', '))
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
