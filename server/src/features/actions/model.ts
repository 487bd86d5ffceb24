/** The action endpoints' HTTP schemas: core's schema objects plus the path. */
import { t } from 'elysia'

export { ActionResult, DepositBody, VerifyQuery, VerifyResult, WithdrawBody } from '@earn/core/actions/schema'

export const ActionParams = t.Object({ opportunityId: t.String({ description: 'Opportunity UUID' }) })
