/**
 * The watch on pending token streams: DECISIONS has a token stream pending "until its funding transfer is seen on
 * chain", so the server looks, rather than waiting for the creator's `POST /v2/streams/{id}/confirm`. Each pass asks
 * each chain's plugin for the transactions that paid a pending stream's treasury in its reward token since the last
 * pass (`findFundings`), reads each once, and records it for each pending stream whose creator it shows paying the
 * treasury or whose tag it carries, through the checks confirm makes (`fund`: the stream's own tag on the creator's
 * transfer, valid under the secret, and `totalPulled` received); a transaction that funds none is left alone. A plugin
 * without `findFundings`, or a transfer it cannot find (an EVM coin transfer, which logs nothing), is confirmed by the
 * endpoint, as before.
 *
 * Where each look got to (its cursor, and what it must read again) is kept in the store after every look, so a server
 * restarted within `RESUME_WITHIN_MS` goes on from there; a look not made for longer starts from the plugin's recent
 * past (its first look). The cursor always moves on; a transaction the chain did not answer for is read again over
 * the next passes.
 * Reading the same transaction again costs reads, nothing else: a funded stream is no longer pending, and another's
 * tag funds nothing here. Several processes each watch (their writes race as two confirms do).
 */
import { ApiError } from '../errors.ts'
import type { RefreshLog } from '../opportunities/refresh.ts'
import type { StreamRecord } from '../store/schema.ts'
import type { FundingLook } from '../store/streams.ts'
import { fund, readFunding } from './confirm.ts'
import { FundingNotFoundError } from './errors.ts'
import type { StreamDeps } from './lookup.ts'
import { parseStreamTag } from './tag.ts'

export interface WatchDeps extends StreamDeps {
  logger: RefreshLog
}

export interface WatchSummary {
  /** Streams made active. */
  funded: number
  /** Transactions read. */
  read: number
  /** Looks or reads the chain did not answer (tried again next pass). */
  failed: number
}

export interface StreamWatcher {
  /** A pass started now (tests); resolves when it has ended. */
  watchNow(): Promise<WatchSummary>
  stop(): Promise<void>
}

/** The most pending streams of one treasury and token a pass reads, soonest end first (others are found by their tags). */
export const MAX_WATCHED_STREAMS = 1000
/** The treasuries and tokens one pass looks at; past it, the passes take them in turn (by key). */
export const MAX_LOOKS_PER_PASS = 100
/** The treasuries and tokens whose cursors the watch keeps; past it the longest unvisited is forgotten. */
const MAX_LOOKS = 10_000

const firstLine = (e: unknown) => (e instanceof Error ? e.message.split('\n')[0]! : String(e)).slice(0, 300)

/** A failure worth another look next pass: the chain (or the store) did not answer. A refusal is final for that stream. */
const transient = (e: unknown) => !(e instanceof ApiError) || e.status >= 500

/** How many passes a transaction the chain did not answer for is read again before it is left to the endpoint. */
export const MAX_READ_ATTEMPTS = 20
/** Transactions kept to read again per treasury and token; past it the oldest is left to the endpoint. */
const MAX_RETRIED = 64
/** Streams named by a transaction's tags that are looked up beside the pass's list (a funding tag per stream). */
const MAX_NAMED = 16

/**
 * How old a look's kept cursor may be and still be gone on from. Older, the look starts over from the plugin's recent
 * past: a cursor days behind would be caught up with range by range (EVM: EVM_LOGS_BLOCK_RANGE blocks a pass, ~35
 * passes for a day of a 0.25 s chain) before a new stream's funding, made after it was created, is found. A day covers
 * a restart or an outage; a look left idle longer (its streams all funded) has nothing owed from before.
 */
export const RESUME_WITHIN_MS = 86_400_000

/** How often a process forgets the kept looks past RESUME_WITHIN_MS. */
const CLEANUP_EVERY_MS = 3_600_000

/** Where one treasury and token's look got to, and what it read but must read again. */
interface Look {
  cursor?: string
  /** Transaction hash to the passes that failed to read it (oldest first). */
  again: Map<string, number>
  /** When the look was last made (0: never). */
  at: number
}

export function startStreamWatcher(deps: WatchDeps, intervalMs: number): StreamWatcher {
  /** Per treasury and token (`ecosystem|chainId|treasury|token`). */
  const looks = new Map<string, Look>()
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  let running: Promise<WatchSummary> | undefined

  /**
   * Reads one transaction and records it for each pending stream it may fund: those of the pass whose creator it shows
   * paying the treasury, and those its tags name (a stream created after the pass read its list, or past the list's
   * length). False when it must be read again: the chain did not answer, or does not show it yet (a node of a pool
   * behind the one that listed it).
   */
  const watchTransaction = async (first: StreamRecord, streams: StreamRecord[], txHash: string, plugin: Parameters<typeof fund>[2], summary: WatchSummary): Promise<boolean> => {
    let read
    try {
      read = (await readFunding(deps, first, txHash)).read
    } catch (e) {
      if (!transient(e) && !(e instanceof FundingNotFoundError)) return true
      summary.failed++
      deps.logger.error({ msg: 'stream funding watch: reading a transaction failed; reading it again next pass', chainId: first.chainId, txHash, error: firstLine(e) })
      return false
    }
    summary.read++
    const sameLook = (s: StreamRecord | undefined): s is StreamRecord =>
      s !== undefined && s.state === 'pending' && s.ecosystem === first.ecosystem && s.chainId === first.chainId && s.treasury === first.treasury && s.rewardToken === first.rewardToken
    const payers = new Set(read.transfers.filter((t) => t.token === first.rewardToken && t.to === first.treasury).map((t) => t.from))
    const candidates = streams.filter((s) => s.state === 'pending' && payers.has(s.creator!))
    const listed = new Set(streams.map((s) => s.id))
    const named = [...new Set((read.tags ?? (read.tag === null ? [] : [read.tag])).map((t) => parseStreamTag(t)?.streamId))].filter((id): id is string => id !== undefined && !listed.has(id))
    for (const stream of await Promise.all(named.slice(0, MAX_NAMED).map((id) => deps.store.getStream(id)))) if (sameLook(stream)) candidates.push(stream)
    let done = true
    for (const stream of candidates) {
      try {
        await fund(deps, stream, plugin, read)
        stream.state = 'active'
        summary.funded++
        deps.logger.info({ msg: 'stream funding seen on chain', streamId: stream.id, chainId: stream.chainId, txHash: read.txHash })
      } catch (e) {
        // Another stream's funding, a short one, one a confirm recorded meanwhile: not this stream's, or done.
        if (!transient(e)) continue
        done = false
        summary.failed++
        deps.logger.error({ msg: 'stream funding watch: recording a funding failed; reading it again next pass', streamId: stream.id, txHash: read.txHash, error: firstLine(e) })
      }
    }
    return done
  }

  /**
   * One treasury and token's new transactions, and those to read again. The look always moves on: a transaction that
   * fails keeps its place on a list of its own (at most MAX_READ_ATTEMPTS passes), so one that never reads (a
   * transfer only a call trace shows, on a node without traces) holds up no other funding (an audit).
   */
  const watchGroup = async (key: string, streams: StreamRecord[], summary: WatchSummary) => {
    const first = streams[0]!
    const { plugin, client } = await deps.ecosystems.get(first.ecosystem)
    if (!plugin.transactions.findFundings) return
    const where = { ecosystem: first.ecosystem, chainId: first.chainId, treasury: first.treasury!, rewardToken: first.rewardToken! }
    const now = deps.clock.now()
    // Most recently looked at last; past MAX_LOOKS the longest unvisited is forgotten (its next look reads what was kept).
    let look = looks.get(key)
    if (!look || look.at < now - RESUME_WITHIN_MS) {
      // Kept by this server before a restart, or by another process (which may have looked since this one last did); a
      // store that does not answer fails the look (the next pass tries again), rather than start it over and write
      // that over what was kept.
      const kept = await deps.store.getLookProgress(where)
      look = kept && kept.updatedAt >= now - RESUME_WITHIN_MS ? { cursor: kept.cursor, again: new Map(kept.again), at: kept.updatedAt } : { again: new Map(), at: 0 }
    }
    looks.delete(key)
    looks.set(key, look)
    if (looks.size > MAX_LOOKS) looks.delete(looks.keys().next().value!)
    // The least a funding of these streams moves in one transfer: what is less is no funding the look need hand over.
    // Known only where every pending stream of the look was read (a smaller one past the list would lose its funding).
    const smallest = (of: readonly StreamRecord[]) => of.reduce((min, s) => (BigInt(s.totalPulled) < min ? BigInt(s.totalPulled) : min), BigInt(of[0]!.totalPulled))
    const least = streams.length < MAX_WATCHED_STREAMS ? smallest(streams) : undefined
    const ask = (least?: bigint) => plugin.transactions.findFundings!(client, { chainId: first.chainId, treasury: first.treasury!, token: first.rewardToken!, cursor: look.cursor, least })
    let found = await ask(least)
    // A smaller stream created since the list was read: what was left out may be its funding, so the look is asked
    // again, leaving nothing out (audits).
    if (least !== undefined) {
      const now = await deps.store.pendingTokenStreams(deps.clock.now(), MAX_WATCHED_STREAMS, where)
      if (now.length >= MAX_WATCHED_STREAMS || (now.length > 0 && smallest(now) < least)) found = await ask()
    }
    for (const txHash of new Set([...look.again.keys(), ...found.txHashes])) {
      // Stopping: what is not read now is read from the cursor by the next server's first look.
      if (stopped) return
      if (await watchTransaction(first, streams, txHash, plugin, summary)) {
        look.again.delete(txHash)
        continue
      }
      const attempts = (look.again.get(txHash) ?? 0) + 1
      look.again.delete(txHash)
      if (attempts < MAX_READ_ATTEMPTS) look.again.set(txHash, attempts)
      else deps.logger.error({ msg: 'stream funding watch: a transaction failed every read; left to POST /v2/streams/{id}/confirm', chainId: first.chainId, txHash })
    }
    for (const [txHash] of look.again) {
      if (look.again.size <= MAX_RETRIED) break
      look.again.delete(txHash)
      deps.logger.error({ msg: 'stream funding watch: too many transactions to read again; the oldest left to POST /v2/streams/{id}/confirm', chainId: first.chainId, txHash })
    }
    look.cursor = found.cursor
    look.at = now
    try {
      await deps.store.putLookProgress(where, { cursor: look.cursor, again: [...look.again], updatedAt: now })
    } catch (e) {
      // This process goes on from memory; a restart before the next write looks again from what was kept.
      deps.logger.error({ msg: 'stream funding watch: keeping where a look got to failed', chainId: first.chainId, error: firstLine(e) })
    }
  }

  /** The last treasury and token the previous pass looked at: the next goes on after it, by key (none: from the first). */
  let lastLook: FundingLook | undefined
  let lastCleanup = 0

  const pass = async (): Promise<WatchSummary> => {
    const summary: WatchSummary = { funded: 0, read: 0, failed: 0 }
    const now = deps.clock.now()
    const loaded = new Set<string>(deps.ecosystems.ids)
    let page: FundingLook[]
    try {
      // Every treasury and token pending streams are funded to, MAX_LOOKS_PER_PASS a pass, paged by key: a list of the
      // soonest-ending streams had let streams funded elsewhere keep one from ever being looked for, and a window over
      // a list by position had skipped or never reached some (audits).
      page = await deps.store.pendingFundingLooks(now, MAX_LOOKS_PER_PASS, lastLook)
      lastLook = page.length === MAX_LOOKS_PER_PASS ? page.at(-1) : undefined
    } catch (e) {
      deps.logger.error({ msg: 'stream funding watch: reading the pending streams failed', error: firstLine(e) })
      return { ...summary, failed: 1 }
    }
    // Chain by chain, each chain's treasuries and tokens in turn: a chain that hangs holds up only its own.
    const chains = new Map<string, FundingLook[]>()
    for (const l of page.filter((l) => loaded.has(l.ecosystem))) chains.set(`${l.ecosystem}|${l.chainId}`, [...(chains.get(`${l.ecosystem}|${l.chainId}`) ?? []), l])
    await Promise.all(
      [...chains.values()].map(async (ofChain) => {
        for (const l of ofChain) {
          if (stopped) return
          try {
            const streams = (await deps.store.pendingTokenStreams(now, MAX_WATCHED_STREAMS, l)).filter((s) => s.creator !== null)
            if (streams.length) await watchGroup(`${l.ecosystem}|${l.chainId}|${l.treasury}|${l.rewardToken}`, streams, summary)
          } catch (e) {
            summary.failed++
            deps.logger.error({ msg: 'stream funding watch: looking for fundings failed; trying again next pass', chainId: l.chainId, error: firstLine(e) })
          }
        }
      }),
    )
    // What no look would go on from any more (a treasury and token without pending streams for a day), an hour apart:
    // a write every pass took SQLite's write lock, and one that failed held up no look but read as if it had (an audit).
    if (!stopped && now - lastCleanup >= CLEANUP_EVERY_MS) {
      lastCleanup = now
      await deps.store.deleteLookProgress(now - RESUME_WITHIN_MS).catch((e: unknown) => deps.logger.error({ msg: 'stream funding watch: forgetting old looks failed', error: firstLine(e) }))
    }
    return summary
  }

  const once = () => {
    running ??= pass().finally(() => (running = undefined))
    return running
  }
  const loop = async () => {
    await once()
    if (!stopped) timer = setTimeout(loop, intervalMs)
  }
  timer = setTimeout(loop, intervalMs)
  return {
    // After a pass already under way, which may have looked before the caller's transaction was mined.
    watchNow: async () => {
      await running
      return once()
    },
    async stop() {
      stopped = true
      clearTimeout(timer)
      await running
    },
  }
}
