import { InvalidArgumentError, NotFoundError } from '../errors.ts'

export class OpportunityNotFoundError extends NotFoundError {
  constructor(opportunityId: string) {
    super(`opportunity ${opportunityId} not found; list them with GET /v2/opportunities/`, { opportunityId: 'unknown opportunity' })
  }
}

/** Delisted by the operator: shown nowhere and closed to deposits (and reward streams); its holders still withdraw. */
export class OpportunityDelistedError extends NotFoundError {
  constructor(opportunityId: string) {
    super(`opportunity ${opportunityId} is delisted: it takes no new deposits (holders can still withdraw); list the open ones with GET /v2/opportunities/`, {
      opportunityId: 'delisted',
    })
  }
}

/** A list filter that does not parse; `context` names it. */
export class InvalidFilterError extends InvalidArgumentError {
  constructor(field: string, reason: string) {
    super(`${field} ${reason}`, { [field]: reason })
  }
}

/** Every problem of a catalog file at once, each naming the entry and the field, so one edit fixes them all. */
export class CatalogError extends InvalidArgumentError {
  constructor(readonly problems: string[]) {
    super(`the catalog has ${problems.length} problem${problems.length === 1 ? '' : 's'}:\n  ${problems.join('\n  ')}`, { problems })
  }
}
