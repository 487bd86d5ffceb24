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
import { ask } from './rpc.ts'
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

/** A remembered value, made the most recently used (a Map keeps insertion order). */
export function recall<K, V>(map: Map<K, V>, key: K): V | undefined {
  const value = map.get(key)
  if (value !== undefined) {
    map.delete(key)
    map.set(key, value)
  }
  return value
}

/**
 * Remembers `value` as the most recently used, forgetting the least recently used past `max`: a sweep of fresh
 * addresses (a browser key may ask any) then pushes out only the entries nobody asked for since, never them all.
 */
export function remember<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key)
  map.set(key, value)
  if (map.size > max) map.delete(map.keys().next().value as K)
}

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

/**
 * Sums the vault's `Deposit(sender, owner, assets, shares)` events with the wallet as `owner` (shares minted to it,
 * whoever paid) and `Withdraw(sender, receiver, owner, assets, shares)` with the wallet as `owner` (its shares
 * burned, whoever received the assets). Shares moved by plain transfers appear in neither: the wallet's earned
 * figure then includes what it received that way. Both scans filter on the indexed `owner` topic, so the node
 * returns only this wallet's events; with `connect()`'s client the two (and those of other vaults asked at the same
 * moment) leave as one JSON-RPC batch.
 *
 * History is walked in ranges of at most `logsBlockRange` blocks (RPC providers cap a getLogs range), from `fromBlock`
 * to the head read for this answer. What is settled (`settledThrough`) is summed once and remembered; each answer
 * then scans only the blocks after it, so the recent part, which a reorganisation may still change, is always read
 * afresh. A `fromBlock` beyond the head has no history yet.
 */
export async function flows(client: EvmClient, p: FlowsParameters): Promise<VaultFlows> {
  const vault = parse(p.vaultAddress, 'vaultAddress')
  const owner = parse(p.owner, 'owner')
  const publicClient = requirePublicClient(client, p.chainId)
  const fromBlock = p.fromBlock === undefined ? FLOWS_FROM_BLOCK : BigInt(p.fromBlock)
  const key = `${p.chainId}|${vault}|${owner}|${fromBlock}`
  return share(client, `flows|${key}`, () =>
    ask(p.chainId, async () => {
      const { head, settledTo } = await share(client, `${p.chainId}|heads`, () => settledThrough(publicClient))
      let settled = recall(client.state.settledFlows, key) ?? { through: fromBlock - 1n, deposited: 0n, withdrawn: 0n }
      if (settledTo > settled.through) {
        const more = await scan(client, publicClient, vault, owner, settled.through + 1n, settledTo)
        settled = { through: settledTo, deposited: settled.deposited + more.deposited, withdrawn: settled.withdrawn + more.withdrawn }
        remember(client.state.settledFlows, key, settled, MAX_SETTLED)
      }
      const recent = await scan(client, publicClient, vault, owner, settled.through + 1n, head)
      return { deposited: settled.deposited + recent.deposited, withdrawn: settled.withdrawn + recent.withdrawn }
    }),
  )
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
      (block) => (block ? BigInt(block.number!) : null),
      () => null,
    ),
  ])
  const deep = head - FLOWS_SETTLED_DEPTH
  return { head, settledTo: finalized !== null && finalized < deep ? finalized : deep }
}

/** The wallet's flows in blocks `from` to `to`, inclusive (none when `from` is past `to`). */
async function scan(client: EvmClient, publicClient: PublicClient, vault: Address, owner: Address, from: bigint, to: bigint): Promise<VaultFlows> {
  const ranges: [bigint, bigint][] = []
  for (let start = from; start <= to; start += client.logsBlockRange) {
    const end = start + client.logsBlockRange - 1n
    ranges.push([start, end < to ? end : to])
  }
  // A log a reorganisation removed is no longer history.
  const sum = (logs: { removed: boolean; args: { assets?: bigint } }[]) =>
    logs.reduce((total, log) => (log.removed ? total : total + (log.args.assets ?? 0n)), 0n)
  const total = { deposited: 0n, withdrawn: 0n }
  for (let i = 0; i < ranges.length; i += CONCURRENT_RANGES) {
    const answers = await Promise.all(
      ranges
        .slice(i, i + CONCURRENT_RANGES)
        .map(([a, b]) => Promise.all([depositLogs(publicClient, vault, owner, a, b), withdrawLogs(publicClient, vault, owner, a, b)])),
    )
    for (const [deposits, withdrawals] of answers) {
      total.deposited += sum(deposits)
      total.withdrawn += sum(withdrawals)
    }
  }
  return total
}

const depositLogs = (publicClient: PublicClient, vault: Address, owner: Address, fromBlock: bigint, toBlock: bigint) =>
  publicClient.getLogs({ address: vault, event: DEPOSIT_EVENT, args: { owner }, fromBlock, toBlock, strict: true })

const withdrawLogs = (publicClient: PublicClient, vault: Address, owner: Address, fromBlock: bigint, toBlock: bigint) =>
  publicClient.getLogs({ address: vault, event: WITHDRAW_EVENT, args: { owner }, fromBlock, toBlock, strict: true })
