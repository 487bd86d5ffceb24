/**
 * The chain reads of one portfolio, through the wallet's ecosystem plugin. Everything that does not depend on
 * another read starts at once (every balance, each chain's check that its RPC serves it, and a member's vault
 * flows), so the plugin can fold them into few round trips (one Multicall3 call per EVM chain for the balances); the
 * valuations of the positions found go next, together (with a non-member's flows of the vaults it holds). Any chain
 * that cannot be read fails the whole portfolio (503): a portfolio with a chain silently missing would understate the
 * wallet. A contract the chain answered for but that no longer reads as what the catalog
 * says (a token that is no ERC-20, a vault whose conversion reverts: an upgrade gone wrong, a self-destruct) is not a
 * chain failure, and no retry would help: it is named in `unreadable`, and the rest of the portfolio is read.
 */
import { ApiError, isChainNotServed } from '../errors.ts'
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
  /** By opportunity id; missing where the receipt token could not be read. */
  shares: Map<string, bigint>
  /** By opportunity id; only where shares > 0 and the vault could value them. */
  assets: Map<string, bigint>
  /** Contracts the chain refused to read as the catalog says they are (canonical addresses). */
  unreadable: Unreadable[]
}

export interface Unreadable {
  chainId: string
  /** The token or vault, canonical. */
  address: string
  reason: string
}

const REFUSED = Symbol('refused')

async function fromChain<T>(chainId: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (e) {
    if (e instanceof ApiError) throw new PortfolioChainError(chainId, e)
    throw e
  }
}

/** `fromChain`, where the plugin's refusal of this contract (a 400 about it) is noted rather than failing the rest. */
async function ofContract<T>(unreadable: Unreadable[], chainId: string, address: string, read: () => Promise<T>): Promise<T | typeof REFUSED> {
  try {
    return await read()
  } catch (e) {
    if (!(e instanceof ApiError)) throw e
    // A refusal about the chain (no RPC configured for it) is the deployment's, as an outage is: the whole answer.
    if (e.code !== 'INVALID_ARGUMENT' || isChainNotServed(e)) throw new PortfolioChainError(chainId, e)
    unreadable.push({ chainId, address, reason: e.message })
    return REFUSED
  }
}

/**
 * `history`: whose vault histories (flows) are read. `all` (a member of this deployment) reads every vault's, at once
 * with the balances, so a position withdrawn in full still shows what it earned; `held` (any other address) reads
 * only those of the vaults the wallet holds shares in now, once the balances say which: a history is a scan of the
 * chain's event logs, and a publishable key, public in a web page, could otherwise have every address on the chain
 * scanned from its vaults' first blocks, at the operator's RPC's cost.
 */
export async function readWallet(
  { plugin, client }: LoadedEcosystem,
  owner: string,
  tokens: readonly CatalogToken[],
  opportunities: readonly LiveOpportunity[],
  history: 'all' | 'held',
): Promise<WalletReading> {
  const unreadable: Unreadable[] = []
  const flowsOf = (of: readonly LiveOpportunity[]) =>
    Promise.all(
      of.map(({ listing }) =>
        fromChain(listing.chainId, () =>
          plugin.balance.flows(client, { chainId: listing.chainId, vaultAddress: listing.vaultAddress, owner, fromBlock: listing.eventsFromBlock }),
        ),
      ),
    )
  const chains = [...new Set(tokens.map((t) => t.chainId))]
  const [balances, allFlows] = await Promise.all([
    Promise.all(tokens.map((t) => ofContract(unreadable, t.chainId, t.address, () => plugin.balance.read(client, { chainId: t.chainId, owner, token: t.address })))),
    history === 'all' ? flowsOf(opportunities) : undefined,
    // An RPC serving another chain answers every read, with that chain's balances: never shown as this one's.
    Promise.all(chains.map((chainId) => fromChain(chainId, async () => plugin.balance.servesChain?.(client, chainId)))),
  ])
  const reading: WalletReading = {
    balances: new Map(tokens.flatMap((t, i) => (balances[i] === REFUSED ? [] : [[tokenKey(t.chainId, t.address), balances[i]!] as const]))),
    flows: new Map(allFlows ? opportunities.map((o, i) => [o.listing.id, allFlows[i]!]) : []),
    shares: new Map(),
    assets: new Map(),
    unreadable,
  }
  const held = opportunities.filter((o) => {
    // The receipt token is among `tokens` (catalogTokens lists every opportunity's); refused, the shares are unknown.
    const shares = reading.balances.get(tokenKey(o.listing.chainId, o.facts.receiptToken))
    if (shares === undefined) return false
    reading.shares.set(o.listing.id, shares)
    return shares > 0n
  })
  const [values, heldFlows] = await Promise.all([
    Promise.all(
      held.map(({ listing }) =>
        ofContract(unreadable, listing.chainId, listing.vaultAddress, () =>
          plugin.balance.assets(client, { chainId: listing.chainId, vaultAddress: listing.vaultAddress, shares: reading.shares.get(listing.id)! }),
        ),
      ),
    ),
    allFlows ? undefined : flowsOf(held),
  ])
  heldFlows?.forEach((f, i) => reading.flows.set(held[i]!.listing.id, f))
  held.forEach((o, i) => {
    const value = values[i]!
    if (value !== REFUSED) reading.assets.set(o.listing.id, value)
  })
  return reading
}
