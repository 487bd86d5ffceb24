/**
 * The only error hook: every failure leaves as the spec's envelope, with the request id and, for a
 * valid key, the metering headers. A store that cannot serve now (busy, unreachable) is logged and becomes a 503;
 * other unknown errors are logged with their cause and become a bare 500.
 */
import { ApiError, ConfigError, findApiError, InvalidArgumentError, NotFoundError, quoted, storeUnavailable, UnavailableError } from '@earn/core'
import { Elysia, ValidationError } from 'elysia'
import type { Deps } from '../deps.ts'
import { pointerPath } from '../fieldPath.ts'
import { loggableError } from '../logger.ts'
import { envelopeResponse } from './envelope.ts'
import { unchargedUsage } from './guard.ts'
import { HostError } from './host.ts'
import { pathOf, requestState } from './request.ts'

/** The values a union of literals allows (`mode`, `type`, ...), which TypeBox's summary names only as types. */
function allowedLiterals(schema: unknown): string | undefined {
  const options = (schema as { anyOf?: { const?: unknown }[] } | undefined)?.anyOf
  if (!options?.length || !options.every((o) => o.const !== undefined)) return undefined
  return options.map((o) => JSON.stringify(o.const)).join(', ')
}

/** `context` keyed by field name, from Elysia's (TypeBox) validation error. */
function validationContext(error: ValidationError): Record<string, string> {
  const context: Record<string, string> = {}
  let all: ValidationError['all']
  try {
    all = error.all
  } catch {
    // Elysia describes each failing value by printing it, which a value nested deep enough overflows. Bodies are
    // held to 16 levels before validation; this keeps any other such value a 400 rather than a 500.
    return { [error.type]: 'is not valid' }
  }
  for (const e of all) {
    if (!('path' in e)) continue
    const field = pointerPath(e.path) || error.type
    const allowed = allowedLiterals('schema' in e ? e.schema : undefined)
    // A path segment that does not percent-decode reaches validation as null.
    const undecodable = error.type === 'params' && 'value' in e && e.value === null
    // Elysia words a missing field as a wrong type ("to be string but found: undefined").
    const missing = field !== error.type && 'value' in e && e.value === undefined
    context[field] ??= undecodable ? 'is not valid percent-encoding' : missing ? 'is required' : (lengthRule(e) ?? (allowed ? `must be one of ${allowed}` : described(e)))
  }
  return context
}

/**
 * A string too short or too long, said in the API's words ("Expected string length greater or equal to 1" was
 * TypeBox's for an empty `txHash=`; an empty `startTime` was "should be one of: 'string', 'integer'"). Lengths are
 * JavaScript's, in UTF-16 code units, as README says.
 */
function lengthRule(e: ValidationError['all'][number]): string | undefined {
  type Lengths = { type?: string; minLength?: number; maxLength?: number; anyOf?: Lengths[] }
  const given = 'schema' in e ? (e.schema as Lengths | undefined) : undefined
  const value: unknown = 'value' in e ? e.value : undefined
  // A union's string member (a time as text or epoch seconds): TypeBox's summary named its types, one of them the string sent.
  const schema = given?.anyOf?.find((o) => o.type === 'string') ?? given
  if (typeof value !== 'string' || !schema) return undefined
  if (schema.minLength !== undefined && value.length < schema.minLength) return value === '' ? 'must not be empty' : `must be at least ${schema.minLength} characters`
  if (schema.maxLength !== undefined && value.length > schema.maxLength) return `must be at most ${schema.maxLength} characters`
  return undefined
}

/**
 * Elysia's summary of a failing value, which ends in the value printed: an object printed `[object Object]`, an array
 * its items joined (`["1"]` read as the string `1`, `[]` as nothing), so those are named for what they are.
 */
function described(e: Extract<ValidationError['all'][number], { path: string }>): string {
  const summary = e.summary ?? e.message
  const value: unknown = 'value' in e ? e.value : undefined
  const at = summary.indexOf('found: ')
  if (typeof value !== 'object' || value === null || at === -1) return summary
  return `${summary.slice(0, at + 'found: '.length)}${Array.isArray(value) ? 'an array' : 'an object'}`
}

function toApiError(code: string | number, error: unknown, request: Request): ApiError | undefined {
  const api = findApiError(error)
  if (api) return api
  // A plugin loaded by a request before the start's own load found its variables refused: the process stops on it
  // (main.ts), and its log names the variable (errorHandling logs it here too).
  if (error instanceof ConfigError)
    return new UnavailableError("this server's configuration is refused; its log names the variable", { server: 'misconfigured' })
  // A response that fails its own schema is the server's fault: left undefined here, it is logged and a 500.
  if (error instanceof ValidationError && error.type !== 'response') {
    const context = validationContext(error)
    const fields = Object.keys(context)
    return new InvalidArgumentError(`invalid ${error.type}: check ${fields.join(', ') || 'the request'}`, context)
  }
  if (code === 'PARSE') return new InvalidArgumentError('request body could not be parsed', { body: 'unparseable' })
  if (code === 'NOT_FOUND') {
    const path = quoted(pathOf(request.url))
    return new NotFoundError(`no route ${quoted(request.method, 20)} ${path}; see /openapi.json for the API`, { path })
  }
  return undefined
}

const STORE_STATE = {
  busy: 'the database is busy',
  unreachable: 'the database is unreachable',
  unwritable: 'the database cannot take writes now (its disk is full, or it is read-only)',
} as const

/**
 * A path no route takes (or a request refused for its Host) is no operation, so nothing is charged; but a valid key
 * still learns its usage, as on every other answer to it (a key the store cannot check now just goes without).
 */
async function usageHeaders(deps: Pick<Deps, 'keys' | 'meter' | 'clock'>, request: Request): Promise<Record<string, string>> {
  try {
    const verified = await deps.keys.verify(request.headers.get('x-api-key'))
    return verified.code === 'VALID' ? await unchargedUsage(deps, verified.record) : {}
  } catch {
    return {}
  }
}

export const errorHandling = (deps: Pick<Deps, 'logger' | 'keys' | 'meter' | 'clock'>) =>
  new Elysia({ name: 'earn/errors' }).onError({ as: 'global' }, ({ code, error, request, set }) => {
    const { logger } = deps
    const state = requestState(request)
    let api = toApiError(code, error, request)
    // ConfigError's message names the variable and what is wrong with it; the plugins keep URLs (keys) out of it.
    if (error instanceof ConfigError) logger.error({ msg: 'configuration refused', requestId: state?.id, error: error.message })
    const store = api ? undefined : storeUnavailable(error)
    if (store) {
      // The operator's to see (which store, which code); the client only learns to come back.
      logger.error({ msg: 'store unavailable', requestId: state?.id, reason: store, error: loggableError(error).error })
      api = new UnavailableError(`${STORE_STATE[store]}; retry with exponential backoff (request id ${state?.id ?? 'unknown'})`, { database: store })
    }
    if (!api) {
      logger.error({ msg: 'unhandled error', requestId: state?.id, ...loggableError(error) })
      api = new ApiError('INTERNAL', `internal error; retry with exponential backoff (request id ${state?.id ?? 'unknown'})`)
    }
    if (state) state.status = api.status
    const headers = { ...(set.headers as Record<string, string>), ...state?.headers, 'x-request-id': state?.id }
    // Refused before any route (no route takes the path, or the Host is not one): a valid key's usage is added here.
    if ((code === 'NOT_FOUND' || api instanceof HostError) && !state?.auth && request.headers.has('x-api-key'))
      return usageHeaders(deps, request).then((usage) => envelopeResponse(api, { ...headers, ...usage }))
    return envelopeResponse(api, headers)
  })
