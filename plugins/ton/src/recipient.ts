/**
 * Whether an address can move on what it is sent: a stream's treasury, a catalog's vault. A jetton wallet or master
 * given for its owner takes a jetton transfer (the jettons land in a wallet it owns, which no standard jetton contract
 * ever sends from) or bounces TON; a frozen account bounces TON and holds jettons until unfrozen. Any other contract is
 * taken at its word.
 */
import type { Address } from '@ton/core'
import { askChain, getMethodExitCode, type TonChainClient } from './client.ts'

export interface Fitness {
  /** Why funds sent there would be stuck, or undefined. */
  reason: string | undefined
  /** What becomes of them. */
  consequence?: string
  deployed: boolean
}

/** Why `address` could not move on what it is sent, or undefined; and whether a contract is deployed there. */
export async function unfitRecipient(client: TonChainClient, address: Address): Promise<Fitness> {
  const provider = client.provider(address)
  const state = await askChain('the recipient account', () => provider.getState())
  // Its storage debt unpaid: TON sent bounceable comes back, jettons wait in its jetton wallet until it is unfrozen.
  if (state.state.type === 'frozen') return { reason: 'is frozen (its storage debt unpaid)', consequence: 'what is sent there bounces, or waits until its owner unfreezes it', deployed: true }
  if (state.state.type !== 'active') return { reason: undefined, deployed: false }
  for (const [method, what] of [['get_wallet_data', 'a jetton wallet'], ['get_jetton_data', 'a jetton master']] as const) {
    const answered = await askChain(method, () => provider.get(method, [])).then(
      () => true,
      (e: unknown) => {
        // A get-method this contract does not have fails with an exit code: not a jetton contract.
        if (getMethodExitCode(e) !== undefined) return false
        throw e
      },
    )
    if (answered) return { reason: `is ${what}, not a wallet (its owner)`, deployed: true }
  }
  return { reason: undefined, deployed: true }
}
