/**
 * Finding stream fundings for core's watch on pending streams (core/src/streams/watch.ts): the reward token's
 * `Transfer` logs to the treasury, filtered by the node on the indexed recipient, in the blocks after the cursor (a
 * block number) up to the last block whose transactions `readTransfers` counts (the chain's `EVM_CONFIRMATIONS`), at
 * most `EVM_LOGS_BLOCK_RANGE` blocks a call (fewer where the node refuses that many), and at most `MAX_FOUND`
 * transactions a look. Without a cursor (a first look), or with one well past the chain's last block, the last such
 * range. A coin
 * transfer logs nothing, so none is found: a coin stream is confirmed by its endpoint.
 */
import { NATIVE_TOKEN, type FindFundingsParameters, type FoundFundings } from '@earn/core'
import { parseAbiItem } from 'viem'
import { parse } from './address.ts'
import { requirePublicClient, type EvmClient } from './client.ts'
import { answeredWithError, ask, chainUnavailable, classifyRpcError } from './rpc.ts'

const TRANSFER_EVENT = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)')

export async function findFundings(client: EvmClient, p: FindFundingsParameters): Promise<FoundFundings> {
  const publicClient = requirePublicClient(client, p.chainId)
  const head = await ask(p.chainId, () => publicClient.getBlockNumber({ cacheTime: 0 }))
  const last = head - BigInt(client.confirmations(p.chainId) - 1)
  if (p.token === NATIVE_TOKEN) return { txHashes: [], cursor: String(last) }
  // A cursor well past this chain's last block is another chain's (a local chain started over under the same id, an id
  // pointed at another network): kept in the store, it had held the look there for good (an audit). A few blocks past
  // is a pool's node behind the one the last look asked: that look waits.
  const kept = p.cursor !== undefined && /^\d{1,30}$/.test(p.cursor) ? BigInt(p.cursor) : undefined
  const start = kept === undefined || kept > last + FOREIGN_CURSOR_BLOCKS ? last - client.logsBlockRange : kept
  const after = start < -1n ? -1n : start
  if (after >= last) return { txHashes: [], cursor: String(after) }
  // A node refusing the range (too many logs: hosted RPCs cap an answer at ~10,000; too many blocks) is asked for half
  // of it, down to one block, and the look goes on from what was read: a range asked again whole at every pass had
  // held the look there for good, and dust transfers to the treasury could cause it (an audit).
  let through = after + client.logsBlockRange < last ? after + client.logsBlockRange : last
  const filter = { address: parse(p.token, 'token'), event: TRANSFER_EVENT, args: { to: parse(p.treasury, 'treasury') }, fromBlock: after + 1n, strict: true } as const
  for (;;) {
    const toBlock = through
    // An ERC-721's Transfer (its token id indexed) is no such log (strict). Any error the node answers is taken for a
    // refusal of the range (providers word and number it variously: -32005 "query returned more than 10000 results",
    // -32602 "Log response size exceeded"); one that did not answer is not asked again.
    const logs = await publicClient.getLogs({ ...filter, toBlock }).catch((error: unknown) => {
      if (answeredWithError(error) && toBlock > after + 1n) return null
      throw classifyRpcError(error) === undefined ? error : chainUnavailable(p.chainId, error)
    })
    if (logs !== null) return upTo(p.least === undefined ? logs : atLeast(logs, p.least), through)
    through = after + (through - after) / 2n
  }
}

/** How far past the chain's last block a cursor may be and still be taken for this chain's (a lagging node's answer). */
const FOREIGN_CURSOR_BLOCKS = 64n

/** The most transactions one look hands the watch to read (each ~3 calls): past it, the rest are the next look's. */
export const MAX_FOUND = 100

/**
 * The transactions of the logs, oldest first, at most MAX_FOUND of them, ending with a whole block (one block's beyond
 * the cap are all taken: the next look starts after it), and where the next look starts. Dust transfers to the
 * treasury (anyone may send them) had each cost a pass three calls, all in one pass (an audit).
 */
function upTo(logs: readonly { removed: boolean; transactionHash: string | null; blockNumber: bigint | null }[], through: bigint): FoundFundings {
  const live = logs.filter((l) => !l.removed && l.transactionHash !== null && l.blockNumber !== null)
  const txHashes: string[] = []
  const seen = new Set<string>()
  for (let i = 0; i < live.length; i++) {
    const log = live[i]!
    if (txHashes.length >= MAX_FOUND && log.blockNumber !== live[i - 1]!.blockNumber) return { txHashes, cursor: String(live[i - 1]!.blockNumber) }
    if (!seen.has(log.transactionHash!)) txHashes.push(log.transactionHash!)
    seen.add(log.transactionHash!)
  }
  return { txHashes, cursor: String(through) }
}

/**
 * The logs of transactions in which one sender moved at least `least` to the treasury, summed as confirm sums them: a
 * contract wallet may pay a funding in parts (a batch of transfers), each less than the whole (a re-audit). Dust, less
 * than any funding moves, does not take a funding's place among the MAX_FOUND.
 */
function atLeast<L extends { transactionHash: string | null; args: { from: string; value: bigint } }>(logs: readonly L[], least: bigint): L[] {
  const sums = new Map<string, bigint>()
  for (const l of logs) sums.set(`${l.transactionHash}|${l.args.from}`, (sums.get(`${l.transactionHash}|${l.args.from}`) ?? 0n) + l.args.value)
  const funding = new Set([...sums].filter(([, sum]) => sum >= least).map(([key]) => key.split('|')[0]))
  return logs.filter((l) => funding.has(String(l.transactionHash)))
}
