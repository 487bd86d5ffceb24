/** The activity endpoints' HTTP schemas: core's schema objects plus the path. */
import { t } from 'elysia'

export { ActivityList, DistributorActivityQuery, WalletActivityQuery } from '@earn/core/activity/schema'

export const DistributorParams = t.Object({ distributorId: t.String({ description: "One of this organization's distributors" }) })
