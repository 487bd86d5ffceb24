/** Endpoints that were removed, answering with what replaced them. */
import { NotFoundError } from '@earn/core'
import { Elysia } from 'elysia'
import type { Deps } from '../../deps.ts'
import { operation } from '../../http/operation.ts'

export const legacyRoutes = (deps: Deps) => {
  const op = operation(deps, 'actions.attribute', { summary: 'Removed: attribution is automatic', tags: ['Actions'], responses: {}, anyQuery: true })
  return new Elysia().post(
    '/v1/actions/attribute',
    () => {
      throw new NotFoundError('POST /v1/actions/attribute was removed: attribution of deposits to distributors is automatic', {
        endpoint: 'removed',
      })
    },
    { ...op, detail: { ...op.detail, deprecated: true } },
  )
}
