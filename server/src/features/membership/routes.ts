import { checkMembership, createMembership, issueAgreement } from '@earn/core'
import { Elysia } from 'elysia'
import type { Deps } from '../../deps.ts'
import { ErrorEnvelopeSchema } from '../../http/envelope.ts'
import { operation } from '../../http/operation.ts'
import { callerOrganization } from '../../http/request.ts'
import { Agreement, AgreementBody, CheckQuery, CreateBody, CreateResult, MembershipStatus } from './model.ts'

const tags = ['Membership']
const orgOf = (request: Request) => callerOrganization(request).id

export const membershipRoutes = (deps: Deps) => {
  const membership = {
    store: deps.store,
    clock: deps.clock,
    ecosystems: deps.ecosystems,
    members: deps.members,
    nonceTtlSeconds: deps.config.nonceTtlSeconds,
  }
  return new Elysia({ prefix: '/v2/membership' })
    .get('/', ({ query }) => checkMembership(membership, { address: query.address, walletEcosystem: query.walletEcosystem ?? 'evm' }), {
      ...operation(deps, 'membership.check', { query: CheckQuery, summary: 'Check membership', tags, responses: { 200: MembershipStatus } }),
    })
    .post('/agreement', ({ body, request }) => issueAgreement(membership, { ...body, orgId: orgOf(request) }), {
      body: AgreementBody,
      ...operation(deps, 'membership.agreement', {
        summary: 'Request a signature agreement',
        description: 'Issues a single-use nonce and the message the wallet signs.',
        tags,
        responses: { 200: Agreement },
      }),
    })
    .post('/', ({ body, request }) => createMembership(membership, { ...body, orgId: orgOf(request) }), {
      body: CreateBody,
      ...operation(deps, 'membership.create', {
        summary: 'Create membership',
        description: 'Verifies the signature over the issued message, consumes the nonce and registers the wallet.',
        tags,
        responses: { 200: CreateResult, 409: ErrorEnvelopeSchema },
      }),
    })
}
