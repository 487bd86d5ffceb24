/**
 * The TON a request takes from the wallet besides the tokens the balance preflight checked: what its message
 * carries (a TON deposit's amount, or the TON attached to a jetton transfer) and the wallet's own fees. A wallet
 * short of it still signs and sends, and its message is skipped while it pays the fees (TON Connect wallets send
 * with "ignore errors"): so such a build is refused instead (400), saying what the TON is for.
 */
import { InsufficientBalanceError, NATIVE_TOKEN } from '@earn/core'
import { type Address, fromNano, toNano } from '@ton/core'
import { askChain, type TonChainClient } from './client.ts'

/**
 * Kept for the wallet's own transaction: its import, compute and forwarding fees (~0.003 TON measured for v4r2 and
 * v5r1 sending one message with a comment), with a margin for storage fees and a first message that deploys it.
 */
export const TON_FEE_RESERVE = toNano('0.01')

export async function assertCoversTon(client: TonChainClient, owner: Address, p: { attached: bigint; what: string }): Promise<void> {
  const { balance } = await askChain('the account balance', () => client.provider(owner).getState())
  const required = p.attached + TON_FEE_RESERVE
  if (balance < required)
    throw new InsufficientBalanceError({
      required,
      available: balance,
      token: NATIVE_TOKEN,
      covers: `${p.what}, and ${fromNano(TON_FEE_RESERVE)} TON kept for the wallet's fees`,
    })
}
