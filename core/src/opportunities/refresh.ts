/**
 * Keeping the catalog's chain facts fresh, off the request path. One pass reads every vault; a vault
 * whose chain fails keeps its last facts (the failure is noted and logged), and facts are written only while the
 * entry still holds the listing they were read for. Each chain's vaults are read apart from the others': a chain
 * whose RPC hangs holds up only its own. The scheduler starts a pass every interval, each chain read again once its
 * last read has ended (a chain's reads never overlap), and stopping ends each read in flight after the vaults it is
 * reading.
 */
import type { Clock } from '../clock.ts'
import { ConfigError } from '../config.ts'
import type { EcosystemRegistry } from '../registry.ts'
import type { OpportunityRecord as Row } from '../store/schema.ts'
import type { Store } from '../store/store.ts'
import { disagreements, inGroups, readChainFacts, ReceiptsNotOneToOneError, VAULTS_AT_ONCE, vaultsAtOnce } from './chain.ts'
import { untakenOffers } from './offers.ts'
import { receiptHolders, receiptOf } from './receipts.ts'
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

/** The catalog's entries of the loaded ecosystems, by chain (`ecosystem|chainId`). */
async function entriesByChain(deps: RefreshDeps): Promise<Map<string, Row[]>> {
  const loaded = new Set<string>(deps.ecosystems.ids)
  const byChain = new Map<string, Row[]>()
  for (const r of await deps.store.allOpportunities()) {
    if (!loaded.has(r.ecosystem)) continue
    const key = `${r.ecosystem}|${r.chainId}`
    const same = byChain.get(key)
    if (same) same.push(r)
    else byChain.set(key, [r])
  }
  return byChain
}

const sum = (parts: readonly RefreshSummary[]): RefreshSummary => ({
  refreshed: parts.reduce((n, p) => n + p.refreshed, 0),
  failed: parts.reduce((n, p) => n + p.failed, 0),
})

/** One pass over every chain's vaults. `signal`: once aborted, no further group of vaults is started (a stopping server waits only for those in flight). */
export async function refreshCatalog(deps: RefreshDeps, signal?: AbortSignal): Promise<RefreshSummary> {
  return sum(await Promise.all([...(await entriesByChain(deps)).values()].map((rows) => refreshChain(deps, rows, signal))))
}

/** One chain's vaults, a group at a time. */
async function refreshChain(deps: RefreshDeps, rows: readonly Row[], signal?: AbortSignal): Promise<RefreshSummary> {
  const summary: RefreshSummary = { refreshed: 0, failed: 0 }
  // Each receipt token's holder among the chain's entries, the first imported (receipts.ts): a later entry under it
  // (imported while its chain did not answer, so not checked then) is not given facts.
  const holders = receiptHolders()
  for (const r of [...rows].sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id)))
    holders.offer({ ecosystem: r.ecosystem, chainId: r.chainId, id: r.id, vault: r.vaultAddress }, receiptOf(JSON.parse(r.listing) as Listing, r.chainFacts === null ? null : (JSON.parse(r.chainFacts) as ChainFacts)))
  const one = async (row: Row) => {
    const { listing } = decodeOpportunity(row)
    try {
      // Stored as the facts' time: of two reads (two processes, or an import's), the one begun later stands (store).
      const readAt = deps.clock.now()
      const facts = await readChainFacts(await deps.ecosystems.get(listing.ecosystem), listing)
      const moved = assetMoved(listing, row.chainFacts, facts)
      if (moved) throw new Error(moved)
      const shared = holders.offer({ ecosystem: row.ecosystem, chainId: row.chainId, id: row.id, vault: row.vaultAddress }, facts.receiptToken)
      if (shared) {
        // Not served at all, its last facts neither (they may be from before the check, an earlier release's refresh):
        // its holders' receipts would count in both entries, and its withdrawals go to the wrong vault.
        summary.failed++
        // The earlier entry keeps it, delisted too (its holders still withdraw through it): this one must change.
        const error = `${shared}; import this entry again with its own vault's receipt token`
        deps.logger.error({ msg: 'catalog entry under another vault\'s receipt token; taken off the API', opportunityId: listing.id, chainId: listing.chainId, error })
        await deps.store.withdrawOpportunityFacts(listing.id, row.listing, error, deps.clock.now())
        return
      }
      const disagree = disagreements(listing, facts)
      if (row.chainFacts === null) {
        // Its first read: imported while its chain did not answer, what it offers was not checked as an import checks
        // an entry whose chain answers, so it is here, before it is listed (an audit: entries offering only a receipt
        // token, or a mode their ecosystem never builds, went on the API and refused every deposit). Its decimals
        // are the chain's, as for any entry (below).
        const problems = await untakenOffers(deps, listing, facts)
        if (problems.length) {
          summary.failed++
          const error = `${problems.join('; ')}; import the entry again, corrected`
          deps.logger.error({ msg: 'catalog entry refused by its chain on its first read; kept off the API', opportunityId: listing.id, chainId: listing.chainId, error })
          await deps.store.setOpportunityRefreshError(listing.id, row.listing, error, deps.clock.now())
          return
        }
      }
      // The chain is the authority (the API shows its decimals: records.ts depositTokenDecimals); a file that
      // disagrees is logged for the operator to fix.
      if (disagree.length) deps.logger.error({ msg: 'catalog entry disagrees with the chain', opportunityId: listing.id, disagree })
      const update = { listing: row.listing, chainFacts: JSON.stringify(facts), tvl: tvlOf(listing, facts), refreshedAt: readAt }
      if (await deps.store.setOpportunityChainFacts(listing.id, update)) summary.refreshed++
      // Re-imported (or removed) while its chain was read: these facts may be another vault's, so they are dropped; the
      // import wrote what it knew, and the next pass reads the new listing. Or facts read later were stored meanwhile.
      else deps.logger.info({ msg: 'catalog entry re-imported, or read later by another process, during the refresh; read again on the next pass', opportunityId: listing.id })
    } catch (e) {
      // A plugin that refuses its variables is the deployment's fault, not the vault's: it fails the chain's read (and
      // stops the server, whose start checks the plugins), and no entry carries it as its refresh error.
      if (e instanceof ConfigError) throw e
      summary.failed++
      const error = firstLine(e)
      if (e instanceof ReceiptsNotOneToOneError) {
        // Not served, its last facts neither (stored by a release before the check): its holdings would be valued wrong.
        deps.logger.error({ msg: 'catalog entry whose receipts cannot be valued; taken off the API', opportunityId: listing.id, chainId: listing.chainId, error })
        await deps.store.withdrawOpportunityFacts(listing.id, row.listing, `${error}; import the entry again, corrected`, deps.clock.now()).catch(() => {})
        return
      }
      deps.logger.error({ msg: 'catalog refresh failed; keeping the last values', opportunityId: listing.id, chainId: listing.chainId, error })
      await deps.store.setOpportunityRefreshError(listing.id, row.listing, error, deps.clock.now()).catch(() => {})
    }
  }
  // A plugin that fails to load fails each vault's read below, as it did before groups were sized by it.
  const size = await deps.ecosystems.get(rows[0]!.ecosystem).then(vaultsAtOnce, () => VAULTS_AT_ONCE)
  await inGroups(rows, one, signal, size)
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
  /** Runs a pass now (besides the schedule), joining a chain still being read; resolves with its summary. */
  refreshNow(): Promise<RefreshSummary>
  /** Stops the schedule, and each chain in flight after the vaults it is reading; resolves when those end. */
  stop(): Promise<void>
}

/**
 * Starts the schedule: a pass at once, then one every `intervalMs`. A pass reads again each chain whose last read has
 * ended and leaves one still being read to finish: a chain whose RPC hangs (each group of vaults ~2 × its timeout)
 * held every other chain's next read until its own pass ended, ~10 s more per 8 of its vaults (an audit: a TVL on a
 * healthy chain seen after 24 s at a 5 s interval; 2,000 entries on a hung chain, a pass of ~140 s at a 200 ms timeout).
 */
export function startCatalogRefresher(deps: RefreshDeps, intervalMs: number): CatalogRefresher {
  let timer: ReturnType<typeof setTimeout> | undefined
  let stopped = false
  const stopping = new AbortController()
  const reading = new Map<string, Promise<RefreshSummary>>()
  const readChain = (chain: string, rows: readonly Row[]) => {
    let read = reading.get(chain)
    if (read) return read
    const where = { ecosystem: rows[0]!.ecosystem, chainId: rows[0]!.chainId }
    read = refreshChain(deps, rows, stopping.signal)
      .then((s) => {
        if (s.refreshed || s.failed) deps.logger.info({ msg: 'catalog refreshed', ...where, ...s })
        return s
      })
      .catch((e) => {
        deps.logger.error({ msg: 'catalog refresh pass failed', ...where, error: firstLine(e) })
        return { refreshed: 0, failed: 0 }
      })
      .finally(() => reading.delete(chain))
    reading.set(chain, read)
    return read
  }
  const none = (): { done: Promise<RefreshSummary> } => ({ done: Promise.resolve({ refreshed: 0, failed: 0 }) })
  // Passes still reading the catalog: a stop waits for them too, as the store closes after it.
  const starting = new Set<Promise<unknown>>()
  /** Starts the chains' reads; `done` settles when they have all ended. */
  const start = async (): Promise<{ done: Promise<RefreshSummary> }> => {
    const catalog = entriesByChain(deps)
    starting.add(catalog)
    try {
      const byChain = await catalog
      if (stopping.signal.aborted) return none()
      const reads = [...byChain].map(([chain, rows]) => readChain(chain, rows))
      return { done: Promise.all(reads).then(sum) }
    } catch (e) {
      deps.logger.error({ msg: 'catalog refresh pass failed', error: firstLine(e) })
      return none()
    } finally {
      starting.delete(catalog)
    }
  }
  const loop = async () => {
    await start()
    if (!stopped) timer = setTimeout(loop, intervalMs)
  }
  void loop()
  return {
    refreshNow: async () => (await start()).done,
    async stop() {
      stopped = true
      stopping.abort()
      clearTimeout(timer)
      await Promise.allSettled(starting)
      await Promise.all(reading.values())
    },
  }
}
