import { InvalidArgumentError, NotFoundError, quoted } from '../errors.ts'

/** `field` is where the request named it: the path's `opportunityId`, or a stream's `targetOpportunityId`. */
export class OpportunityNotFoundError extends NotFoundError {
  constructor(opportunityId: string, field = 'opportunityId') {
    super(`opportunity ${quoted(opportunityId)} not found; list them with GET /v2/opportunities/`, { [field]: 'unknown opportunity' })
  }
}

/** Delisted by the operator: shown nowhere and closed to deposits and reward streams; its holders still withdraw. */
export class OpportunityDelistedError extends NotFoundError {
  constructor(opportunityId: string, field = 'opportunityId') {
    super(`opportunity ${opportunityId} is delisted: it takes no new deposits or reward streams (holders can still withdraw); list the open ones with GET /v2/opportunities/`, {
      [field]: 'delisted',
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
  /** `total`: how many were found, where only the first are listed (Infinity: more, not counted). */
  constructor(
    readonly problems: string[],
    total = problems.length,
  ) {
    const count = total === problems.length ? `${total} problem${total === 1 ? '' : 's'}` : `${Number.isFinite(total) ? total : 'more than ' + problems.length} problems; the first ${problems.length}`
    super(`the catalog has ${count}:\n  ${problems.join('\n  ')}`, { problems })
  }
}

