/**
 * The chain reads of one portfolio, through the wallet's ecosystem plugin. Everything that does not depend on
 * another read starts at once (every balance and every vault's flows), so the plugin can fold them into few round
 * trips (one Multicall3 call per EVM chain for the balances); the valuations of the positions found go next,
 * together. Any chain that cannot be read fails the whole portfolio (503): a portfolio with a chain silently
 * missing would understate the wallet.
 */
import { ApiError } from '../errors.ts'
import type { VaultFlows } from '../ecosystem.ts'
import type { LiveOpportunity } from '../opportunities/records.ts'
import type { LoadedEcosystem } from '../registry.ts'
import { type CatalogToken, tokenKey } from './catalog.ts'
import { PortfolioChainError } from './errors.ts'

export interface WalletReading {
  /** By `tokenKey(chainId, address)`. */
  balances: Map<string, bigint>
  /** By opportunity id. */
  flows: Map<string, VaultFlows | null>
  shares: Map<string, bigint>
  /** By opportunity id; only where shares > 0. */
  assets: Map<string, bigint>
}

async function fromChain<T>(chainId: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (e) {
    if (e instanceof ApiError) throw new PortfolioChainError(chainId, e)
    throw e
  }
}

export async function readWallet(
  { plugin, client }: LoadedEcosystem,
  owner: string,
  tokens: readonly CatalogToken[],
  opportunities: readonly LiveOpportunity[],
): Promise<WalletReading> {
  const [balances, flows] = await Promise.all([
    Promise.all(tokens.map((t) => fromChain(t.chainId, () => plugin.balance.read(client, { chainId: t.chainId, owner, token: t.address })))),
    Promise.all(
      opportunities.map(({ listing }) =>
        fromChain(listing.chainId, () =>
          plugin.balance.flows(client, { chainId: listing.chainId, vaultAddress: listing.vaultAddress, owner, fromBlock: listing.eventsFromBlock }),
        ),
      ),
    ),
  ])
  const reading: WalletReading = {
    balances: new Map(tokens.map((t, i) => [tokenKey(t.chainId, t.address), balances[i]!])),
    flows: new Map(opportunities.map((o, i) => [o.listing.id, flows[i]!])),
    shares: new Map(),
    assets: new Map(),
  }
  const held = opportunities.filter((o) => {
    // The receipt token is among `tokens` (catalogTokens lists every opportunity's).
    const shares = reading.balances.get(tokenKey(o.listing.chainId, o.facts.receiptToken)) ?? 0n
    reading.shares.set(o.listing.id, shares)
    return shares > 0n
  })
  const values = await Promise.all(
    held.map(({ listing }) =>
      fromChain(listing.chainId, () =>
        plugin.balance.assets(client, { chainId: listing.chainId, vaultAddress: listing.vaultAddress, shares: reading.shares.get(listing.id)! }),
      ),
    ),
  )
  held.forEach((o, i) => reading.assets.set(o.listing.id, values[i]!))
  return reading
}
