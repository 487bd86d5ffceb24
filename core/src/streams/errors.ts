import { ConflictError, InvalidArgumentError, NotFoundError, quoted } from '../errors.ts'

/** Unknown, and another organization's: the same answer, so ids of other organizations reveal nothing. */
export class StreamNotFoundError extends NotFoundError {
  constructor(streamId: string) {
    super(`stream ${quoted(streamId)} not found; list yours with GET /v2/streams`, { streamId: 'unknown stream' })
  }
}

/** A body field that does not hold for a stream; `context` names it. */
export class InvalidStreamFieldError extends InvalidArgumentError {
  constructor(field: string, reason: string) {
    super(`${field} ${reason}`, { [field]: reason })
  }
}

export class NoTreasuryError extends InvalidArgumentError {
  constructor(chainId: string) {
    super(`token streams are not available on chain ${chainId}: this deployment has no stream treasury there (STREAM_TREASURIES)`, {
      chainId: 'no stream treasury configured for this chain',
    })
  }
}

/** The chain has not got the funding transaction (unknown hash, or not mined yet). */
export class FundingNotFoundError extends InvalidArgumentError {
  /** `why`: the chain's own account of it (mined, but short of the confirmations the operator asks), when it has one. */
  constructor(chainId: string, why?: string) {
    // Unknown and not yet mined look alike: a hash sent on another chain is never found, so the chain is named to check.
    super(`funding transaction not found on chain ${chainId} yet; retry after it is mined${why ? ` (${why})` : `, and check it was sent on chain ${chainId}`}`, {
      txHash: why ?? `not found on chain ${chainId} (unknown there, or not mined yet)`,
    })
  }
}

/** The mined transaction is not this stream's funding: `context.txHash` says what is missing. */
export class FundingRejectedError extends InvalidArgumentError {
  constructor(reason: string, details: Record<string, string> = {}) {
    super(`the transaction does not fund this stream: ${reason}`, { txHash: reason, ...details })
  }
}

export class FundingTransactionUsedError extends ConflictError {
  constructor() {
    super("this transaction already funded a stream from this creator in this reward token (recorded while this confirm read it)", {
      txHash: 'already recorded as the funding of a stream',
    })
  }
}
