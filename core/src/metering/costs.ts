/**
 * What every operation costs, in cost units, and which key it needs. The one table: the auth hook
 * reads it, /openapi.json publishes it (`x-cost-units`), the README quotes it.
 */
import type { KeyKind } from '../keys.ts'

export interface OperationPolicy {
  cost: number
  /** The least key kind that may call it; a secret key may call everything. */
  key: KeyKind
}

export const OPERATIONS = {
  'membership.check': { cost: 1, key: 'publishable' },
  'membership.agreement': { cost: 1, key: 'publishable' },
  'membership.create': { cost: 5, key: 'secret' },
  'opportunities.list': { cost: 2, key: 'publishable' },
  'opportunities.get': { cost: 1, key: 'publishable' },
  'actions.deposit': { cost: 10, key: 'secret' },
  'actions.withdraw': { cost: 10, key: 'secret' },
  'actions.verify': { cost: 3, key: 'publishable' },
  // Removed (404), but still a POST: DECISIONS.md gives publishable keys GETs, the agreement and verify only.
  'actions.attribute': { cost: 1, key: 'secret' },
  'portfolio.v1': { cost: 5, key: 'publishable' },
  'portfolio.v2': { cost: 5, key: 'publishable' },
  'streams.create': { cost: 10, key: 'secret' },
  // DECISIONS.md: a publishable key may call every GET endpoint; streams stay scoped to the organization.
  'streams.list': { cost: 1, key: 'publishable' },
  'streams.get': { cost: 1, key: 'publishable' },
  'streams.confirm': { cost: 5, key: 'secret' },
  'streams.transition': { cost: 2, key: 'secret' },
  'activity.wallets': { cost: 2, key: 'publishable' },
  'activity.distributor': { cost: 2, key: 'publishable' },
} as const satisfies Record<string, OperationPolicy>

export type OperationId = keyof typeof OPERATIONS
