/**
 * `opportunity import FILE`: validates the whole file, reads each vault from its chain where the
 * chain answers, then upserts by id (a re-import updates). An entry whose chain does not answer keeps the facts
 * last read for the same vault (its TVL at the file's price); without any it is stored as pending: the server's
 * refresher fills it in, and until then the API does not list it. An entry the
 * chain contradicts (its facts differ from the file, or there is no vault at the address) stops the import, as does
 * one that contradicts the facts it keeps, or that would move a listed opportunity to a vault nobody could read.
 */
import type { Clock } from '../clock.ts'
import { findApiError, isChainNotServed } from '../errors.ts'
import type { EcosystemRegistry } from '../registry.ts'
import type { Store } from '../store/store.ts'
import { MAX_PROBLEMS, parseCatalog } from './catalog.ts'
import { disagreements, inGroups, readChainFacts, VAULTS_AT_ONCE, vaultsAtOnce } from './chain.ts'
import { CatalogError } from './errors.ts'
import { respellStoredChains } from './spelling.ts'
import { receiptHolders, receiptOf } from './receipts.ts'
import { noModes, untakenOffers } from './offers.ts'
import { encodeOpportunity, tvlOf } from './records.ts'
import type { ChainFacts, Listing } from './schema.ts'

export interface CatalogDeps {
  store: Store
  ecosystems: EcosystemRegistry
  clock: Clock
}

export interface ImportedOpportunity {
  id: string
  name: string
  result: 'created' | 'updated'
  /** Read now; kept from the last read (the chain did not answer, the vault is the same); or pending (none yet). */
  chainFacts: 'read' | 'kept' | 'pending'
  /** Why the chain facts were not read. */
  note?: string
  /** Delisted by the operator: the import updated it and left it delisted (`opportunity relist ID` lists it). */
  delisted?: true
}

/** The listing fields a plugin's vault read names when the chain contradicts them. */
const LISTING_ADDRESSES: readonly string[] = ['vaultAddress', 'baseToken', 'receiptToken']

/**
 * The listing field the plugin's vault read refused (the chain answered: no vault there, an asset that is no token),
 * or undefined for any other failure (a chain that did not answer, one this process is not configured for).
 */
function refusedAddress(e: unknown): string | undefined {
  const api = findApiError(e)
  return api?.code === 'INVALID_ARGUMENT' ? Object.keys(api.context).find((k) => LISTING_ADDRESSES.includes(k)) : undefined
}

const reason = (e: unknown) => (e instanceof Error ? e.message.split('\n')[0]! : String(e))

async function factsFor(
  deps: CatalogDeps,
  listing: Listing,
): Promise<{ facts: ChainFacts } | { pending: string; unserved: boolean } | { refused: string }> {
  try {
    return { facts: await readChainFacts(await deps.ecosystems.get(listing.ecosystem), listing) }
  } catch (e) {
    // The plugin refused one of the file's addresses (no vault there, an asset that is no token): the file is wrong
    // and no refresh would change that. A chain that did not answer, or one this process is not configured for (the
    // server may be), is pending.
    const field = refusedAddress(e)
    // Named as the file's shape problems are: the field, then what is wrong with it.
    if (field !== undefined) return { refused: `${field}: ${reason(e)}` }
    return { pending: reason(e), unserved: isChainNotServed(findApiError(e)) }
  }
}

type Read = Awaited<ReturnType<typeof factsFor>>

/**
 * Every entry's chain facts: chain by chain at once, a group of a chain's entries at a time (chain.ts `vaultsAtOnce`). A chain that answered
 * none of a group's reads, nor then its plugin's readiness probe, is asked no more: its later entries are pending for
 * the same reason. Read in file order across chains, a chain that did not answer held the import 2 x
 * EVM_RPC_TIMEOUT_MS for every 8 of its entries (an audit: ~43 minutes for 2,000, silent), and the other chains'
 * entries behind them.
 */
async function readAll(deps: CatalogDeps, listings: readonly Listing[]): Promise<Read[]> {
  const read: Read[] = new Array(listings.length)
  const byChain = new Map<string, number[]>()
  listings.forEach((l, i) => {
    const key = `${l.ecosystem}|${l.chainId}`
    byChain.set(key, byChain.get(key) ?? [])
    byChain.get(key)!.push(i)
  })
  await Promise.all(
    [...byChain.values()].map(async (entries) => {
      let down: Read | undefined
      const size = await deps.ecosystems.get(listings[entries[0]!]!.ecosystem).then(vaultsAtOnce, () => VAULTS_AT_ONCE)
      for (let at = 0; at < entries.length; at += size) {
        const group = entries.slice(at, at + size)
        const got = down ? group.map(() => down!) : await Promise.all(group.map((i) => factsFor(deps, listings[i]!)))
        group.forEach((i, j) => (read[i] = got[j]!))
        // Vaults may each fail for their own reasons (a call too heavy for the node) on a chain that answers: the chain
        // is asked whether it answers at all (its readiness probe) before it is given up (re-audits).
        if (!down && got.every((r) => 'pending' in r) && !(await chainAnswers(deps, listings[group[0]!]!))) down = got[0]
      }
    }),
  )
  return read
}

/** Whether the listing's chain answers its plugin's readiness probe (one chain per ecosystem where the probe names none). */
async function chainAnswers(deps: CatalogDeps, listing: Listing): Promise<boolean> {
  try {
    const { plugin, client } = await deps.ecosystems.get(listing.ecosystem)
    const chains = await plugin.health(client)
    return (chains.find((c) => c.chain === listing.chainId) ?? (chains.length === 1 ? chains[0] : undefined))?.ok === true
  } catch {
    return false
  }
}

/**
 * What an entry whose chain did not answer would do to the stored one: keep its facts (the same vault), which the
 * file must then agree with as it must with a fresh read; or, naming another vault, take a listed opportunity off
 * the API until the new vault is read, which a mistyped chain id or address would make last for good.
 */
async function pendingProblems(deps: CatalogDeps, listing: Listing, pending: string): Promise<{ problems: string[]; factsSeen: boolean }> {
  const stored = await deps.store.getOpportunity(listing.id)
  // Its offers are checked against the chain when a refresh first reads it (refresh.ts); what needs no chain, now.
  const none = noModes(listing)
  if (!stored?.chainFacts) return { problems: none ? [none] : [], factsSeen: false }
  const sameVault = stored.ecosystem === listing.ecosystem && stored.chainId === listing.chainId && stored.vaultAddress === listing.vaultAddress
  if (sameVault) {
    const kept = JSON.parse(stored.chainFacts) as ChainFacts
    return { problems: disagreements(listing, kept).concat(await untakenOffers(deps, listing, kept, { chainUnread: true })), factsSeen: true }
  }
  if (stored.delistedAt !== null) return { problems: none ? [none] : [], factsSeen: true }
  const field = stored.chainId !== listing.chainId ? 'chainId' : stored.ecosystem !== listing.ecosystem ? 'ecosystem' : 'vaultAddress'
  return {
    problems: [
      `${field}: moves a listed opportunity to a vault whose chain did not answer (${pending}); it would leave the API until ` +
        'that vault is read. Check the value, or import where that chain answers',
    ],
    factsSeen: true,
  }
}

/**
 * An import may point an id at another vault, but not off one deposits were built into, listed or delisted:
 * withdrawals and the portfolio find a holder's position through the opportunity's vault, so its holders would lose
 * both (an audit's delisted entry, moved, answered its holders' withdrawals "insufficient token balance").
 */
async function strandingProblems(deps: CatalogDeps, listing: Listing): Promise<string[]> {
  const stored = await deps.store.getOpportunity(listing.id)
  if (!stored) return []
  const field =
    stored.ecosystem !== listing.ecosystem ? 'ecosystem' : stored.chainId !== listing.chainId ? 'chainId' : stored.vaultAddress !== listing.vaultAddress ? 'vaultAddress' : undefined
  if (field === undefined) return []
  const problems: string[] = []
  if (await deps.store.hasDepositsInto(listing.id, stored.vaultAddress))
    problems.push(
      `${field}: moves this opportunity off the vault its deposits went into (${stored.vaultAddress} on chain ${stored.chainId}); their holders ` +
        'could no longer withdraw or see their positions through it. List the new vault under a new id (and delist this one to close it to deposits)',
    )
  // A stream is on its target's chain (its budget sits in that chain's treasury): moved off it, the stream would
  // reward depositors of another chain with a budget they cannot be paid from, and one like it could not be made.
  if (field !== 'vaultAddress') {
    const streams = await deps.store.liveStreamsTargeting(listing.id, deps.clock.now(), STREAMS_NAMED + 1)
    if (streams.length)
      problems.push(
        `${field}: moves this opportunity off chain ${stored.chainId}, where reward streams for it run (${streams.slice(0, STREAMS_NAMED).join(', ')}` +
          `${streams.length > STREAMS_NAMED ? ' and more' : ''}). List the new vault under a new id, or import the move once those streams are cancelled or ended`,
      )
  }
  return problems
}

/**
 * Entries whose receipt token another vault holds (receipts.ts), against the stored catalog (listed or delisted, whose
 * holders still hold it) and the file's earlier entries; a scan, as imports are rare. Per listing, the problems found.
 */
async function sharedReceiptProblems(deps: CatalogDeps, listings: readonly Listing[], read: readonly Awaited<ReturnType<typeof factsFor>>[]): Promise<string[][]> {
  const holders = receiptHolders()
  const inFile = new Set(listings.map((l) => l.id))
  for (const row of await deps.store.allOpportunities()) {
    if (inFile.has(row.id)) continue
    const facts = row.chainFacts === null ? null : (JSON.parse(row.chainFacts) as ChainFacts)
    holders.offer({ ecosystem: row.ecosystem, chainId: row.chainId, id: row.id, vault: row.vaultAddress }, receiptOf(JSON.parse(row.listing) as Listing, facts))
  }
  return listings.map((l, i) => {
    const r = read[i]!
    const problem = holders.offer({ ecosystem: l.ecosystem, chainId: l.chainId, id: l.id, vault: l.vaultAddress }, receiptOf(l, 'facts' in r ? r.facts : null))
    return problem === undefined ? [] : [problem]
  })
}

/** Streams named in an import's refusal to move their opportunity: enough to find them, a bounded message. */
const STREAMS_NAMED = 5

export async function importCatalog(deps: CatalogDeps, file: unknown): Promise<{ opportunities: ImportedOpportunity[] }> {
  const listings = await parseCatalog(deps.ecosystems, file)
  // Stored entries in an earlier spelling of their chain first (spelling.ts): every check below, and the upsert,
  // compare a stored entry's chain with the listing's as text.
  await respellStoredChains(deps)
  // The facts' time is when their reading began, not when they are written: a newer refresh's stored meanwhile must not
  // look older than them (a re-audit: an import's minutes-old read stamped at its commit).
  const readAt = deps.clock.now()
  const read = await readAll(deps, listings)
  // Pending entries checked against no stored facts: facts a refresh stores meanwhile were checked against the
  // listing before this one, so they are not kept (the entry's next first read checks this one).
  const factsUnseen = new Set<number>()
  // A few at a time, as the reads: thousands of store reads queued at once on SQLite's one connection made an import
  // of 10,000 entries take 17 s (each release of its lock wakes every waiter), where groups keep it linear.
  const found = await inGroups(
    listings.map((l, i) => i),
    async (i) => {
      const l = listings[i]!
      const stranding = await strandingProblems(deps, l)
      if (stranding.length) return stranding
      const r = read[i]!
      if ('facts' in r) return disagreements(l, r.facts).concat(await untakenOffers(deps, l, r.facts))
      if ('refused' in r) return [r.refused]
      const { problems, factsSeen } = await pendingProblems(deps, l, r.pending)
      if (!factsSeen) factsUnseen.add(i)
      return problems
    },
  )
  const shared = await sharedReceiptProblems(deps, listings, read)
  const problems = listings.flatMap((l, i) => found[i]!.concat(shared[i] ?? []).map((d) => `opportunities[${i}] (${l.id}): ${d}`))
  if (problems.length) throw new CatalogError(problems.slice(0, MAX_PROBLEMS), problems.length)

  const now = deps.clock.now()
  const factsOf = (i: number) => {
    const r = read[i]!
    return 'facts' in r ? r.facts : null
  }
  // One transaction: a store failure part way leaves the catalog as it was, not half imported.
  const results = await deps.store.upsertOpportunities(
    listings.map((listing, i) => ({
      row: encodeOpportunity(listing, factsOf(i), now, readAt),
      depositTokens: listing.depositTokens.map((t) => t.address),
      tvlWith: (kept: string) => tvlOf(listing, JSON.parse(kept) as ChainFacts),
      ...(factsUnseen.has(i) ? { factsSeen: false } : {}),
    })),
  )
  const opportunities = listings.map((listing, i): ImportedOpportunity => {
    const r = read[i]!
    const { result, keptFacts, delisted } = results[i]!
    const chainFacts = factsOf(i) ? 'read' : keptFacts ? 'kept' : 'pending'
    // A chain this process has no RPC for is not one a refresh will read either, until the variable is set.
    const unconfigured = 'pending' in r && r.unserved
    const next =
      chainFacts === 'kept'
        ? 'the last facts read stay until the server reads the chain on its next refresh'
        : unconfigured
          ? 'a server with that RPC configured fills the chain facts in on its next refresh'
          : 'the server fills the chain facts in on its next refresh'
    return {
      id: listing.id,
      name: listing.name,
      result,
      chainFacts,
      ...('pending' in r ? { note: `${r.pending}; ${next}` } : {}),
      ...(delisted ? { delisted: true as const } : {}),
    }
  })
  return { opportunities }
}
