/**
 * Keeping the catalog's chain facts fresh, off the request path. One pass reads every vault; a vault
 * whose chain fails keeps its last facts (the failure is noted and logged), and facts are written only while the
 * entry still holds the listing they were read for. Each chain's vaults are read apart from the others': a chain
 * whose RPC hangs holds up only its own. The scheduler runs a pass,
 * waits the interval, runs the next: passes never overlap, and stopping ends the one in flight after the vaults it is
 * reading.
 */
import type { Clock } from '../clock.ts'
import { ConfigError } from '../config.ts'
import type { EcosystemRegistry } from '../registry.ts'
import type { Store } from '../store/store.ts'
import { disagreements, inGroups, readChainFacts } from './chain.ts'
import { decodeOpportunity, tvlOf } from './records.ts'
import type { ChainFacts, Listing } from './schema.ts'

/** Structurally the server's logger; core does not import it. */
export interface RefreshLog {
  info(fields: Record<string, unknown>): void
  error(fields: Record<string, unknown>): void
}

export interface RefreshDeps {
  store: Store
  ecosystems: EcosystemRegistry
  clock: Clock
  logger: RefreshLog
}

export interface RefreshSummary {
  refreshed: number
  failed: number
}


const firstLine = (e: unknown) => (e instanceof Error ? e.message.split('\n')[0]! : String(e)).slice(0, 300)

/** `signal`: once aborted, no further group of vaults is started (a stopping server waits only for those in flight). */
export async function refreshCatalog(deps: RefreshDeps, signal?: AbortSignal): Promise<RefreshSummary> {
  const loaded = new Set<string>(deps.ecosystems.ids)
  const rows = (await deps.store.allOpportunities()).filter((r) => loaded.has(r.ecosystem))
  const summary: RefreshSummary = { refreshed: 0, failed: 0 }
  const one = async (row: (typeof rows)[number]) => {
    const { listing } = decodeOpportunity(row)
    try {
      const facts = await readChainFacts(await deps.ecosystems.get(listing.ecosystem), listing)
      const moved = assetMoved(listing, row.chainFacts, facts)
      if (moved) throw new Error(moved)
      const disagree = disagreements(listing, facts)
      // The chain is the authority (the API shows its decimals: records.ts depositTokenDecimals); a file that
      // disagrees is logged for the operator to fix.
      if (disagree.length) deps.logger.error({ msg: 'catalog entry disagrees with the chain', opportunityId: listing.id, disagree })
      const update = { listing: row.listing, chainFacts: JSON.stringify(facts), tvl: tvlOf(listing, facts), refreshedAt: deps.clock.now() }
      if (await deps.store.setOpportunityChainFacts(listing.id, update)) summary.refreshed++
      // Re-imported (or removed) while its chain was read: these facts may be another vault's, so they are
      // dropped; the import wrote what it knew, and the next pass reads the new listing.
      else deps.logger.info({ msg: 'catalog entry changed during the refresh; read again on the next pass', opportunityId: listing.id })
    } catch (e) {
      // A plugin that refuses its variables is the deployment's fault, not the vault's: it fails the pass (and stops
      // the server, whose start checks the plugins), and no entry carries it as its refresh error.
      if (e instanceof ConfigError) throw e
      summary.failed++
      const error = firstLine(e)
      deps.logger.error({ msg: 'catalog refresh failed; keeping the last values', opportunityId: listing.id, chainId: listing.chainId, error })
      await deps.store.setOpportunityRefreshError(listing.id, row.listing, error, deps.clock.now()).catch(() => {})
    }
  }
  const byChain = new Map<string, typeof rows>()
  for (const r of rows) {
    const key = `${r.ecosystem}|${r.chainId}`
    const same = byChain.get(key)
    if (same) same.push(r)
    else byChain.set(key, [r])
  }
  await Promise.all([...byChain.values()].map((chainRows) => inGroups(chainRows, one, signal)))
  return summary
}

/**
 * The vault's asset is now another token than the one the entry prices (the file's, else the one read before: an
 * upgraded vault): its facts would be valued at the old token's price and shown with its symbol, so they are not
 * taken. The entry keeps its last facts, and the operator imports it again.
 */
function assetMoved(listing: Listing, stored: string | null, facts: ChainFacts): string | undefined {
  const priced = listing.baseToken.address ?? (stored === null ? undefined : (JSON.parse(stored) as ChainFacts).baseToken)
  if (priced === undefined || priced === facts.baseToken) return undefined
  return `the vault's asset is now ${facts.baseToken}, not ${priced} as the catalog entry prices it; import the entry again with the new asset and its price`
}

export interface CatalogRefresher {
  /** Runs a pass now (besides the schedule); resolves with its summary. */
  refreshNow(): Promise<RefreshSummary>
  /** Stops the schedule, and a pass in flight after the vaults it is reading; resolves when that pass ends. */
  stop(): Promise<void>
}

/** Starts the schedule: a first pass at once, then one every `intervalMs` after the previous ends. */
export function startCatalogRefresher(deps: RefreshDeps, intervalMs: number): CatalogRefresher {
  let timer: ReturnType<typeof setTimeout> | undefined
  let stopped = false
  const stopping = new AbortController()
  let inFlight: Promise<RefreshSummary> | undefined
  const pass = (): Promise<RefreshSummary> => {
    inFlight ??= refreshCatalog(deps, stopping.signal)
      .then((s) => {
        if (s.refreshed || s.failed) deps.logger.info({ msg: 'catalog refreshed', ...s })
        return s
      })
      .catch((e) => {
        deps.logger.error({ msg: 'catalog refresh pass failed', error: firstLine(e) })
        return { refreshed: 0, failed: 0 }
      })
      .finally(() => {
        inFlight = undefined
      })
    return inFlight
  }
  const loop = async () => {
    await pass()
    if (!stopped) timer = setTimeout(loop, intervalMs)
  }
  void loop()
  return {
    refreshNow: pass,
    async stop() {
      stopped = true
      stopping.abort()
      clearTimeout(timer)
      await inFlight
    },
  }
}
