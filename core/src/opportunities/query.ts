/**
 * Reading the catalog: the list with its filters and pagination, one opportunity, and the lookup the
 * action endpoints share. Only opportunities whose chain facts are known, of loaded ecosystems, exist
 * as far as the API is concerned.
 */
import { NATIVE_TOKEN } from '../ecosystem.ts'
import { addressProblems } from '../addressProblems.ts'
import { ApiError, quoted } from '../errors.ts'
import { pagination, parsePage, type PageRequest } from '../paging.ts'
import { canonicalChainId, type EcosystemRegistry, type LoadedEcosystem } from '../registry.ts'
import type { Store } from '../store/store.ts'
import { InvalidFilterError, OpportunityDelistedError, OpportunityNotFoundError } from './errors.ts'
import { type CatalogOpportunity, decodeOpportunity, isLive, type LiveOpportunity } from './records.ts'
import { DEFAULT_LIMIT, MAX_LIMIT, type OpportunityList, type OpportunityListQuery, type OpportunityResult } from './schema.ts'
import { toOpportunity } from './view.ts'

export interface QueryDeps {
  store: Store
  ecosystems: EcosystemRegistry
}


export interface ListFilter {
  chainIds?: string[]
  /** Canonical forms of the address in every loaded ecosystem that accepts it. */
  depositTokens?: string[]
  tvlGreaterThan?: number
  page: PageRequest
}

/** The query string to a filter; what does not parse is a 400 naming the parameter. */
export async function parseListQuery(ecosystems: EcosystemRegistry, q: OpportunityListQuery): Promise<ListFilter> {
  const loaded = await ecosystems.all()
  const filter: ListFilter = { page: parsePage(q, { fallback: DEFAULT_LIMIT, max: MAX_LIMIT }) }
  if (q.chainIds !== undefined) {
    const ids = q.chainIds.split(',').map((s) => s.trim()).filter(Boolean)
    if (!ids.length) throw new InvalidFilterError('chainIds', 'must list at least one chain id, comma-separated')
    // Each in its stored spelling: a chain the catalog lists as `mainnet` is found by its CAIP-2 id too.
    const canonical = ids.map((id) => {
      const owner = loaded.find((e) => e.plugin.ownsChain(id))
      if (!owner) throw new InvalidFilterError('chainIds', `contains "${quoted(id)}", which is not a chain id of ${ecosystems.ids.join(', ')}`)
      return canonicalChainId(owner.plugin, id)
    })
    filter.chainIds = [...new Set(canonical)]
  }
  if (q.depositToken !== undefined) {
    const input = q.depositToken.trim()
    // `native` (in any case, as a request's token fields take it) is every chain's own coin, as catalog deposit tokens name it (narrow it with chainIds).
    const forms = input.toLowerCase() === NATIVE_TOKEN ? [NATIVE_TOKEN] : loaded.filter((e) => e.plugin.address.isValid(input)).map((e) => e.plugin.address.parse(input))
    if (!forms.length) throw new InvalidFilterError('depositToken', `is not native, nor a token address of ${addressProblems(loaded, input)}`)
    filter.depositTokens = [...new Set(forms)]
  }
  if (q.tvlGreaterThan !== undefined) {
    const raw = q.tvlGreaterThan.trim()
    // Each digit has one place in the pattern: a long run of digits and a stray character is refused in linear time
    // (`\d+\.?\d*` could split the run every way, quadratic: 100,000 digits held the event loop for 8 s).
    if (!/^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?$/i.test(raw)) throw new InvalidFilterError('tvlGreaterThan', 'must be a USD amount, a finite number')
    filter.tvlGreaterThan = tvlThreshold(raw)
  }
  return filter
}

async function pluginsById(ecosystems: EcosystemRegistry): Promise<Map<string, LoadedEcosystem>> {
  return new Map((await ecosystems.all()).map((e) => [e.plugin.id, e]))
}

export async function listOpportunities(deps: QueryDeps, q: OpportunityListQuery): Promise<OpportunityList> {
  const filter = await parseListQuery(deps.ecosystems, q)
  const loaded = await pluginsById(deps.ecosystems)
  const { rows, total } = await deps.store.listOpportunities({
    ecosystems: [...loaded.keys()],
    chainIds: filter.chainIds,
    depositTokens: filter.depositTokens,
    tvlGreaterThan: filter.tvlGreaterThan,
    offset: filter.page.offset,
    limit: filter.page.limit,
  })
  const opportunities = rows
    .map(decodeOpportunity)
    .filter(isLive)
    .map((o) => toOpportunity(o, loaded.get(o.listing.ecosystem)!.plugin))
  return { opportunities, total, pagination: pagination(filter.page, total) }
}

/**
 * The opportunity with its loaded ecosystem, or undefined when the API does not serve it. A delisted one is found:
 * withdrawals from it go on, and the caller refuses what it closes. `load` gives the decoded
 * catalog entry (the action endpoints pass one that remembers it; see actions/lookups.ts).
 */
export async function findOpportunity(
  deps: QueryDeps,
  opportunityId: string,
  load: (id: string) => Promise<CatalogOpportunity | undefined> = async (id) => {
    const row = await deps.store.getOpportunity(id)
    return row && decodeOpportunity(row)
  },
): Promise<{ opportunity: LiveOpportunity; ecosystem: LoadedEcosystem } | undefined> {
  const opportunity = await load(opportunityId.toLowerCase())
  if (!opportunity || !isLive(opportunity)) return undefined
  try {
    return { opportunity, ecosystem: await deps.ecosystems.get(opportunity.listing.ecosystem) }
  } catch (e) {
    // An ecosystem this deployment does not load: its opportunities are not served.
    if (e instanceof ApiError && e.code === 'INVALID_ARGUMENT') return undefined
    throw e
  }
}

export async function getOpportunity(deps: QueryDeps, opportunityId: string): Promise<OpportunityResult> {
  const found = await findOpportunity(deps, opportunityId)
  if (!found) throw new OpportunityNotFoundError(opportunityId)
  if (found.opportunity.delistedAt !== null) throw new OpportunityDelistedError(opportunityId)
  return { opportunity: toOpportunity(found.opportunity, found.ecosystem.plugin) }
}

/** Past this many digits before the point (scaled to cents), a filter is above or below every TVL a double holds. */
const OUT_OF_RANGE_DIGITS = 400

/**
 * The double `t` for which `tvl > t` is exactly "more cents than `raw` USD": TVLs are stored as the double nearest a
 * whole number of cents (tvlUsd), so `t` is the one nearest floor(raw × 100) cents. `Number(raw)` rounded first: a
 * filter just under a TVL (4.99999999999999999999 under 5) read as equal to it and hid it. `raw` matches the filter's
 * pattern (digits, a point, an exponent); exponents of any size are weighed by digit count, never raised to.
 */
export function tvlThreshold(raw: string): number {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:e([+-]?\d+))?$/i.exec(raw)!
  const negative = m[1] === '-'
  const fraction = m[3] ?? ''
  const digits = `${m[2]}${fraction}`.replace(/^0+/, '')
  if (digits === '') return 0
  // raw × 100 = digits / 10^scale.
  const scale = fraction.length - Number(m[4] ?? 0) - 2
  const magnitude = digits.length - scale // digits of raw × 100 before its point (≤ 0: below one cent)
  if (magnitude > OUT_OF_RANGE_DIGITS) return negative ? -Number.MAX_VALUE : Number.MAX_VALUE
  let whole: bigint
  let rest = false
  if (magnitude <= 0) whole = 0n
  else if (scale <= 0) whole = BigInt(digits) * 10n ** BigInt(-scale)
  else {
    // The cents are the first `magnitude` digits (at most 400); the rest only says whether a fraction of one remains.
    whole = BigInt(digits.slice(0, magnitude))
    rest = /[1-9]/.test(digits.slice(magnitude))
  }
  if (magnitude <= 0) rest = true
  // floor(raw × 100): toward minus infinity for a negative filter with a fraction of a cent.
  const cents = negative ? -whole - (rest ? 1n : 0n) : whole
  const abs = cents < 0n ? -cents : cents
  const t = Number(`${cents < 0n ? '-' : ''}${abs / 100n}.${(abs % 100n).toString().padStart(2, '0')}`)
  return t === Infinity ? Number.MAX_VALUE : t === -Infinity ? -Number.MAX_VALUE : t
}
