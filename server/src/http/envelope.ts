/** The error envelope as a TypeBox schema (for OpenAPI) and as a Response (for the error hook). */
import { ApiError, type ErrorEnvelope, maskKeys, toEnvelope } from '@earn/core'
import { Type } from '@sinclair/typebox'
import { t } from 'elysia'

/** Its name in the OpenAPI document's components; every error response refers to it there (see docs.ts). */
export const ERROR_ENVELOPE = 'ErrorEnvelope'

export const ErrorEnvelopeSchema = t.Object(
  {
    // TypeBox's own integer: Elysia's `t.Integer` also admits a numeric string, for coercing query values.
    code: Type.Integer({ description: 'HTTP status code' }),
    status: t.String({ description: 'Error name, e.g. INVALID_ARGUMENT' }),
    error: t.String({ description: 'What went wrong, for a person to act on' }),
    context: t.Record(t.String(), t.Unknown(), { description: 'Details keyed by field name' }),
  },
  { title: ERROR_ENVELOPE },
)

export function envelopeResponse(error: ApiError, headers: Record<string, string | number | undefined>): Response {
  const body: ErrorEnvelope = toEnvelope(error)
  const h = new Headers()
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) h.set(k, String(v))
  h.set('content-type', 'application/json')
  // A key a client pasted into a path, query or body is not repeated back whole (masked as the logs mask it).
  return new Response(maskKeys(JSON.stringify(body)), { status: error.status, headers: h })
}
