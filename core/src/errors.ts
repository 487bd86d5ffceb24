/**
 * Every failure a client can see is an `ApiError`. The envelope the spec defines reverses the
 * naming Elysia and unkey use (`code` is the number there, the name here); only `toEnvelope` knows.
 */
export const STATUS = {
  INVALID_ARGUMENT: 400,
  UNAUTHORIZED: 401,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  RESOURCE_EXHAUSTED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
} as const

export type StatusName = keyof typeof STATUS
export type ErrorContext = Record<string, unknown>

export class ApiError extends Error {
  /** The HTTP number: what Elysia's pipeline reads. */
  readonly status: number
  constructor(
    readonly code: StatusName,
    message: string,
    readonly context: ErrorContext = {},
    options?: ErrorOptions,
  ) {
    super(message, options)
    this.name = new.target.name
    this.status = STATUS[code]
  }
}

/**
 * `text` cut to at most `max` characters with an ellipsis. Characters are code points, so a cut never splits a
 * surrogate pair (a lone half is what the server refuses in a body; it must not send one either).
 */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text
  const points = Array.from(text)
  return points.length <= max ? text : `${points.slice(0, max).join('').trimEnd()}…`
}

// C0 and C1 controls and DEL: a line break or an escape sequence in a name would forge rows in a text listing.
// C0, DEL and C1; the line and paragraph separators (a line break to any reader that honours them); the bidirectional
// embeddings, overrides and isolates, which reorder the text shown after them (an audit: a name holding U+202E).
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/

/** Whether a name meant as one line of text holds a control character. */
export const hasControlCharacter = (text: string): boolean => CONTROL.test(text)

/**
 * A client's value quoted in an error message (or a log line), cut where it is long: a 5,000-character id need not
 * come back whole. Control, line-breaking and bidirectional characters are written as `\uXXXX`: echoed raw, a
 * U+202E showed the rest of the message reversed, and a line break forged a line in a client's log (an audit).
 */
export function quoted(value: string, max = 80): string {
  const cut = cutText(value, max)
  const shown = cut.replace(CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
  return cut === value ? shown : `${shown} (${Array.from(value).length} characters)`
}

/** A client's value answered as data (in a JSON field, which escapes what it must), cut where it is long: not escaped. */
export function cutWithLength(value: string, max: number): string {
  const cut = cutText(value, max)
  return cut === value ? value : `${cut} (${Array.from(value).length} characters)`
}
const CONTROLS = new RegExp(CONTROL.source, 'g')

export class InvalidArgumentError extends ApiError {
  constructor(message: string, context: ErrorContext = {}, options?: ErrorOptions) {
    super('INVALID_ARGUMENT', message, context, options)
  }
}

export class UnauthorizedError extends ApiError {
  constructor(message: string, context: ErrorContext = {}) {
    super('UNAUTHORIZED', message, context)
  }
}

export class NotFoundError extends ApiError {
  constructor(message: string, context: ErrorContext = {}) {
    super('NOT_FOUND', message, context)
  }
}

/**
 * A transfer's recipient that could take what it is sent but never move it again (a program, a token account, a
 * token's own contract, the zero address): the plugin's finding, named by `reason` ("is a token account"). Whose
 * mistake it is (a stream's treasury is the operator's) is the caller's to say.
 */
export class UnfitRecipientError extends InvalidArgumentError {
  constructor(
    readonly reason: string,
    /** What becomes of funds sent there. */
    readonly consequence = 'what is sent there could never be moved again',
    /** The field that named the recipient (a catalog's `vaultAddress`, say). */
    field = 'to',
  ) {
    super(`${field === 'to' ? 'the recipient' : field} ${reason}: ${consequence}`, { [field]: reason })
  }
}

/**
 * A mined transaction short of the confirmations the operator asks of its chain: not counted yet, as one not mined
 * (404; a stream confirm's 400 retry), `context.txHash` saying how far it is.
 */
export class NotConfirmedYetError extends NotFoundError {}

export class ConflictError extends ApiError {
  constructor(message: string, context: ErrorContext = {}) {
    super('CONFLICT', message, context)
  }
}

/** A dependency (chain RPC, database, Redis) failed; the client should retry later. */
export class UnavailableError extends ApiError {
  constructor(message: string, context: ErrorContext = {}, options?: ErrorOptions) {
    super('UNAVAILABLE', message, context, options)
  }
}

/**
 * This server is not set up to read the chain at all (no RPC for it): the deployment's gap, neither the request's nor
 * the chain's. Core tells it apart from a refusal of an address or an outage by class (`isChainNotServed`), never by a
 * message. Two classes, as the status differs: 400 where the chain id is one a client names (EVM: this server
 * supports only the chains it has RPCs for), 503 where the ecosystem's one endpoint is missing (Solana, TON).
 */
export class NoChainRpcError extends InvalidArgumentError {}

/** See `NoChainRpcError`: the 503 form, naming the variable the operator must set. */
export class ChainNotConfiguredError extends UnavailableError {}

export const isChainNotServed = (e: unknown): boolean => e instanceof NoChainRpcError || e instanceof ChainNotConfiguredError

export class UnsupportedEcosystemError extends InvalidArgumentError {
  constructor(walletEcosystem: string, supported: readonly string[]) {
    super(`unsupported walletEcosystem "${quoted(walletEcosystem)}"; this server accepts ${supported.join(', ')}`, {
      walletEcosystem: `must be one of ${supported.join(', ')}`,
    })
  }
}

export class InvalidAddressError extends InvalidArgumentError {
  constructor(ecosystem: string, reason: string, field = 'address') {
    super(`address is not a valid ${ecosystem} address: ${reason}`, { [field]: reason })
  }
}

export interface ErrorEnvelope {
  code: number
  status: StatusName
  error: string
  context: ErrorContext
}

export const toEnvelope = (e: ApiError): ErrorEnvelope => ({
  code: e.status,
  status: e.code,
  error: e.message,
  context: e.context,
})

/** A nested `cause` chain, outermost first; used to find an `ApiError` wrapped by a library. */
export function findApiError(error: unknown): ApiError | undefined {
  let e: unknown = error
  for (let depth = 0; e && depth < 8; depth++) {
    if (e instanceof ApiError) return e
    e = (e as { cause?: unknown }).cause
  }
  return undefined
}
