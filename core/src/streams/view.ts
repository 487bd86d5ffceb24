/** A stored stream as the API shows it: the state as read now, addresses in display form, instants in ISO 8601. */
import { NATIVE_TOKEN } from '../ecosystem.ts'
import type { StreamRecord } from '../store/schema.ts'
import type { Stream } from './schema.ts'
import { effectiveState } from './state.ts'

/**
 * Canonical address to display form (the ecosystem's `address.format`, or for a contract such as the reward token
 * its contract form); identity when its plugin is not loaded.
 */
export type FormatAddress = (canonical: string, contract?: boolean) => string

const iso = (ms: number) => new Date(ms).toISOString()

export function toStream(row: StreamRecord, format: FormatAddress, now: number): Stream {
  const token =
    row.type === 'token'
      ? {
          rewardToken: row.rewardToken === NATIVE_TOKEN ? NATIVE_TOKEN : format(row.rewardToken!, true),
          creatorAddress: format(row.creator!),
          treasuryAddress: format(row.treasury!),
          fundingTxHash: row.fundingTxHash,
        }
      : { pointName: row.pointName! }
  return {
    id: row.id,
    type: row.type,
    state: effectiveState(row.state, row.endTime, now),
    chainId: row.chainId,
    ...token,
    netBudget: row.netBudget,
    FeeAmount: row.feeAmount,
    totalPulled: row.totalPulled,
    targetOpportunityId: row.targetOpportunityId,
    startTime: iso(row.startTime),
    endTime: iso(row.endTime),
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  }
}
