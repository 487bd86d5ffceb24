/** The catalog's rows to and from what the opportunities module works with (rows hold JSON text). */
import type { OpportunityRecord } from '../store/schema.ts'
import { chainDecimals, tvlUsd } from './chain.ts'
import type { ChainFacts, Listing } from './schema.ts'

export interface CatalogOpportunity {
  listing: Listing
  /** Null until the chain was read once. */
  facts: ChainFacts | null
  tvl: number
  refreshedAt: number | null
  refreshError: string | null
  /** Set by `opportunity delist`: off the list and closed to deposits; its holders still withdraw. */
  delistedAt: number | null
}

/** An opportunity whose chain facts are known: the only kind the API serves. */
export type LiveOpportunity = CatalogOpportunity & { facts: ChainFacts; refreshedAt: number }

export const isLive = (o: CatalogOpportunity): o is LiveOpportunity => o.facts !== null && o.refreshedAt !== null

export function decodeOpportunity(row: OpportunityRecord): CatalogOpportunity {
  return {
    listing: JSON.parse(row.listing) as Listing,
    facts: row.chainFacts === null ? null : (JSON.parse(row.chainFacts) as ChainFacts),
    tvl: row.tvl,
    refreshedAt: row.refreshedAt,
    refreshError: row.refreshError,
    delistedAt: row.delistedAt,
  }
}

export { receiptDecimals } from './chain.ts'

/**
 * A deposit token's decimals: the chain's where it read them (the vault's asset, or the token's own `decimals()`),
 * else the file's. An import refuses a file that disagrees when the chain answers; an entry imported while it did
 * not (pending, or re-imported over kept facts) is refreshed later, and its amounts must not be shown in the file's
 * scale meanwhile (the refresh logs the disagreement for the operator).
 */
export function depositTokenDecimals(facts: ChainFacts, token: Listing['depositTokens'][number]): number {
  return chainDecimals(facts, token.address) ?? token.decimals
}

export const tvlOf = (listing: Listing, facts: ChainFacts) => tvlUsd(BigInt(facts.totalAssets), facts.decimals, listing.baseTokenPriceUsd)

/** `readAt`: when the chain's reading of `facts` began (their `refreshedAt`); `now` by default. */
export function encodeOpportunity(listing: Listing, facts: ChainFacts | null, now: number, readAt = now): OpportunityRecord {
  return {
    id: listing.id,
    ecosystem: listing.ecosystem,
    chainId: listing.chainId,
    vaultAddress: listing.vaultAddress,
    listing: JSON.stringify(listing),
    chainFacts: facts && JSON.stringify(facts),
    tvl: facts ? tvlOf(listing, facts) : 0,
    refreshedAt: facts ? readAt : null,
    refreshError: null,
    delistedAt: null,
    createdAt: now,
    updatedAt: now,
  }
}
