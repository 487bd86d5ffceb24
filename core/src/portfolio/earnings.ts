/** What a position earned: bigint arithmetic on smallest units, signs kept, strings at the edge. */
import type { VaultFlows } from '../ecosystem.ts'

export interface Earnings {
  netDeposited: string | null
  currentValue: string
  earned: string | null
}

/**
 * `netDeposited = deposited − withdrawn` and `earned = currentValue − netDeposited`. Both can be negative: a wallet
 * that took out its yield has withdrawn more than it put in, and a vault can lose value. Without flows (a chain that
 * keeps no record of them) neither is known, which is null, never 0.
 */
export function earningsOf(flows: VaultFlows | null, currentValue: bigint): Earnings {
  if (flows === null) return { netDeposited: null, currentValue: currentValue.toString(), earned: null }
  const net = flows.deposited - flows.withdrawn
  return { netDeposited: net.toString(), currentValue: currentValue.toString(), earned: (currentValue - net).toString() }
}

/** Whether an opportunity belongs in productsEarnings: a position now, or one recorded in the past. */
export const hasHistory = (flows: VaultFlows | null, shares: bigint): boolean =>
  shares > 0n || (flows !== null && (flows.deposited > 0n || flows.withdrawn > 0n))
