/**
 * The watch on pending token streams: DECISIONS has a token stream pending "until its funding transfer is seen on
 * chain", so the server looks, rather than waiting for the creator's `POST /v2/streams/{id}/confirm`. Each pass asks
 * each chain's plugin for the transactions that paid a pending stream's treasury in its reward token since the last
 * pass (`findFundings`), reads each once, and records it for each pending stream whose creator it shows paying the
 * treasury, through the checks confirm makes (`fund`: the stream's own tag on the creator's transfer, valid under the
 * secret, and `totalPulled` received); a transaction that funds none is left alone. A plugin without `findFundings`,
 * or a transfer it cannot find (an EVM coin transfer, which logs nothing), is confirmed by the endpoint, as before.
 *
 * Where each chain's look got to (its cursor) is kept in memory; a restarted server looks back over the plugin's
 * recent past again. Reading the same transaction again costs reads, nothing else: a funded stream is no longer
 * pending, and another's tag funds nothing here. Several processes each watch (their writes race as two confirms do).
 */
import { ApiError } from '../errors.ts'
import type { RefreshLog } from '../opportunities/refresh.ts'
import type { StreamRecord } from '../store/schema.ts'
import { fund, readFunding } from './confirm.ts'
import type { StreamDeps } from './lookup.ts'

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

/** The most pending streams one pass looks for, soonest end first. */
export const MAX_WATCHED_STREAMS = 1000

const firstLine = (e: unknown) => (e instanceof Error ? e.message.split('\n')[0]! : String(e)).slice(0, 300)

/** A failure worth another look next pass: the chain (or the store) did not answer. A refusal is final for that stream. */
const transient = (e: unknown) => !(e instanceof ApiError) || e.status >= 500

export function startStreamWatcher(deps: WatchDeps, intervalMs: number): StreamWatcher {
  /** Per treasury and token (`ecosystem|chainId|treasury|token`): where the next look goes on from. */
  const cursors = new Map<string, string>()
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  let running: Promise<WatchSummary> | undefined

  /** One treasury and token's new transactions, each read once and tried for the streams whose creator paid in it. */
  const watchGroup = async (key: string, streams: StreamRecord[], summary: WatchSummary) => {
    const first = streams[0]!
    const { plugin, client } = await deps.ecosystems.get(first.ecosystem)
    if (!plugin.transactions.findFundings) return
    const found = await plugin.transactions.findFundings(client, { chainId: first.chainId, treasury: first.treasury!, token: first.rewardToken!, cursor: cursors.get(key) })
    let again = false
    for (const txHash of found.txHashes) {
      if (stopped) return
      let read
      try {
        read = (await readFunding(deps, first, txHash)).read
      } catch (e) {
        // Not found after all (a block a reorganisation replaced): nothing to record; the endpoint still can.
        if (transient(e)) {
          again = true
          summary.failed++
          deps.logger.error({ msg: 'stream funding watch: reading a transaction failed; trying again next pass', chainId: first.chainId, txHash, error: firstLine(e) })
        }
        continue
      }
      summary.read++
      const payers = new Set(read.transfers.filter((t) => t.token === first.rewardToken && t.to === first.treasury).map((t) => t.from))
      for (const stream of streams) {
        if (stream.state !== 'pending' || !payers.has(stream.creator!)) continue
        try {
          await fund(deps, stream, plugin, read)
          stream.state = 'active'
          summary.funded++
          deps.logger.info({ msg: 'stream funding seen on chain', streamId: stream.id, chainId: stream.chainId, txHash: read.txHash })
        } catch (e) {
          // Another stream's funding, a short one, one a confirm recorded meanwhile: not this stream's, or done.
          if (!transient(e)) continue
          again = true
          summary.failed++
          deps.logger.error({ msg: 'stream funding watch: recording a funding failed; trying again next pass', streamId: stream.id, txHash: read.txHash, error: firstLine(e) })
        }
      }
    }
    // Moved on only past what was read whole: a transaction the chain did not answer for is looked at again.
    if (!again && !stopped) cursors.set(key, found.cursor)
  }

  const pass = async (): Promise<WatchSummary> => {
    const summary: WatchSummary = { funded: 0, read: 0, failed: 0 }
    let pending: StreamRecord[]
    try {
      pending = await deps.store.pendingTokenStreams(deps.clock.now(), MAX_WATCHED_STREAMS)
    } catch (e) {
      deps.logger.error({ msg: 'stream funding watch: reading the pending streams failed', error: firstLine(e) })
      return { ...summary, failed: 1 }
    }
    const loaded = new Set<string>(deps.ecosystems.ids)
    // Chain by chain, each chain's treasuries and tokens in turn: a chain that hangs holds up only its own.
    const chains = new Map<string, Map<string, StreamRecord[]>>()
    for (const s of pending) {
      if (!loaded.has(s.ecosystem) || s.treasury === null || s.rewardToken === null || s.creator === null) continue
      const chain = `${s.ecosystem}|${s.chainId}`
      const groups = chains.get(chain) ?? new Map<string, StreamRecord[]>()
      chains.set(chain, groups)
      const key = `${chain}|${s.treasury}|${s.rewardToken}`
      groups.set(key, [...(groups.get(key) ?? []), s])
    }
    const watched = new Set([...chains.values()].flatMap((groups) => [...groups.keys()]))
    for (const key of cursors.keys()) if (!watched.has(key)) cursors.delete(key)
    await Promise.all(
      [...chains.values()].map(async (groups) => {
        for (const [key, streams] of groups) {
          if (stopped) return
          try {
            await watchGroup(key, streams, summary)
          } catch (e) {
            summary.failed++
            deps.logger.error({ msg: 'stream funding watch: looking for fundings failed; trying again next pass', chainId: streams[0]!.chainId, error: firstLine(e) })
          }
        }
      }),
    )
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
