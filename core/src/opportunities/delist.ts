/**
 * `opportunity delist ID` and `opportunity relist ID`. Delisting is a flag, not a delete: the entry leaves the list
 * and the get, takes no deposits and no new reward streams, while its holders still withdraw, their portfolios still
 * show the position, and its past actions still verify. An import leaves the flag as it is, so a catalog file that
 * still names a vault pulled for cause does not put it back.
 */
import type { Clock } from '../clock.ts'
import { NotFoundError, quoted } from '../errors.ts'
import type { Store } from '../store/store.ts'

export async function setOpportunityDelisted(
  deps: { store: Store; clock: Clock },
  opportunityId: string,
  delisted: boolean,
): Promise<{ id: string; delisted: boolean }> {
  const id = opportunityId.toLowerCase()
  if (!(await deps.store.setOpportunityDelisted(id, delisted, deps.clock.now()))) {
    // On one line whatever was typed: quoted() writes a line break in the id as an escape.
    throw new NotFoundError(`opportunity ${quoted(opportunityId)} is not in the catalog; see opportunity list`, { opportunityId: 'unknown opportunity' })
  }
  return { id, delisted }
}
