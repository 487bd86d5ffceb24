/**
 * The chain reads of one portfolio, through the wallet's ecosystem plugin. Everything that does not depend on
 * another read starts at once (every balance, each chain's check that its RPC serves it, and a member's vault
 * flows), so the plugin can fold them into few round trips (one Multicall3 call per EVM chain for the balances); the
 * valuations of the positions found go next, together (with a non-member's flows of the vaults it holds). Any chain
 * that cannot be read fails the whole portfolio (503): a portfolio with a chain silently missing would understate the
 * wallet. A contract the chain answered for but that no longer reads as what the catalog
 * says (a token that is no ERC-20, a vault whose conversion reverts: an upgrade gone wrong, a self-destruct) is not a
 * chain failure, and no retry would help: it is named in `unreadable`, and the rest of the portfolio is read.
 * Where each read is a request of its own (`balance.readsAtOnce`), they go that many at a time, and one still waiting
 * when the portfolio fails or its client has gone, or after waiting `PORTFOLIO_TURNS_MS` for its turn, is never sent.
 */
import { ApiError, isChainNotServed, UnavailableError } from '../errors.ts'
import { inTurn } from '../inTurn.ts'
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

/**
 * How long one of a portfolio's reads may wait for its turn, where they go a few at a time: past it, it is not sent
 * and the answer is a 503, as TON's capabilities are held to 20 s. The balances are all asked at once, so this bounds
 * them together: 128 at a time, a TON catalog of 3,000 entries (an audit's) on an endpoint answering in 9.5 s would
 * keep one wallet's reads going for most of an hour.
 */
export const PORTFOLIO_TURNS_MS = 20_000

export type Turn = <T>(chainId: string, read: () => Promise<T>) => Promise<T>

/**
 * Runs a portfolio's reads `readsAtOnce` at a time (all at once where absent); `stop`, or `gone` aborting (the
 * request's client has left), drops those still waiting. One that waits `ms` for its turn is an UnavailableError
 * about its chain; one given a free slot always runs.
 */
export function readTurns(readsAtOnce: number | undefined, ms = PORTFOLIO_TURNS_MS, gone?: AbortSignal): { run: Turn; stop(): void } {
  if (!readsAtOnce) return { run: (_, read) => read(), stop: () => {} }
  const stopped = new AbortController()
  const ended = gone ? AbortSignal.any([stopped.signal, gone]) : stopped.signal
  const limit = inTurn(readsAtOnce)
  return {
    run(chainId, read) {
      const waitsAtMost = AbortSignal.any([ended, AbortSignal.timeout(ms)])
      return limit(read, waitsAtMost).catch((e: unknown) => {
        if (e !== waitsAtMost.reason) throw e
        // Stopped: the portfolio failed or its client left, and no one reads this; else its time ran out.
        if (ended.aborted) throw new UnavailableError(`this portfolio's reads of chain ${chainId} were stopped`)
        throw new UnavailableError(`chain ${chainId} did not answer this portfolio's reads in time (one waited ${ms / 1000} s for its turn); retry later`)
      })
    },
    stop: () => stopped.abort(),
  }
}

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
 * Whose vault histories (flows) are read: those of the opportunities in `acted` (the wallet's deposits or withdrawals
 * built or verified through this deployment), at once with the balances, so a position withdrawn in full still shows
 * what it earned; and those of the vaults the wallet holds shares in now, once the balances say which. No other: a
 * history is a scan of the chain's event logs from the vault's first block, and a publishable key, public in a web
 * page, could otherwise have any address scanned across the whole catalog at the operator's RPC's cost (a member
 * costs anyone 6 units to make: an audit's fresh members cost ~2,000 eth_getLogs each, and flushed other
 * organizations' remembered histories).
 */
export async function readWallet(
  { plugin, client }: LoadedEcosystem,
  owner: string,
  tokens: readonly CatalogToken[],
  opportunities: readonly LiveOpportunity[],
  acted: ReadonlySet<string>,
  /** The request's signal: once its client has gone, reads still waiting are not sent. */
  gone?: AbortSignal,
): Promise<WalletReading> {
  const reads = readTurns(plugin.balance.readsAtOnce, PORTFOLIO_TURNS_MS, gone)
  try {
    return await readInTurns(plugin, client, reads.run, owner, tokens, opportunities, acted)
  } finally {
    // Done, or failed (one chain failing fails the whole answer): what still waits for its turn is not sent.
    reads.stop()
  }
}

async function readInTurns(
  plugin: LoadedEcosystem['plugin'],
  client: unknown,
  turn: Turn,
  owner: string,
  tokens: readonly CatalogToken[],
  opportunities: readonly LiveOpportunity[],
  acted: ReadonlySet<string>,
): Promise<WalletReading> {
  const unreadable: Unreadable[] = []
  const flowsOf = (of: readonly LiveOpportunity[]) =>
    Promise.all(
      of.map(({ listing }) =>
        fromChain(listing.chainId, () =>
          turn(listing.chainId, () =>
            plugin.balance.flows(client, { chainId: listing.chainId, vaultAddress: listing.vaultAddress, owner, fromBlock: listing.eventsFromBlock }),
          ),
        ),
      ),
    )
  const chains = [...new Set(tokens.map((t) => t.chainId))]
  const first = opportunities.filter((o) => acted.has(o.listing.id))
  const [balances, firstFlows] = await Promise.all([
    Promise.all(
      tokens.map((t) =>
        ofContract(unreadable, t.chainId, t.address, () => turn(t.chainId, () => plugin.balance.read(client, { chainId: t.chainId, owner, token: t.address, inBulk: true }))),
      ),
    ),
    flowsOf(first),
    // An RPC serving another chain answers every read, with that chain's balances: never shown as this one's.
    Promise.all(chains.map((chainId) => plugin.balance.servesChain && fromChain(chainId, () => turn(chainId, () => plugin.balance.servesChain!(client, chainId))))),
  ])
  const reading: WalletReading = {
    balances: new Map(tokens.flatMap((t, i) => (balances[i] === REFUSED ? [] : [[tokenKey(t.chainId, t.address), balances[i]!] as const]))),
    flows: new Map(first.map((o, i) => [o.listing.id, firstFlows[i]!])),
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
  // Held but not acted on: their histories were not read with the balances.
  const heldOnly = held.filter((o) => !acted.has(o.listing.id))
  const [values, heldFlows] = await Promise.all([
    Promise.all(
      held.map(({ listing }) =>
        ofContract(unreadable, listing.chainId, listing.vaultAddress, () =>
          turn(listing.chainId, () =>
            plugin.balance.assets(client, { chainId: listing.chainId, vaultAddress: listing.vaultAddress, shares: reading.shares.get(listing.id)! }),
          ),
        ),
      ),
    ),
    flowsOf(heldOnly),
  ])
  heldOnly.forEach((o, i) => reading.flows.set(o.listing.id, heldFlows[i]!))
  held.forEach((o, i) => {
    const value = values[i]!
    if (value !== REFUSED) reading.assets.set(o.listing.id, value)
  })
  return reading
}
