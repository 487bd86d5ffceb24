/**
 * Request bodies are read here, and every way one can be wrong (malformed JSON, a NUL character in a string, over
 * 1 MiB) leaves as a marker for the guard, which answers 401 for a bad key first and puts the metering headers on
 * the answer. A body of another type is kept as text, never parsed as a form: the route's schema then refuses it
 * with "send JSON", also after the key check.
 */
import { ApiError } from '@earn/core'
import { Elysia } from 'elysia'

export const MAX_BODY_BYTES = 1024 * 1024
export const MALFORMED_JSON = Symbol('malformed JSON')
export const BODY_TOO_LARGE = Symbol('body too large')

/** A body with a NUL character in a string: no field takes one, and PostgreSQL cannot store one in text. */
export class NulInBody {
  constructor(readonly field: string) {}
}

/** Where a NUL sits in a parsed body (`a.b.0`), if anywhere. A walk with its own stack: JSON may nest deeper than ours. */
function nulAt(body: unknown): string | undefined {
  const pending: [unknown, string][] = [[body, '']]
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [value, path] = next
    if (typeof value === 'string') {
      if (value.includes('\0')) return path || 'body'
    } else if (typeof value === 'object' && value !== null) {
      // Reversed onto the stack, so the first NUL in document order is the one named.
      for (const [key, child] of Object.entries(value).reverse()) {
        const at = path ? `${path}.${key}` : key
        if (key.includes('\0')) return at
        pending.push([child, at])
      }
    }
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

/**
 * The body as text, or `undefined` past the limit. A declared length is known before reading (Bun holds the body to
 * it); a chunked body is read only up to the limit, so a client cannot make the server buffer more.
 */
async function readBody(request: Request): Promise<string | undefined> {
  const declared = request.headers.get('content-length')
  if (declared !== null) return Number(declared) > MAX_BODY_BYTES ? undefined : request.text()
  if (!request.body) return ''
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    size += chunk.value.byteLength
    if (size > MAX_BODY_BYTES) {
      void reader.cancel()
      return undefined
    }
    chunks.push(chunk.value)
  }
  return Buffer.concat(chunks).toString('utf8')
}

// Parse hooks run only for requests with a body, so a GET pays nothing for the size check.
export const bodyParsing = new Elysia({ name: 'earn/body-parsing' }).onParse({ as: 'global' }, async ({ request, contentType }) => {
  const text = await readBody(request)
  if (text === undefined) return BODY_TOO_LARGE
  if (!isJson(contentType)) return text
  let body: unknown
  try {
    body = text === '' ? MALFORMED_JSON : JSON.parse(text)
  } catch {
    return MALFORMED_JSON
  }
  // JSON can carry a NUL only as the escape \u0000, so bodies without one are not walked.
  const nul = text.includes('\\u0000') ? nulAt(body) : undefined
  return nul === undefined ? body : new NulInBody(nul)
})
