import { ApiError, InvalidArgumentError, UnavailableError } from '../errors.ts'

/** No loaded ecosystem accepts the address's form; `field` names where it came from (`address`, `addresses[3]`). */
export class UnknownWalletAddressError extends InvalidArgumentError {
  /** `problems`: each ecosystem with its reason, `evm (reason), solana (reason)`. */
  constructor(field: string, problems: string) {
    super(`${field} is not a wallet address of ${problems}`, { [field]: `not an address of ${problems}` })
  }
}

/**
 * A chain the portfolio must read did not answer, or this deployment cannot read it (no RPC for a chain the
 * catalog lists). Either way the caller can do nothing but retry: a 503, never a portfolio with a chain missing.
 */
export class PortfolioChainError extends UnavailableError {
  constructor(chainId: string, cause: ApiError) {
    super(
      cause.code === 'UNAVAILABLE' ? cause.message : `chain ${chainId} cannot be read by this server now (${cause.message}); try again later`,
      // The chain, and where the plugin's 503 named the setting to check (SOLANA_RPC_URL, TON_API_URL), that too.
      cause.code === 'UNAVAILABLE' ? { ...cause.context, chainId } : { chainId },
      { cause },
    )
  }
}
