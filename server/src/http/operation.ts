/**
 * Route options for a metered API operation: its OpenAPI detail (id, cost, security) and the
 * guard that runs before validation. Every API route spreads one of these.
 */
import { type OperationId, OPERATIONS } from '@earn/core/metering/costs'
import type { TObject } from '@sinclair/typebox'
import { NotFoundError } from 'elysia'
import type { Deps } from '../deps.ts'
import { ErrorEnvelopeSchema } from './envelope.ts'
import { guard } from './guard.ts'

const errorResponses = {
  400: ErrorEnvelopeSchema,
  401: ErrorEnvelopeSchema,
  404: ErrorEnvelopeSchema,
  413: ErrorEnvelopeSchema,
  429: ErrorEnvelopeSchema,
  500: ErrorEnvelopeSchema,
  503: ErrorEnvelopeSchema,
}

/**
 * `query`, when the operation takes one, is its schema: the route validates it, and the guard refuses a parameter the
 * schema does not name (a misspelt filter, `chainIds[]`), which validation would silently drop. `routes` names path
 * parameters that pick the route itself (a stream's `action`): another value is a path no route takes, a 404 charged
 * nothing, as any unknown route (DECISIONS), not a 400 charged as the operation.
 */
export function operation<const Responses extends Record<number, unknown>, const Query extends TObject | undefined = undefined>(
  deps: Deps,
  id: OperationId,
  doc: {
    summary: string
    tags: string[]
    description?: string
    responses: Responses
    query?: Query
    anyQuery?: true
    routes?: Record<string, readonly string[]>
    /** It creates a row and takes an Idempotency-Key (http/idempotency.ts); its responses list the 409. */
    idempotent?: true
  },
) {
  const policy = OPERATIONS[id]
  // `anyQuery`: a removed endpoint answers "removed" whatever its caller sends.
  const parameters = doc.anyQuery ? null : Object.keys(doc.query?.properties ?? {})
  const query = (doc.query ? { query: doc.query } : {}) as Query extends TObject ? { query: Query } : {}
  const routes = Object.entries(doc.routes ?? {})
  return {
    ...query,
    detail: {
      operationId: id,
      summary: doc.summary,
      description: `${doc.description ? doc.description + '\n\n' : ''}Cost: ${policy.cost} units. Key: ${policy.key === 'secret' ? 'secret (sk_live_)' : 'publishable or secret'}.`,
      tags: doc.tags,
      security: [{ apiKey: [] }],
      'x-cost-units': policy.cost,
      'x-key-kind': policy.key,
      ...(doc.idempotent ? { 'x-idempotent': true } : {}),
    },
    response: { ...errorResponses, ...doc.responses },
    // Destructured, not passed whole: Elysia reads a hook's parameters to decide what to prepare for
    // each request, and a bare `ctx` makes it prepare everything (cookies included) on every request.
    transform: ({ request, set, body, params }: Parameters<typeof guard>[3]) => {
      if (routes.some(([name, values]) => !values.includes(String(params?.[name])))) throw new NotFoundError()
      return guard(deps, id, parameters, { request, set, body, params })
    },
  }
}
