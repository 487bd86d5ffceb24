import { getOpportunity, listOpportunities } from '@earn/core'
import { Elysia } from 'elysia'
import type { Deps } from '../../deps.ts'
import { operation } from '../../http/operation.ts'
import { OpportunityList, OpportunityListQuery, OpportunityParams, OpportunityResult } from './model.ts'

const tags = ['Opportunities']

export const opportunityRoutes = (deps: Deps) => {
  const catalog = { store: deps.store, ecosystems: deps.ecosystems }
  return new Elysia({ prefix: '/v2/opportunities' })
    .get('/', ({ query }) => listOpportunities(catalog, query), {
      ...operation(deps, 'opportunities.list', {
        query: OpportunityListQuery,
        summary: 'List opportunities',
        description:
          'Filters: chainIds (comma-separated), depositToken (address; on EVM any one case, or EIP-55 mixed case with its checksum), tvlGreaterThan (USD). ' +
          'Largest TVL first; page from 1, limit up to 500 (default 100). A filter that does not parse is 400 naming it. ' +
          'Opportunities the operator delisted are left out.',
        tags,
        responses: { 200: OpportunityList },
      }),
    })
    .get('/:opportunityId', ({ params }) => getOpportunity(catalog, params.opportunityId), {
      params: OpportunityParams,
      ...operation(deps, 'opportunities.get', {
        summary: 'Get one opportunity',
        description: 'Unknown, or delisted by the operator (context.opportunityId `delisted`; its holders still withdraw): 404.',
        tags,
        responses: { 200: OpportunityResult },
      }),
    })
}
