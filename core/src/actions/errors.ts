import { InvalidArgumentError, NotFoundError, quoted } from '../errors.ts'

export class NotAMemberError extends NotFoundError {
  constructor(userAddress: string) {
    super(`wallet ${userAddress} is not a member; register it with POST /v2/membership/ first`, {
      userAddress: 'not a member',
    })
  }
}

export class ModeNotEnabledError extends InvalidArgumentError {
  constructor(mode: string, enabled: readonly string[]) {
    super(`mode ${mode} is not enabled on this opportunity${enabled.length ? `; use ${enabled.join(' or ')}` : ''}`, {
      mode: `not enabled (enabled: ${enabled.join(', ') || 'none'})`,
    })
  }
}

export class TokenNotAllowedError extends InvalidArgumentError {
  constructor(field: 'tokenIn' | 'tokenOut', reason: string) {
    super(`${field} ${reason}`, { [field]: reason })
  }
}

export class InvalidAmountError extends InvalidArgumentError {
  constructor(reason: string) {
    super(`amount ${reason}`, { amount: reason })
  }
}

/**
 * The spec's exact text, which integrators match; `context` gives what was asked for and what the wallet holds, in
 * smallest units. `source` is the one account the transaction spends from, where that holds less than the wallet
 * does (`available` is then that account's; tokens in the wallet's other accounts must be moved into it). `covers`
 * says what a chain's own coin is required for, where that is more than the amount (fees, rent, attached coin).
 */
export class InsufficientBalanceError extends InvalidArgumentError {
  readonly required: bigint
  readonly available: bigint
  readonly token: string
  constructor(p: { required: bigint; available: bigint; token: string; source?: string; covers?: string }) {
    super('insufficient token balance', {
      required: p.required.toString(),
      available: p.available.toString(),
      token: p.token,
      ...(p.source === undefined ? {} : { source: p.source }),
      ...(p.covers === undefined ? {} : { covers: p.covers }),
    })
    this.required = p.required
    this.available = p.available
    this.token = p.token
  }
}

export class UnsupportedChainError extends InvalidArgumentError {
  constructor(chainId: string, ecosystems: readonly string[]) {
    super(`chainId ${quoted(chainId)} is not a chain of any ecosystem this server loads (${ecosystems.join(', ')})`, {
      chainId: 'unsupported chain',
    })
  }
}

export class NoAttributionTagError extends NotFoundError {
  constructor() {
    // The plugins report no tag for a transaction that failed on chain too: it moved nothing, so it attributes nothing.
    super('no attribution tag in this transaction, or it failed on chain', { txHash: 'carries no earn:v1 tag, or failed on chain (a failed transaction attributes nothing)' })
  }
}
