/**
 * JSON bodies are parsed here so that a malformed body reaches the guard (which answers 401 for a
 * bad key first) as a marker instead of failing before the route is known, and so does a body with a NUL
 * character in a string. Bodies over 1 MiB stop.
 */
import { ApiError } from '@earn/core'
import { Elysia } from 'elysia'

export const MAX_BODY_BYTES = 1024 * 1024
export const MALFORMED_JSON = Symbol('malformed JSON')

/** A body with a NUL character in a string: no field takes one, and PostgreSQL cannot store one in text. */
export class NulInBody {
  constructor(readonly field: string) {}
}

/** Where a NUL sits in a parsed body (`a.b.0`), if anywhere. */
function nulAt(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return value.includes('\0') ? path || 'body' : undefined
  if (typeof value !== 'object' || value === null) return undefined
  for (const [key, child] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key
    if (key.includes('\0')) return at
    const found = nulAt(child, at)
    if (found !== undefined) return found
  }
  return undefined
}

export class PayloadTooLargeError extends ApiError {
  constructor() {
    super('PAYLOAD_TOO_LARGE', `request body is larger than ${MAX_BODY_BYTES} bytes`, { body: 'too large' })
  }
}

/** The media type of a Content-Type header, lowercased (media types are case-insensitive, RFC 9110 8.3.1). */
export function mediaType(contentType: string | null | undefined): string | undefined {
  return contentType?.split(';', 1)[0]!.trim().toLowerCase() || undefined
}

/** `application/json` and the structured `+json` types (`application/problem+json`), whatever their case. */
export function isJson(contentType: string | null | undefined): boolean {
  const type = mediaType(contentType)
  return type === 'application/json' || (type?.endsWith('+json') ?? false)
}

// Parse hooks run only for requests with a body, so a GET pays nothing for the size check.
export const bodyParsing = new Elysia({ name: 'earn/body-parsing' }).onParse({ as: 'global' }, async ({ request, contentType }) => {
  if (Number(request.headers.get('content-length') ?? 0) > MAX_BODY_BYTES) throw new PayloadTooLargeError()
  if (!isJson(contentType)) return
  const text = await request.text()
  if (text.length > MAX_BODY_BYTES) throw new PayloadTooLargeError()
  let body: unknown
  try {
    body = text === '' ? MALFORMED_JSON : JSON.parse(text)
  } catch {
    return MALFORMED_JSON
  }
  // JSON can carry a NUL only as the escape \u0000, so bodies without one are not walked.
  const nul = text.includes('\\u0000') ? nulAt(body, '') : undefined
  return nul === undefined ? body : new NulInBody(nul)
})
