/**
 * The Idempotency-Key header on the operations that create a row (core/src/idempotency.ts has the rules): read from
 * the request, the operation run once per key, and an answer given again marked `Idempotent-Replayed: true`.
 */
import { type Answering, IDEMPOTENCY_HEADER, IdempotencyKeyBusyError, idempotently } from '@earn/core'
import type { OperationId } from '@earn/core/metering/costs'
import type { Deps } from '../deps.ts'
import { callerOrganization } from './request.ts'

export const REPLAYED_HEADER = 'Idempotent-Replayed'

interface Context {
  request: Request
  set: { headers: Record<string, string | number> }
  params?: unknown
  body?: unknown
}

export async function idempotent<T>(deps: Pick<Deps, 'store' | 'clock'>, operation: OperationId, ctx: Context, create: (answering: Answering | undefined) => Promise<T>): Promise<T> {
  const key = ctx.request.headers.get(IDEMPOTENCY_HEADER)
  const request = key === null ? undefined : { orgId: callerOrganization(ctx.request).id, key, operation, input: { params: ctx.params ?? {}, body: ctx.body ?? {} } }
  try {
    const { replayed, result } = await idempotently(deps, request, create)
    if (replayed) ctx.set.headers[REPLAYED_HEADER.toLowerCase()] = 'true'
    return result
  } catch (e) {
    if (e instanceof IdempotencyKeyBusyError) ctx.set.headers['retry-after'] = String(e.retryAfterSeconds)
    throw e
  }
}
