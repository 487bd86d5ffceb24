/**
 * `GET /v1|v2/wallet/{address}/portfolio`: the wallet's ecosystem from the address form, the catalog's served
 * opportunities of that ecosystem, the chain reads (read.ts), then the envelope: idle tokens, positions and what
 * each position earned. Both versions answer with this one function.
 */
import { type Ecosystem, type EcosystemId, formatToken, NATIVE_TOKEN } from '../ecosystem.ts'
import { InvalidFilterError } from '../opportunities/errors.ts'
import type { QueryDeps } from '../opportunities/query.ts'
import type { LiveOpportunity } from '../opportunities/records.ts'
import { toOpportunity } from '../opportunities/view.ts'
import { type CatalogToken, catalogTokens, servedOpportunities, tokenKey } from './catalog.ts'
import { earningsOf, hasHistory } from './earnings.ts'
import { readWallet, type WalletReading } from './read.ts'
import type { PortfolioQuery, PortfolioResult, ProductEarnings, ProtocolPosition, TokenBalance } from './schema.ts'
import { resolveWalletIn } from './wallet.ts'

export interface PortfolioParameters {
  address: string
  query: PortfolioQuery
  /** The request's: once its client has gone, the chain reads still waiting for their turn are not sent (read.ts). */
  signal?: AbortSignal
}

/** `true` or `false` (any case); absent or empty is false. Anything else is a 400 naming the parameter. */
export function parseIncludeProtocolTokens(raw: string | undefined): boolean {
  if (raw === undefined || raw === '') return false
  const value = raw.trim().toLowerCase()
  if (value === 'true') return true
  if (value === 'false') return false
  throw new InvalidFilterError('includeProtocolTokens', 'must be true or false')
}

type Plugin = Ecosystem<EcosystemId, unknown>


/** By chain (in the order given), then the chain's own coin first, then by symbol and address. */
function tokenOrder(chains: string[]) {
  return (a: CatalogToken, b: CatalogToken) =>
    chains.indexOf(a.chainId) - chains.indexOf(b.chainId) ||
    Number(b.address === NATIVE_TOKEN) - Number(a.address === NATIVE_TOKEN) ||
    a.symbol.localeCompare(b.symbol) ||
    a.address.localeCompare(b.address)
}

function tokenBalances(plugin: Plugin, tokens: CatalogToken[], reading: WalletReading, includeProtocolTokens: boolean): TokenBalance[] {
  return tokens
    .filter((t) => (reading.balances.get(tokenKey(t.chainId, t.address)) ?? 0n) > 0n && (includeProtocolTokens || !t.receipt))
    .map((t) => ({
      chainId: t.chainId,
      address: formatToken(plugin, t.address),
      symbol: t.symbol,
      decimals: t.decimals,
      balance: reading.balances.get(tokenKey(t.chainId, t.address))!.toString(),
    }))
}

function position(plugin: Plugin, o: LiveOpportunity, reading: WalletReading): ProtocolPosition {
  const shown = toOpportunity(o, plugin)
  return {
    opportunityId: shown.id,
    name: shown.name,
    chainId: shown.chainId,
    protocol: shown.protocol,
    vaultAddress: shown.vaultAddress,
    receiptToken: shown.receiptToken,
    baseToken: shown.baseToken,
    shares: reading.shares.get(o.listing.id)!.toString(),
    assets: reading.assets.get(o.listing.id)!.toString(),
  }
}

function productEarnings(plugin: Plugin, o: LiveOpportunity, reading: WalletReading): ProductEarnings {
  return {
    opportunityId: o.listing.id,
    chainId: o.listing.chainId,
    baseToken: toOpportunity(o, plugin).baseToken,
    ...earningsOf(reading.flows.get(o.listing.id) ?? null, reading.assets.get(o.listing.id) ?? 0n),
  }
}

export async function getPortfolio(deps: QueryDeps, p: PortfolioParameters): Promise<PortfolioResult> {
  const includeProtocolTokens = parseIncludeProtocolTokens(p.query.includeProtocolTokens)
  const wallet = await resolveWalletIn(deps.ecosystems, p.address, 'address')
  const { plugin } = wallet.ecosystem

  const { opportunities, standsFor } = await servedOpportunities(deps.store, plugin.id)
  // A stable order whatever the TVLs did since the last request: chain, then name, then id.
  const chains = [...new Set(opportunities.map((o) => o.listing.chainId))].sort()
  opportunities.sort(
    (a, b) =>
      chains.indexOf(a.listing.chainId) - chains.indexOf(b.listing.chainId) ||
      a.listing.name.localeCompare(b.listing.name) ||
      a.listing.id.localeCompare(b.listing.id),
  )
  const tokens = catalogTokens(plugin, opportunities).sort(tokenOrder(chains))
  const acted = new Set((await deps.store.opportunitiesActedOn(plugin.id, wallet.address)).map(standsFor))
  const reading = await readWallet(wallet.ecosystem, wallet.address, tokens, opportunities, acted, p.signal)

  return {
    portfolio: {
      productsEarnings: opportunities
        // A position whose shares or value could not be read has no current value to show.
        .filter((o) => reading.shares.has(o.listing.id) && (reading.shares.get(o.listing.id) === 0n || reading.assets.has(o.listing.id)))
        .filter((o) => hasHistory(reading.flows.get(o.listing.id) ?? null, reading.shares.get(o.listing.id) ?? 0n))
        .map((o) => productEarnings(plugin, o, reading)),
      holdings: {
        wallets: [
          {
            address: plugin.address.format(wallet.address),
            ecosystem: plugin.id,
            tokens: tokenBalances(plugin, tokens, reading, includeProtocolTokens),
            protocols: opportunities.filter((o) => reading.assets.has(o.listing.id)).map((o) => position(plugin, o, reading)),
            unreadable: reading.unreadable.map((u) => ({ chainId: u.chainId, address: formatToken(plugin, u.address), reason: u.reason })),
          },
        ],
      },
    },
  }
}
