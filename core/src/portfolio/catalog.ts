/**
 * The part of the catalog a portfolio reads: every served opportunity of one ecosystem, and the tokens they name
 * (deposit, base and receipt tokens, plus each chain's own coin), each once per chain.
 */
import { type Ecosystem, type EcosystemId, NATIVE_TOKEN } from '../ecosystem.ts'
import { decodeOpportunity, depositTokenDecimals, isLive, receiptDecimals, type LiveOpportunity } from '../opportunities/records.ts'
import type { ActedOn, Store } from '../store/store.ts'

/**
 * Opportunities with known chain facts, of one ecosystem: the ones the API serves, and delisted ones (holders still
 * hold them). One position is one vault's receipt token: where it is listed under several ids (delisted, then imported
 * again under a new one), the listed entry stands for it, else the first imported, so shares and flows are not counted
 * twice. (An ERC-4626 vault is its own receipt token; a Solana or TON vault is a wallet, which may hold several products'
 * tokens: keyed by the vault alone, a second product at one wallet was left out of the portfolio, an audit.)
 * `standsFor` names the one standing for the position an action was built for: its opportunity's, where that is at the
 * vault the action was built for, else the vault's (audits: a wallet that withdrew everything before the vault was
 * relisted under a new id, or before its id was moved to another vault, lost its row, the history of the vault no
 * longer read for it).
 */
export async function servedOpportunities(
  store: Store,
  ecosystem: EcosystemId,
): Promise<{ opportunities: LiveOpportunity[]; standsFor: (acted: ActedOn) => string }> {
  // Pages by id (allOpportunities), not in TVL order, which could skip or repeat an entry a refresh moved across their boundary.
  const byPosition = new Map<string, LiveOpportunity & { createdAt: number }>()
  const positionOf = new Map<string, string>()
  const atVault = new Map<string, Set<string>>()
  for (const row of await store.allOpportunities()) {
    if (row.ecosystem !== ecosystem) continue
    const o = decodeOpportunity(row)
    if (!isLive(o)) continue
    // Stored canonical (the import parses every address), so one vault and one token have one spelling.
    const vault = tokenKey(row.chainId, row.vaultAddress)
    const key = `${vault}|${o.facts.receiptToken}`
    positionOf.set(row.id, key)
    atVault.set(vault, (atVault.get(vault) ?? new Set()).add(key))
    const seen = byPosition.get(key)
    // The listed entry, else the first imported (rows come in id order: a re-audit found the lowest id standing).
    const listedFirst = seen !== undefined && (seen.delistedAt === null) !== (o.delistedAt === null)
    if (seen === undefined || (listedFirst ? o.delistedAt === null : row.createdAt < seen.createdAt)) byPosition.set(key, { ...o, createdAt: row.createdAt })
  }
  const standsFor = ({ opportunityId, chainId, vault }: ActedOn) => {
    const own = positionOf.get(opportunityId)
    const there = chainId !== null && vault !== null ? [...(atVault.get(tokenKey(chainId, vault)) ?? [])] : []
    const key = own !== undefined && (there.length === 0 || there.includes(own)) ? own : (there[0] ?? own)
    return (key === undefined ? undefined : byPosition.get(key)?.listing.id) ?? opportunityId
  }
  return { opportunities: [...byPosition.values()], standsFor }
}

export interface CatalogToken {
  chainId: string
  /** Canonical address, or `native`. */
  address: string
  symbol: string
  decimals: number
  /** Some listed opportunity's receipt token: a position, left out of `tokens[]` unless asked for. */
  receipt: boolean
}

export const tokenKey = (chainId: string, address: string) => `${chainId}|${address}`

/** Every token the opportunities name, and each chain's own coin, once per (chain, address). */
export function catalogTokens(plugin: Pick<Ecosystem, 'nativeCoin'>, opportunities: readonly LiveOpportunity[]): CatalogToken[] {
  const tokens = new Map<string, CatalogToken>()
  const add = (t: Omit<CatalogToken, 'receipt'>, receipt = false) => {
    const key = tokenKey(t.chainId, t.address)
    const seen = tokens.get(key)
    if (seen) seen.receipt ||= receipt
    else tokens.set(key, { ...t, receipt })
  }
  // The catalog's own names first: a listed native token (say POL on Polygon) names the coin better than the plugin.
  for (const { listing, facts } of opportunities) {
    const chainId = listing.chainId
    for (const t of listing.depositTokens) add({ chainId, address: t.address, symbol: t.symbol, decimals: depositTokenDecimals(facts, t) })
    add({ chainId, address: facts.baseToken, symbol: listing.baseToken.symbol, decimals: facts.decimals })
    add({ chainId, address: facts.receiptToken, symbol: listing.receiptToken.symbol, decimals: receiptDecimals(listing, facts) }, true)
  }
  for (const chainId of new Set(opportunities.map((o) => o.listing.chainId))) add({ chainId, address: NATIVE_TOKEN, ...plugin.nativeCoin })
  return [...tokens.values()]
}
