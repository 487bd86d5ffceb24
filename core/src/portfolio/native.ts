/**
 * How the portfolio names each ecosystem's own coin. The plugin interface reads native balances but does not name
 * the coin, so this table does, keyed by ecosystem id (a new ecosystem fails to compile until it has a row). EVM
 * chains whose coin is not ETH (POL, BNB, xDAI...) keep 18 decimals but would show ETH: a catalog token with the
 * address `native` on that chain names the coin instead, and wins over this table.
 */
import type { EcosystemId } from '../ecosystem.ts'

export interface NativeCoin {
  symbol: string
  decimals: number
}

export const NATIVE_COINS = {
  evm: { symbol: 'ETH', decimals: 18 },
  solana: { symbol: 'SOL', decimals: 9 },
  ton: { symbol: 'TON', decimals: 9 },
} as const satisfies Record<EcosystemId, NativeCoin>
