/**
 * JSON bodies are parsed here so that a malformed body reaches the guard (which answers 401 for a
 * bad key first) as a marker instead of failing before the route is known. Bodies over 1 MiB stop.
 */
import { ApiError } from '@earn/core'
import { Elysia } from 'elysia'

export const MAX_BODY_BYTES = 1024 * 1024
export const MALFORMED_JSON = Symbol('malformed JSON')

export class PayloadTooLargeError extends ApiError {
  constructor() {
    super('PAYLOAD_TOO_LARGE', `request body is larger than ${MAX_BODY_BYTES} bytes`, { body: 'too large' })
  }
}

// Parse hooks run only for requests with a body, so a GET pays nothing for the size check.
export const bodyParsing = new Elysia({ name: 'earn/body-parsing' }).onParse({ as: 'global' }, async ({ request, contentType }) => {
  if (Number(request.headers.get('content-length') ?? 0) > MAX_BODY_BYTES) throw new PayloadTooLargeError()
  if (!contentType?.startsWith('application/json')) return
  const text = await request.text()
  if (text.length > MAX_BODY_BYTES) throw new PayloadTooLargeError()
  try {
    return text === '' ? MALFORMED_JSON : JSON.parse(text)
  } catch {
    return MALFORMED_JSON
  }
})
