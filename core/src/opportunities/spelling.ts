/**
 * Catalog entries stored before chain ids had one spelling (a Solana public cluster by its CAIP-2 id), rewritten to
 * it: the `chainIds` filter, the store's same-vault check and the portfolio's token rows compare stored ids as text.
 * Actions keep the spelling they were built with, as each tag's MAC was signed over it (verify compares spellings).
 */
import { canonicalChainId, type EcosystemRegistry } from '../registry.ts'
import type { Store } from '../store/store.ts'
import type { Listing } from './schema.ts'

/** Rewrites every stored entry whose chain id its ecosystem spells otherwise; how many it rewrote. Idempotent. */
export async function respellStoredChains(deps: { store: Store; ecosystems: EcosystemRegistry }): Promise<number> {
  const rows = await deps.store.allOpportunities()
  let rewritten = 0
  for (const ecosystem of new Set(rows.map((r) => r.ecosystem))) {
    // An ecosystem this process does not load (or whose variables it refuses) keeps its rows as they are.
    const loaded = await deps.ecosystems.get(ecosystem).catch(() => undefined)
    if (!loaded) continue
    for (const row of rows.filter((r) => r.ecosystem === ecosystem)) {
      const chainId = canonicalChainId(loaded.plugin, row.chainId)
      if (chainId === row.chainId) continue
      const stored = JSON.parse(row.listing) as Listing
      const listing: Listing = { ...stored, chainId, depositTokens: stored.depositTokens.map((t) => ({ ...t, chainId })) }
      // Only the spelling changes, and only if the row is still as read: a refresh or an import since keeps its own.
      if (await deps.store.respellOpportunityChain(row.id, { chainId: row.chainId, listing: row.listing }, { chainId, listing: JSON.stringify(listing) })) rewritten++
    }
  }
  return rewritten
}
