import { distributorActivity, walletActivity } from '@earn/core'
import { Elysia } from 'elysia'
import type { Deps } from '../../deps.ts'
import { operation } from '../../http/operation.ts'
import { callerOrganization } from '../../http/request.ts'
import { ActivityList, DistributorActivityQuery, DistributorParams, WalletActivityQuery } from './model.ts'

const tags = ['Activity']
const orgOf = (request: Request) => callerOrganization(request).id

const PAGING = 'Newest first; page from 1, limit 1 to 100 (default 20). A parameter that does not parse is 400 naming it.'

export const activityRoutes = (deps: Deps) => {
  const activity = { store: deps.store, ecosystems: deps.ecosystems }
  return new Elysia()
    .get('/v2/wallets/activity', ({ query, request }) => walletActivity(activity, { orgId: orgOf(request), query }), {
      ...operation(deps, 'activity.wallets', {
        query: WalletActivityQuery,
        summary: 'Activity of wallets',
        description:
          "This organization's actions for up to 1000 wallets: deposits and withdrawals built through its keys, and their " +
          `verified transactions. An address no ecosystem accepts is 400 naming its index (context \`addresses[i]\`). ${PAGING}`,
        tags,
        responses: { 200: ActivityList },
      }),
    })
    .get(
      '/v2/distributors/:distributorId/activity',
      ({ params, query, request }) => distributorActivity(activity, { orgId: orgOf(request), distributorId: params.distributorId, query }),
      {
        params: DistributorParams,
        ...operation(deps, 'activity.distributor', {
          query: DistributorActivityQuery,
          summary: 'Activity of a distributor',
          description:
            "The distributor's built and verified actions and the wallets that signed up through it, merged. opportunityId " +
            `keeps that opportunity's actions only. A distributor of another organization is 404. ${PAGING}`,
          tags,
          responses: { 200: ActivityList },
        }),
      },
    )
}
