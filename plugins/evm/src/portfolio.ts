/**
 * What a wallet's vault position is worth and how it got there, for the portfolio. Value is the ERC-4626 vault's
 * own `convertToAssets`, read through the plugin's Multicall3 batcher (every position of a portfolio leaves in one
 * call, and a vault that fails its whole batch fails its own read only). Flows are the vault's own `Deposit` and
 * `Withdraw` events whose `owner` is the wallet.
 */
import { InvalidArgumentError, type AssetsParameters, type FlowsParameters, type VaultFlows } from '@earn/core'
import { encodeFunctionData, erc4626Abi, parseAbiItem, type Address, type PublicClient } from 'viem'
import { format, parse } from './address.ts'
import { readUint256 } from './calldata.ts'
import { requirePublicClient, type EvmClient } from './client.ts'
import { recall, remember } from './lru.ts'
import { ask } from './rpc.ts'
import { checkServed } from './servedChain.ts'
import { share } from './shared.ts'

// Written out rather than taken from viem's erc4626Abi, which names Deposit's second topic `receiver`: the filter
// below is by argument name, and EIP-4626 calls it `owner`.
const DEPOSIT_EVENT = parseAbiItem('event Deposit(address indexed sender, address indexed owner, uint256 assets, uint256 shares)')
const WITHDRAW_EVENT = parseAbiItem(
  'event Withdraw(address indexed sender, address indexed receiver, address indexed owner, uint256 assets, uint256 shares)',
)

/** Where the event scan starts unless the catalog names the vault's first block (`eventsFromBlock`). */
export const FLOWS_FROM_BLOCK = 0n

/**
 * Blocks behind the head past which history may be taken as settled: a wallet's flows there are scanned once and
 * remembered, and later answers scan only what came after. Deeper than the reorganisations EVM chains see; where
 * the node names a `finalized` block, settled history also stops there (see `settledThrough`).
 */
export const FLOWS_SETTLED_DEPTH = 128n
/** eth_getLogs ranges asked at once while walking a long history. */
const CONCURRENT_RANGES = 4
/** (wallet, vault) histories whose settled flows a client remembers; past it, the one used longest ago goes. */
const MAX_SETTLED = 50_000

function notAVault(chainId: string, vault: Address): never {
  throw new InvalidArgumentError(`${format(vault)} is not an ERC-4626 vault on chain ${chainId}`, {
    vaultAddress: `no ERC-4626 convertToAssets() at this address on chain ${chainId}`,
  })
}

/** `convertToAssets(shares)`: the base-token smallest units `shares` redeem for now (before any exit fee). */
export async function assets(client: EvmClient, p: AssetsParameters): Promise<bigint> {
  const vault = parse(p.vaultAddress, 'vaultAddress')
  const publicClient = requirePublicClient(client, p.chainId)
  if (p.shares < 0n) throw new InvalidArgumentError('shares must not be negative', { shares: 'negative' })
  return share(client, `${p.chainId}|convertToAssets|${vault}|${p.shares}`, () =>
    ask(
      p.chainId,
      () => readUint256(client, p.chainId, publicClient, vault, encodeFunctionData({ abi: erc4626Abi, functionName: 'convertToAssets', args: [p.shares] })),
      () => notAVault(p.chainId, vault),
    ),
  )
}

/** The portfolio's check that the RPC serves the chain asked for (see the interface); one in flight per chain. */
export function servesChain(client: EvmClient, chainId: string): Promise<void> {
  requirePublicClient(client, chainId)
  return checkServed(client, chainId)
}

/**
 * Sums the vault's `Deposit(sender, owner, assets, shares)` events with the wallet as `owner` (shares minted to it,
 * whoever paid) and `Withdraw(sender, receiver, owner, assets, shares)` with the wallet as `owner` (its shares
 * burned, whoever received the assets). Shares moved by plain transfers appear in neither: the wallet's earned
 * figure then includes what it received that way. Both scans filter on the indexed `owner` topic, so the node
 * returns only this wallet's events.
 *
 * A portfolio asks every vault of a chain for the same wallet at once: those asks wait for the end of the turn and
 * are scanned together, each range one `eth_getLogs` per event for all of the vaults (the logs told apart by their
 * address), so a request costs two calls a range, not two a range per vault (a catalog of a hundred vaults made a
 * fresh wallet's first answer hundreds of calls, and a browser key may ask for any wallet).
 *
 * History is walked in ranges of at most `logsBlockRange` blocks (RPC providers cap a getLogs range), from `fromBlock`
 * to the head read for this answer. What is settled (`settledThrough`) is summed once and remembered; each answer
 * then scans only the blocks after it, so the recent part, which a reorganisation may still change, is always read
 * afresh. A `fromBlock` beyond the head has no history yet.
 */
export async function flows(client: EvmClient, p: FlowsParameters): Promise<VaultFlows | null> {
  const vault = parse(p.vaultAddress, 'vaultAddress')
  const owner = parse(p.owner, 'owner')
  requirePublicClient(client, p.chainId)
  const fromBlock = p.fromBlock === undefined ? FLOWS_FROM_BLOCK : BigInt(p.fromBlock)
  return share(client, `flows|${p.chainId}|${vault}|${owner}|${fromBlock}`, () => joinFlowsBatch(client, p.chainId, owner, { vault, fromBlock }))
}

interface FlowsAsk {
  vault: Address
  fromBlock: bigint
}

interface FlowsBatch {
  asks: FlowsAsk[]
  answers: Promise<(VaultFlows | null)[]>
}

const flowsBatches = new WeakMap<EvmClient, Map<string, FlowsBatch>>()

/** Joins the asks for this wallet on this chain made in the same turn; the batch is read once the turn ends. */
function joinFlowsBatch(client: EvmClient, chainId: string, owner: Address, ask: FlowsAsk): Promise<VaultFlows | null> {
  let open = flowsBatches.get(client)
  if (!open) flowsBatches.set(client, (open = new Map()))
  const key = `${chainId}|${owner}`
  let batch = open.get(key)
  if (!batch) {
    const asks: FlowsAsk[] = []
    const answers = Promise.resolve().then(() => {
      open.delete(key)
      return flowsOf(client, chainId, owner, asks)
    })
    batch = { asks, answers }
    open.set(key, batch)
  }
  const index = batch.asks.push(ask) - 1
  return batch.answers.then((all) => all[index]!)
}

/**
 * How long this answer walks long histories: `flowsScanMs`, but at most a quarter of the capability's budget
 * (budget.ts), so the head read before it, a round under way when it stops, and the recent part after it fit in the
 * rest (under an EVM_RPC_TIMEOUT_MS of 1 s, a 5 s walk ran past the 4 s budget: a 503 on a healthy node, every time).
 */
const scanMs = (client: EvmClient) => Math.min(client.flowsScanMs, client.budgetMs / 4)

/**
 * A vault whose settled history this answer could not finish reading in `scanMs` has no flows yet (null: not known
 * from the chain, as the portfolio shows it); what was read is remembered, and the next answer reads on from there.
 */
async function flowsOf(client: EvmClient, chainId: string, owner: Address, asks: FlowsAsk[]): Promise<(VaultFlows | null)[]> {
  const publicClient = requirePublicClient(client, chainId)
  return ask(chainId, async () => {
    const { head, settledTo } = await share(client, `${chainId}|heads`, () => settledThrough(publicClient))
    const keys = asks.map((a) => `${chainId}|${a.vault}|${owner}|${a.fromBlock}`)
    const settled = asks.map((a, i) => recall(client.state.settledFlows, keys[i]!) ?? { through: a.fromBlock - 1n, deposited: 0n, withdrawn: 0n })
    const behind = asks.flatMap((a, i) => (settledTo > settled[i]!.through ? [{ vault: a.vault, after: settled[i]!.through, i, base: settled[i]! }] : []))
    // Each round read is remembered at once: a failure later in the scan loses only its own round.
    const progress = (group: typeof behind) => (through: bigint, read: readonly VaultFlows[]) =>
      group.forEach(({ i, base }, j) => {
        // Read from the group's earliest start: a vault that starts later gained nothing until the read passed its start.
        if (through <= base.through) return
        settled[i] = { through, deposited: base.deposited + read[j]!.deposited, withdrawn: base.withdrawn + read[j]!.withdrawn }
        remember(client.state.settledFlows, keys[i]!, settled[i]!, MAX_SETTLED)
      })
    // Vaults a round or less behind (the blocks settled since the last answer) are read apart from a long history, so
    // one vault's first walk does not leave the wallet's others unknown until it ends.
    const oneRound = BigInt(CONCURRENT_RANGES) * client.logsBlockRange
    const near = behind.filter((b) => settledTo - b.after <= oneRound)
    const far = behind.filter((b) => settledTo - b.after > oneRound)
    await Promise.all([
      near.length ? scan(client, publicClient, owner, near, settledTo, Number.POSITIVE_INFINITY, progress(near)) : undefined,
      far.length ? scan(client, publicClient, owner, far, settledTo, performance.now() + scanMs(client), progress(far)) : undefined,
    ])
    const current = asks.flatMap((a, i) => (settled[i]!.through >= settledTo ? [i] : []))
    // The unsettled rest, up to the head: at most FLOWS_SETTLED_DEPTH blocks, or up to the finalized block.
    const recent = await scan(client, publicClient, owner, current.map((i) => ({ vault: asks[i]!.vault, after: settled[i]!.through })), head)
    return asks.map((_, i) => {
      const k = current.indexOf(i)
      return k < 0 ? null : { deposited: settled[i]!.deposited + recent.flows[k]!.deposited, withdrawn: settled[i]!.withdrawn + recent.flows[k]!.withdrawn }
    })
  })
}

/**
 * The head, and the last block whose history may be remembered: `FLOWS_SETTLED_DEPTH` behind the head and, where the
 * node names one, no later than its `finalized` block, which no reorganisation can replace. On an L2 whose finality
 * follows L1's, `finalized` lags far more than 128 blocks and bounds what is kept. A node without the tag (it
 * answers an error or nothing) leaves the depth alone to decide. A node that is down fails the head read.
 */
async function settledThrough(publicClient: PublicClient): Promise<{ head: bigint; settledTo: bigint }> {
  const [head, finalized] = await Promise.all([
    publicClient.getBlockNumber({ cacheTime: 0 }),
    publicClient.request({ method: 'eth_getBlockByNumber', params: ['finalized', false] }).then(
      // A block without its number (a pending one) names no finalized block. (The number's form is checked on arrival.)
      (block) => (block?.number ? BigInt(block.number) : null),
      () => null,
    ),
  ])
  const deep = head - FLOWS_SETTLED_DEPTH
  return { head, settledTo: finalized !== null && finalized < deep ? finalized : deep }
}

/**
 * Each vault's flows for the wallet in the blocks after its `after` up to `through`, inclusive, read together: the
 * ranges start at the earliest of them, and a log counts for its vault only past that vault's own `after`. `through` is
 * `to`, or, where rounds of ranges were still to be asked at `until` (a `performance.now()` time), the last block of the
 * last round read: a round is always read, so every answer moves on. `onRound` is told the totals so far after each.
 */
async function scan(
  client: EvmClient,
  publicClient: PublicClient,
  owner: Address,
  vaults: { vault: Address; after: bigint }[],
  to: bigint,
  until = Number.POSITIVE_INFINITY,
  onRound?: (through: bigint, flows: readonly VaultFlows[]) => void,
): Promise<{ flows: VaultFlows[]; through: bigint }> {
  const totals = vaults.map(() => ({ deposited: 0n, withdrawn: 0n }))
  const from = vaults.reduce((min, v) => (v.after + 1n < min ? v.after + 1n : min), to + 1n)
  const ranges: [bigint, bigint][] = []
  for (let start = from; start <= to; start += client.logsBlockRange) {
    const end = start + client.logsBlockRange - 1n
    ranges.push([start, end < to ? end : to])
  }
  const byAddress = new Map<string, number[]>()
  vaults.forEach((v, i) => byAddress.set(v.vault, [...(byAddress.get(v.vault) ?? []), i]))
  const add = (logs: { removed: boolean; address: Address; blockNumber: bigint | null; args: { assets?: bigint } }[], kind: 'deposited' | 'withdrawn') => {
    for (const log of logs) {
      // A log a reorganisation removed is no longer history.
      if (log.removed || log.blockNumber === null) continue
      for (const i of byAddress.get(log.address.toLowerCase()) ?? []) if (log.blockNumber > vaults[i]!.after) totals[i]![kind] += log.args.assets ?? 0n
    }
  }
  const addresses = [...byAddress.keys()] as Address[]
  let through = from - 1n
  for (let i = 0; i < ranges.length; i += CONCURRENT_RANGES) {
    if (i > 0 && performance.now() >= until) break
    const round = ranges.slice(i, i + CONCURRENT_RANGES)
    const answers = await Promise.all(round.map(([a, b]) => Promise.all([depositLogs(publicClient, addresses, owner, a, b), withdrawLogs(publicClient, addresses, owner, a, b)])))
    for (const [deposits, withdrawals] of answers) {
      add(deposits, 'deposited')
      add(withdrawals, 'withdrawn')
    }
    through = round.at(-1)![1]
    onRound?.(through, totals)
  }
  return { flows: totals, through }
}

const depositLogs = (publicClient: PublicClient, vaults: Address[], owner: Address, fromBlock: bigint, toBlock: bigint) =>
  publicClient.getLogs({ address: vaults, event: DEPOSIT_EVENT, args: { owner }, fromBlock, toBlock, strict: true })

const withdrawLogs = (publicClient: PublicClient, vaults: Address[], owner: Address, fromBlock: bigint, toBlock: bigint) =>
  publicClient.getLogs({ address: vaults, event: WITHDRAW_EVENT, args: { owner }, fromBlock, toBlock, strict: true })
