/** A stored stream as the API shows it: the state as read now, addresses in display form, instants in ISO 8601. */
import { NATIVE_TOKEN } from '../ecosystem.ts'
import type { StreamRecord } from '../store/schema.ts'
import type { Stream } from './schema.ts'
import { effectiveState } from './state.ts'

/** How a stream's ecosystem shows what is stored; identity where its plugin is not loaded. */
export interface DisplayForms {
  /** Canonical address to display form (`address.format`, or for a contract such as the reward token its contract form). */
  address: (canonical: string, contract?: boolean) => string
  /** The chain id in its one spelling: a stream created under an earlier one keeps that stored, as its tag names it. */
  chain: (chainId: string) => string
}

const iso = (ms: number) => new Date(ms).toISOString()

export function toStream(row: StreamRecord, forms: DisplayForms, now: number): Stream {
  const format = forms.address
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
    chainId: forms.chain(row.chainId),
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
