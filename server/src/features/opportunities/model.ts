/** The catalog's HTTP schemas: core's schema objects (one source for validation, types and OpenAPI) plus the path. */
import { t } from 'elysia'

export { OpportunityList, OpportunityListQuery, OpportunityResult } from '@earn/core/opportunities/schema'

export const OpportunityParams = t.Object({ opportunityId: t.String({ description: 'Opportunity UUID' }) })
