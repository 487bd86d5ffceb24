/** An opportunity as the API shows it: the listing and the chain facts together, addresses in display form. */
import { type Ecosystem, type EcosystemId, formatContract, formatToken } from '../ecosystem.ts'
import { depositTokenDecimals, receiptDecimals, type LiveOpportunity } from './records.ts'
import type { Opportunity } from './schema.ts'

export function toOpportunity(o: LiveOpportunity, plugin: Ecosystem<EcosystemId, unknown>): Opportunity {
  const { listing, facts } = o
  // Tokens may be `native` (a chain's own coin), which has no address form.
  const show = (token: string) => formatToken(plugin, token)
  return {
    id: listing.id,
    name: listing.name,
    ...(listing.description === undefined ? {} : { description: listing.description }),
    ecosystem: listing.ecosystem,
    chainId: listing.chainId,
    protocol: listing.protocol,
    vaultAddress: formatContract(plugin, listing.vaultAddress),
    baseToken: { address: show(facts.baseToken), symbol: listing.baseToken.symbol, decimals: facts.decimals, chainId: listing.chainId },
    receiptToken: {
      address: show(facts.receiptToken),
      symbol: listing.receiptToken.symbol,
      decimals: receiptDecimals(listing, facts),
      chainId: listing.chainId,
    },
    depositTokens: listing.depositTokens.map((t) => ({ ...t, address: show(t.address), decimals: depositTokenDecimals(facts, t) })),
    tvl: o.tvl,
    estimatedApr: listing.estimatedApr,
    minDepositAmountUsd: listing.minDepositAmountUsd,
    swapDirectEnabled: listing.swapDirectEnabled,
    swapRouteEnabled: listing.swapRouteEnabled,
    transactionalProperties: listing.transactionalProperties,
    totalAssets: facts.totalAssets,
    refreshedAt: new Date(o.refreshedAt).toISOString(),
  }
}
