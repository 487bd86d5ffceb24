/**
 * The token-stream creation fee: 1.5 % of the net reward budget, in the reward token's smallest
 * unit, rounded up so the fee is never short by a fraction of a unit. Premium organizations pay 0;
 * point streams have no fee. Integer arithmetic only.
 */
import type { Tier } from './store/schema.ts'

export const STREAM_FEE_BPS = 150n
const BPS = 10_000n
export const UINT256_MAX = 2n ** 256n - 1n

export type StreamType = 'token' | 'point'

export function streamFee(netBudget: bigint, p: { type: StreamType; tier: Tier }): bigint {
  if (netBudget < 0n) throw new RangeError('netBudget must not be negative')
  if (p.type === 'point' || p.tier === 'premium') return 0n
  return (netBudget * STREAM_FEE_BPS + BPS - 1n) / BPS
}
