import { ConflictError, InvalidArgumentError, NotFoundError, quoted } from '../errors.ts'

export class MembershipExistsError extends ConflictError {
  constructor(address: string) {
    super('membership already exists for this wallet; check with GET /v2/membership/ before creating', { address })
  }
}

export class DistributorNotFoundError extends NotFoundError {
  constructor(distributorId: string) {
    super(`distributor ${quoted(distributorId)} not found for this organization`, { distributorId: 'unknown distributor' })
  }
}

export type NonceProblem = 'unknown' | 'expired' | 'consumed' | 'other_wallet'

const NONCE_TEXT: Record<NonceProblem, string> = {
  unknown: 'nonce is unknown; request a new agreement with POST /v2/membership/agreement',
  expired: 'nonce has expired; request a new agreement and sign it promptly',
  consumed: 'nonce was already used; request a new agreement',
  other_wallet: 'nonce was issued to another wallet or ecosystem; request an agreement for this address',
}

export class InvalidNonceError extends InvalidArgumentError {
  constructor(readonly problem: NonceProblem) {
    super(NONCE_TEXT[problem], { nonce: problem })
  }
}

export class InvalidSignatureError extends InvalidArgumentError {
  constructor(reason: string) {
    super(`signature does not prove ownership of this wallet: ${reason}`, { signature: reason })
  }
}

export class InvalidUrlError extends InvalidArgumentError {
  constructor(reason: string) {
    super(`url must be the http(s) URL of your application: ${reason}`, { url: reason })
  }
}
