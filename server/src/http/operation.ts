/**
 * Route options for a metered API operation: its OpenAPI detail (id, cost, security) and the
 * guard that runs before validation. Every API route spreads one of these.
 */
import { type OperationId, OPERATIONS } from '@earn/core/metering/costs'
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

export function operation<const Responses extends Record<number, unknown>>(
  deps: Deps,
  id: OperationId,
  doc: { summary: string; tags: string[]; description?: string; responses: Responses },
) {
  const policy = OPERATIONS[id]
  return {
    detail: {
      operationId: id,
      summary: doc.summary,
      description: `${doc.description ? doc.description + '\n\n' : ''}Cost: ${policy.cost} units. Key: ${policy.key === 'secret' ? 'secret (sk_live_)' : 'publishable or secret'}.`,
      tags: doc.tags,
      security: [{ apiKey: [] }],
      'x-cost-units': policy.cost,
      'x-key-kind': policy.key,
    },
    response: { ...errorResponses, ...doc.responses },
    // Destructured, not passed whole: Elysia reads a hook's parameters to decide what to prepare for
    // each request, and a bare `ctx` makes it prepare everything (cookies included) on every request.
    transform: ({ request, set, body, params }: Parameters<typeof guard>[2]) => guard(deps, id, { request, set, body, params }),
  }
}
