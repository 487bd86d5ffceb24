/**
 * Idempotency keys for the operations that create a row (a build's action, a stream): a client that lost an answer
 * sends the request again with the same key and gets the first answer, not a second row. Keys are the organization's
 * (any of its API keys), kept a day. Only a success is kept: a refusal created nothing, so the key is given up and the
 * request may be sent again as it is, or corrected. The request is matched by a fingerprint of its operation and
 * input, so a key sent with another body is refused rather than answered with the wrong row.
 */
import { createHash, randomUUID } from 'node:crypto'
import type { Clock } from './clock.ts'
import { ConflictError, InvalidArgumentError } from './errors.ts'
import { type IdempotencyClaim, IdempotencyClaimLost, type IdempotentAnswer } from './store/idempotency.ts'
import type { Store } from './store/store.ts'

export type { IdempotencyClaim, IdempotentAnswer } from './store/idempotency.ts'

/** The request header that carries the key. */
export const IDEMPOTENCY_HEADER = 'Idempotency-Key'
/** How long a key is kept once first used. */
export const IDEMPOTENCY_KEPT_MS = 24 * 3_600_000
/**
 * How long an attempt holds its key before another may take it over: a build or a creation that has not answered by
 * then lost its client long ago (chain calls time out well within it). Its row is refused should it finish after all.
 */
export const IDEMPOTENCY_LEASE_MS = 60_000
const MAX_KEY_LENGTH = 255
/**
 * Visible ASCII but the comma, spaces inside allowed: a key is copied between systems and logs as text. As a JSON
 * Schema pattern too (the API document's).
 */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x2b\\x2d-\\x7e](?:[\\x20-\\x2b\\x2d-\\x7e]*[\\x21-\\x2b\\x2d-\\x7e])?$'
const KEY = new RegExp(IDEMPOTENCY_KEY_PATTERN)
/**
 * What a 409 tells the client to wait: a request under way answers within a second or two as a rule, and the whole
 * lease left (up to a minute) kept a client that honours Retry-After waiting long after the answer was there (an audit).
 */
const BUSY_RETRY_AFTER_SECONDS = 1
/**
 * When a failed attempt's key is given up again after the give-up itself failed: the write that failed and the
 * give-up go out on the same broken connections when PostgreSQL drops them (a failover, a restart), and the key then
 * stayed held the whole lease, every retry a 409 with nothing under way (an audit). The pool reconnects by the next try.
 */
const RELEASE_RETRIES_MS = [250, 1000, 4000, 15_000]

export interface IdempotencyDeps {
  store: Pick<Store, 'claimIdempotencyKey' | 'releaseIdempotencyKey'>
  clock: Clock
}

export interface IdempotentRequest {
  orgId: string
  /** The header's value as sent. */
  key: string
  /** The operation's id (`actions.deposit`): one key names one operation's request. */
  operation: string
  /** What the request asked: its path parameters and body. */
  input: unknown
}

/** What a creation does with its claim: writes `answer(result)` with its row (see store/idempotency.ts). */
export type Answering = <T>(result: T) => IdempotentAnswer

/** The creation's result, or (`replayed`) the answer kept for its key. */
export interface Idempotent<T> {
  replayed: boolean
  result: T
}

/** The key still held by an attempt under way: a 409 with when to ask again. */
export class IdempotencyKeyBusyError extends ConflictError {
  readonly retryAfterSeconds = BUSY_RETRY_AFTER_SECONDS
  constructor(heldForSeconds: number) {
    super(
      `a request with this ${IDEMPOTENCY_HEADER} is still being answered; send it again in ${BUSY_RETRY_AFTER_SECONDS} s for its answer (the key is held at most ${heldForSeconds} s more)`,
      { [IDEMPOTENCY_HEADER]: 'in use by a request under way' },
    )
  }
}

/** JSON with every object's keys in one order: the same body sent with its fields reordered is the same request. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value !== null && typeof value === 'object')
    return `{${Object.keys(value)
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`
  return JSON.stringify(value) ?? 'null'
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

function checkKey(key: string): void {
  const problem =
    key === ''
      ? 'is empty'
      : key.length > MAX_KEY_LENGTH
        ? `is ${key.length} characters`
        : // A header sent twice reaches the server as its values joined by ", ": taken as one key, a retry whose proxy
          // repeated the header created a second row (an audit).
          key.includes(',')
          ? 'has a comma (or the header was sent twice)'
          : !KEY.test(key)
            ? 'has a character other than visible ASCII'
            : undefined
  if (problem)
    throw new InvalidArgumentError(`${IDEMPOTENCY_HEADER} must be one value of 1 to ${MAX_KEY_LENGTH} visible ASCII characters but the comma, spaces inside allowed (a UUID, say); it ${problem}`, {
      [IDEMPOTENCY_HEADER]: problem,
    })
}

/** Gives the key of a failed attempt up; where that fails too, tried again a few times in the background. */
async function release(store: IdempotencyDeps['store'], claim: IdempotencyClaim): Promise<void> {
  const attempt = (tries: number): Promise<void> =>
    store.releaseIdempotencyKey(claim).catch(() => {
      const wait = RELEASE_RETRIES_MS[tries]
      if (wait !== undefined) setTimeout(() => void attempt(tries + 1), wait).unref()
    })
  await attempt(0)
}

/**
 * Runs `create` once per key: `create` gets how to make its answer (undefined without a key) and must pass it to the
 * store with the row it writes. A key answered before gives that answer back without running `create`.
 */
export async function idempotently<T>(
  deps: IdempotencyDeps,
  request: IdempotentRequest | undefined,
  create: (answering: Answering | undefined) => Promise<T>,
): Promise<Idempotent<T>> {
  if (!request) return { replayed: false, result: await create(undefined) }
  checkKey(request.key)
  const now = deps.clock.now()
  const outcome = await deps.store.claimIdempotencyKey({
    // NUL never appears in a checked key nor in an organization id: the pair has one spelling.
    id: sha256(`${request.orgId}\u0000${request.key}`),
    fingerprint: sha256(`${request.operation}\u0000${canonical(request.input)}`),
    token: randomUUID(),
    now,
    leaseMs: IDEMPOTENCY_LEASE_MS,
    keptMs: IDEMPOTENCY_KEPT_MS,
  })
  switch (outcome.kind) {
    case 'answered':
      return { replayed: true, result: JSON.parse(outcome.answer) as T }
    case 'mismatch':
      throw new InvalidArgumentError(
        `this ${IDEMPOTENCY_HEADER} was used in the last 24 hours for another request (another operation, path or body); a new request needs a new key`,
        { [IDEMPOTENCY_HEADER]: 'used for another request' },
      )
    case 'running':
      // Never more than a lease: the holder's server may keep time ahead of this one's (keep them on NTP).
      throw new IdempotencyKeyBusyError(Math.min(IDEMPOTENCY_LEASE_MS / 1000, Math.max(1, Math.ceil((outcome.leaseUntil - now) / 1000))))
  }
  const claim: IdempotencyClaim = outcome.claim
  try {
    return { replayed: false, result: await create((result) => ({ claim, answer: JSON.stringify(result) })) }
  } catch (e) {
    // Nothing was created (or, had the row's commit landed unseen, its answer was too, and the release leaves it).
    await release(deps.store, claim)
    if (e instanceof IdempotencyClaimLost)
      throw new ConflictError(`a retry with this request's ${IDEMPOTENCY_HEADER} took it over once its ${IDEMPOTENCY_LEASE_MS / 1000} s lease had run out (by the retry's server clock); that retry's answer stands, nothing was recorded for this one`, {
        [IDEMPOTENCY_HEADER]: 'taken over by a retry',
      })
    throw e
  }
}
