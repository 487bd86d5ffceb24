import { type ActionDeps, buildDeposit, buildWithdraw, createActionRecorder, createLookups, verifyAttribution } from '@earn/core'
import { Elysia } from 'elysia'
import type { Deps } from '../../deps.ts'
import { ErrorEnvelopeSchema } from '../../http/envelope.ts'
import { operation } from '../../http/operation.ts'
import { callerOrganization } from '../../http/request.ts'
import { idempotent } from '../../http/idempotency.ts'
import { ActionParams, ActionResult, DepositBody, VerifyQuery, VerifyResult, WithdrawBody } from './model.ts'

const tags = ['Actions']
/** How long a build remembers an opportunity, distributor or membership it read (see core's lookups.ts). */
const LOOKUP_TTL_MS = 2000
const orgOf = (request: Request) => callerOrganization(request).id

const ORDER =
  'Checks, in order: body (400); the wallet is a member (404, context.userAddress); the opportunity exists (404), and for a deposit is not delisted (404, context.opportunityId `delisted`); the distributor exists and is yours (404); '

export const actionRoutes = (deps: Deps) => {
  const actions: ActionDeps = {
    store: deps.store,
    ecosystems: deps.ecosystems,
    clock: deps.clock,
    attributionSecret: deps.attributionSecret,
    recorder: createActionRecorder(deps.store),
    lookups: createLookups({ store: deps.store, clock: deps.clock, ttlMs: LOOKUP_TTL_MS, members: deps.members }),
  }
  return new Elysia({ prefix: '/v2/actions' })
    .post(
      '/deposit/:opportunityId',
      ({ body, params, request, set }) =>
        idempotent(deps, 'actions.deposit', { request, set, params, body }, (answering) =>
          buildDeposit(actions, { orgId: orgOf(request), opportunityId: params.opportunityId, body, answering }),
        ),
      {
        params: ActionParams,
        body: DepositBody,
        ...operation(deps, 'actions.deposit', {
          idempotent: true,
          summary: 'Build a deposit',
          description:
            ORDER +
            'mode enabled on the opportunity, tokenIn allowed, amount parses, the chain can build it (400: e.g. a direct deposit ' +
            "takes only the vault's asset); in swap mode, a tokenIn the router can price (asked of the chain, 400 naming tokenIn whatever the balance); " +
            'then the on-chain balance of tokenIn (400 `insufficient token balance` with context.required and context.available). The deposit step carries the attribution tag.',
          tags,
          responses: { 200: ActionResult, 409: ErrorEnvelopeSchema },
        }),
      },
    )
    .post(
      '/withdraw/:opportunityId',
      ({ body, params, request, set }) =>
        idempotent(deps, 'actions.withdraw', { request, set, params, body }, (answering) =>
          buildWithdraw(actions, { orgId: orgOf(request), opportunityId: params.opportunityId, body, answering }),
        ),
      {
        params: ActionParams,
        body: WithdrawBody,
        ...operation(deps, 'actions.withdraw', {
          idempotent: true,
          summary: 'Build a withdrawal',
          description:
            ORDER +
            'a delisted opportunity still takes withdrawals; tokenOut allowed, amount parses, the chain can build it (400); then the on-chain balance of vault shares (400 `insufficient token balance`). ' +
            'A tokenOut other than the base token (where swaps are enabled, EVM) adds an approve of the router when short and a swap after the redeem.',
          tags,
          responses: { 200: ActionResult, 409: ErrorEnvelopeSchema },
        }),
      },
    )
    .get('/verify', ({ query, request }) => verifyAttribution(actions, { orgId: orgOf(request), chainId: query.chainId, txHash: query.txHash }), {
      ...operation(deps, 'actions.verify', {
        query: VerifyQuery,
        summary: 'Verify the attribution tag of a mined transaction',
        description:
          "verified is true when the tag is ours and valid for the action's wallet and chain, and that wallet made the action: it sent the transaction (EVM: to the action's vault, which reported shares moved for it) or, as a contract wallet, called the vault itself inside another sender's transaction. Otherwise false; 404 when the transaction carries no tag. A move counts only for the tag on the call that made it: for a contract wallet's deposit sent by someone else, the wallet's own call to the vault, read from a call trace (debug_traceTransaction); where the chain's RPC gives none, 503. A transaction carrying several tags (a bundle of several wallets' deposits) has each that holds recorded; the answer is the calling organization's own, else the first that holds, else the first found.",
        tags,
        responses: { 200: VerifyResult },
      }),
    })
}
