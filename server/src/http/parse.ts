/**
 * Request bodies are read here, and every way one can be wrong (malformed JSON, bytes that are not UTF-8, a NUL
 * character or a lone surrogate in a string, nesting past 16 levels, a content coding, over 64 KiB) leaves as a marker for the guard, which answers 401 for a bad key first and puts the metering headers on
 * the answer. A body of another type is never parsed (as a form, say): it is refused with "send JSON", also after the
 * key check.
 */
import { ApiError, type Clock, type KeyVerifier, type KeyWithOrganization, quoted } from '@earn/core'
import { OPERATIONS } from '@earn/core/metering/costs'
import { budgetOf, type Meter } from '@earn/core/metering/meter'
import { firstDuplicateKey } from '../duplicateKeys.ts'
import { fieldPath } from '../fieldPath.ts'
import { notIdleWhile } from './idle.ts'
import { Elysia } from 'elysia'

/**
 * Every body the API takes is under ~20 KiB (a signature is at most 16,384 characters). The bound is what a connection
 * may hold while its body arrives, before the request is admitted or charged: at 1 MiB, an audit's 4,000 connections on
 * a publishable key (public, in web pages), each a byte short of its body, held ~4 GB for the ~10 s until cut, free.
 */
export const MAX_BODY_BYTES = 64 * 1024
export const MALFORMED_JSON = Symbol('malformed JSON')
export const BODY_TOO_LARGE = Symbol('body too large')

/**
 * A body with a string no field takes: a NUL character (PostgreSQL cannot store one in text), or a lone surrogate
 * (an unpaired `\ud800`-`\udfff` escape, which is no character: stored as UTF-8 it would become U+FFFD).
 */
export class BadStringInBody {
  constructor(
    readonly field: string,
    readonly problem: 'nul' | 'lone surrogate',
  ) {}
}

/** A JSON body the server cannot read as sent: compressed, another charset, bytes that are not UTF-8, too deep, no object. */
export class UnreadableBody {
  constructor(
    /** `content-encoding`, `content-type`, `body`, or the body's field named twice. */
    readonly field: string,
    readonly problem: string,
    readonly message: string,
  ) {}
}

/** A body sent as another type than JSON (`sent`: its media type). */
const notJson = (sent: string | undefined) =>
  new UnreadableBody(
    'content-type',
    sent ? `is ${sent}; must be application/json` : 'missing; must be application/json',
    `the request body must be JSON: send it with content-type: application/json${sent ? ` (not ${sent})` : ''}`,
  )

/**
 * No body of ours nests past a few levels. Without a bound, a small deep value in a field the schema checks costs
 * Elysia's validation error seconds and gigabytes to describe (it prints the value indented), or overflows its stack.
 */
export const MAX_BODY_DEPTH = 16

function nestsDeeperThan(body: unknown, limit: number): boolean {
  // Level by level, with plain loops: Object.values over a 500,000-element array, and a [value, depth] pair per
  // nested value, took ~0.3 s of the one thread for a 1 MiB body, before its key is checked.
  let level: object[] = typeof body === 'object' && body !== null ? [body] : []
  for (let depth = 0; level.length; depth++) {
    if (depth === limit) return true
    const next: object[] = []
    for (const value of level) {
      const children = Array.isArray(value) ? value : Object.values(value)
      for (let i = 0; i < children.length; i++) {
        const child: unknown = children[i]
        if (typeof child === 'object' && child !== null) next.push(child)
      }
    }
    level = next
  }
  return false
}

/** Where the first string (value or key) that `bad` finds sits in a parsed body, in document order (`a.b[0]`). */
function badStringAt(body: unknown, bad: (s: string) => boolean): string | undefined {
  const path = firstBad(body, bad)
  return path === undefined ? undefined : fieldPath(path.reverse()) || 'body'
}

/**
 * The path to the first bad string, innermost segment first. Recursive with plain loops, and the path made only for
 * the one found: a `[value, path]` pair and a path string per value, over `Object.entries`, took ~0.25 s of the one
 * thread for a 1 MiB body ending in a NUL, before its key is checked. The depth is bounded already (16 levels).
 */
function firstBad(value: unknown, bad: (s: string) => boolean): (string | number)[] | undefined {
  if (typeof value === 'string') return bad(value) ? [] : undefined
  if (typeof value !== 'object' || value === null) return undefined
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = firstBad(value[i], bad)
      if (found) return (found.push(i), found)
    }
    return undefined
  }
  const keys = Object.keys(value)
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!
    if (bad(key)) return [key]
    const found = firstBad((value as Record<string, unknown>)[key], bad)
    if (found) return (found.push(key), found)
  }
  return undefined
}

/** A NUL, or a lone surrogate: JSON carries either only as an escape, so bodies without one are not walked. */
function badString(text: string, body: unknown): BadStringInBody | undefined {
  const nul = text.includes('\\u0000') ? badStringAt(body, (s) => s.includes('\0')) : undefined
  if (nul !== undefined) return new BadStringInBody(nul, 'nul')
  const lone = LONE_SURROGATE_ESCAPE.test(text) ? badStringAt(body, (s) => LONE_SURROGATE.test(s)) : undefined
  return lone === undefined ? undefined : new BadStringInBody(lone, 'lone surrogate')
}

// Any escape of a surrogate: paired ones are well-formed, and the walk tells them apart.
const LONE_SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/
// A high surrogate not followed by a low one, or a low one not preceded by a high one (code units: no `u` flag).
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

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
 * The body's bytes, or `undefined` past the limit. A declared length is known before reading (Bun holds the body to
 * it); a chunked body is read only up to the limit, so a client cannot make the server buffer more.
 */
async function readBody(request: Request): Promise<Uint8Array | undefined> {
  const declared = request.headers.get('content-length')
  if (declared !== null) return Number(declared) > MAX_BODY_BYTES ? undefined : request.bytes()
  if (!request.body) return new Uint8Array()
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
  return Buffer.concat(chunks)
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** Why a JSON body cannot be read as sent, before decoding it: a content coding, or a charset other than UTF-8. */
function unreadableAsSent(request: Request): UnreadableBody | undefined {
  const coding = request.headers.get('content-encoding')?.trim().toLowerCase()
  if (coding && coding !== 'identity')
    return new UnreadableBody('content-encoding', `${coding} is not supported; send the body uncompressed`, `request bodies are read uncompressed; send the body without content-encoding ${coding}`)
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(request.headers.get('content-type') ?? '')?.[1]?.toLowerCase()
  // ASCII is UTF-8's first 128 code points: the strict decoder still refuses any other byte.
  if (charset && !['utf-8', 'utf8', 'us-ascii', 'ascii'].includes(charset))
    return new UnreadableBody('content-type', `charset ${charset} is not supported; send UTF-8`, `JSON bodies are read as UTF-8; send the body in UTF-8, not ${charset}`)
  return undefined
}

/**
 * The body of a request without a valid key, not read: the guard answers 401 whatever it holds, and parsing and
 * checking a body a client need not pay for cost ~0.5 s of the one thread for a megabyte of small nested objects.
 */
export const UNAUTHENTICATED_BODY = Symbol('body of a request without a valid key')

/**
 * Parse hooks run only for requests with a body, so a GET pays nothing for the size check. Every operation that takes
 * a body needs a key, so the key is checked before the body is read. The guard checks it again once the body is in: a
 * body may take seconds to arrive, and a key revoked meanwhile must be refused as any other request on it (an audit
 * had a trickled body handled and charged on a key revoked after its headers). The check is cached, so the second
 * one costs a digest.
 */
export const bodyParsing = (deps: { keys: KeyVerifier; meter: Meter; clock: Clock }, costOf: (method: string, route: string) => number | undefined) =>
  new Elysia({ name: 'earn/body-parsing' }).onParse({ as: 'global' }, async ({ request, contentType, route, server }) => {
    // Not idle while the store or the meter answers (a silent one takes its timeout plus 2 s), idle again for the body.
    const refusal = await notIdleWhile(server, request, async () => {
      // A key check that failed (the store unreachable) is the guard's to report, as a 503: thrown here, Elysia would
      // answer it as a body that could not be parsed.
      const verified = await deps.keys.verify(request.headers.get('x-api-key')).catch(() => undefined)
      if (verified?.code !== 'VALID') return UNAUTHENTICATED_BODY
      // A small body costs less to read than asking the meter (a Redis round trip) whether it will be served.
      const length = Number(request.headers.get('content-length') ?? Number.NaN)
      if (!(length <= SMALL_BODY_BYTES) && (await cannotPay(deps, verified.record, costOf(request.method, route) ?? CHEAPEST))) return OVER_BUDGET_BODY
      return undefined
    })
    return refusal ?? parseBody(request, contentType)
  })

/** Bodies up to this size (every body the API's operations need) are read without asking the meter first. */
const SMALL_BODY_BYTES = 16 * 1024

/**
 * The body of a request on a key whose budget cannot pay for its operation now, not read (past 16 KiB, or sent
 * without a length): the guard answers 429 whatever it holds. A refusal is free, so reading it would give anyone
 * holding a spent key (a publishable one is in web pages) ~40 ms of the one thread per megabyte for nothing, every
 * other organization's requests waiting behind it.
 */
export const OVER_BUDGET_BODY = Symbol('body of a request on a spent budget')

/** Every operation costs at least this: a path no operation takes (a 404) is weighed at it. */
const CHEAPEST = Math.min(...Object.values(OPERATIONS).map((o) => o.cost))

/**
 * Whether the key's budget cannot pay `cost` now (a cost-0 admit: nothing charged), as the guard's admit would find;
 * a meter that fails says it can. The operation's own cost, not the cheapest: a key kept a few units above zero had
 * its deposit bodies (10 units) read whole, then refused for free.
 */
async function cannotPay(deps: { meter: Meter; clock: Clock }, record: KeyWithOrganization, cost: number): Promise<boolean> {
  if (cost <= 0) return false
  try {
    const d = await deps.meter.admit({ keyId: record.key.id, cost: 0, budget: budgetOf(record), now: deps.clock.now() })
    return d.hourly.used + cost > d.hourly.limit || (d.monthly.limit !== null && d.monthly.used + cost > d.monthly.limit)
  } catch {
    return false
  }
}

async function parseBody(request: Request, contentType: string) {
  const bytes = await readBody(request)
  if (bytes === undefined) return BODY_TOO_LARGE
  // Another media type is refused whatever its bytes, on every operation: also one that takes no fields (pause),
  // where no schema would.
  if (!isJson(contentType)) return bytes.length === 0 ? {} : notJson(mediaType(contentType))
  const unreadable = unreadableAsSent(request)
  if (unreadable) return unreadable
  let text: string
  try {
    // JSON is UTF-8 (RFC 8259 8.1): a lenient decoder would store U+FFFD in place of what the client meant.
    text = utf8.decode(bytes)
  } catch {
    return new UnreadableBody('body', 'is not valid UTF-8', 'request body is not valid UTF-8; JSON bodies must be sent in UTF-8')
  }
  // Sent chunked, no bytes at all is what Content-Length: 0 is, which never reaches a parse hook: no body, each
  // field then missing.
  if (text === '') return {}
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return MALFORMED_JSON
  }
  // Every body the API takes is an object; one that is not would be reported as each of its fields missing.
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    const sent = body === null ? 'null' : Array.isArray(body) ? 'an array' : `a ${typeof body}`
    return new UnreadableBody('body', `is ${sent}; must be a JSON object`, `the request body must be a JSON object, not ${sent}`)
  }
  if (nestsDeeperThan(body, MAX_BODY_DEPTH))
    return new UnreadableBody('body', `nests deeper than ${MAX_BODY_DEPTH} levels`, `request body nests deeper than ${MAX_BODY_DEPTH} levels; no field takes such a value`)
  // JSON.parse keeps the last of two values silently, where a proxy or a log may have read the first: `amount` twice
  // would build for a sum nobody checked.
  const twice = firstDuplicateKey(text)
  if (twice) {
    const field = quoted(twice.field)
    return new UnreadableBody(field, 'given twice', `request body names "${field}" twice; which value was meant is unknown: send it once`)
  }
  // A key may be spelt with escapes (`"to\u0053tring"`): any escape in the text means the keys are walked.
  const printing = PRINTING_KEY.test(text) || text.includes('\\u') ? keyPathNamed(body, PRINTING_KEYS) : undefined
  if (printing !== undefined)
    return new UnreadableBody(quoted(printing), 'is a name no field takes', `request body names "${quoted(printing)}", which no field of the API takes; leave it out`)
  return badString(text, body) ?? body
}

/**
 * Keys that decide how an object prints. Elysia describes a value failing validation by printing it, and an object
 * whose own `toString` is no function cannot be printed: its error then threw a TypeError, a 500 (an audit: any field
 * sent as `{"toString": 1}`, on every operation with a body). No field of ours takes either name.
 */
const PRINTING_KEYS = new Set(['toString', 'valueOf'])
const PRINTING_KEY = /"(?:toString|valueOf)"/

/** The path (`a.b[0].key`) to the first key in `names`, depth first in document order; plain loops, as firstBad's. */
function keyPathNamed(value: unknown, names: ReadonlySet<string>): string | undefined {
  const path = keySegmentsNamed(value, names)
  return path === undefined ? undefined : fieldPath(path.reverse())
}

/** keyPathNamed's segments, innermost first. */
function keySegmentsNamed(value: unknown, names: ReadonlySet<string>): (string | number)[] | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const below = keySegmentsNamed(value[i], names)
      if (below !== undefined) return (below.push(i), below)
    }
    return undefined
  }
  const keys = Object.keys(value)
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!
    if (names.has(key)) return [key]
    const below = keySegmentsNamed((value as Record<string, unknown>)[key], names)
    if (below !== undefined) return (below.push(key), below)
  }
  return undefined
}
