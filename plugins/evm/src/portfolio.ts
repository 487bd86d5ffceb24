/**
 * What a wallet's vault position is worth and how it got there, for the portfolio. Value is the ERC-4626 vault's
 * own `convertToAssets`, read through the client's batched path (every position of a portfolio leaves in one
 * Multicall3 call). Flows are the vault's own `Deposit` and `Withdraw` events whose `owner` is the wallet.
 */
import { InvalidArgumentError, type AssetsParameters, type FlowsParameters, type VaultFlows } from '@earn/core'
import { erc4626Abi, parseAbiItem, type Address, type PublicClient } from 'viem'
import { parse } from './address.ts'
import { requirePublicClient, type EvmClient } from './client.ts'
import { ask } from './rpc.ts'
import { share } from './shared.ts'

// Written out rather than taken from viem's erc4626Abi, which names Deposit's second topic `receiver`: the filter
// below is by argument name, and EIP-4626 calls it `owner`.
const DEPOSIT_EVENT = parseAbiItem('event Deposit(address indexed sender, address indexed owner, uint256 assets, uint256 shares)')
const WITHDRAW_EVENT = parseAbiItem(
  'event Withdraw(address indexed sender, address indexed receiver, address indexed owner, uint256 assets, uint256 shares)',
)

/**
 * Where the event scan starts unless the catalog names the vault's first block (`eventsFromBlock`). Block 0 makes
 * the RPC walk the chain's whole history for the vault: fine on a local chain and for many hosted RPCs (the filter on
 * the owner topic keeps the answer small), but some cap a getLogs range (their refusal reaches the caller as a 503).
 */
export const FLOWS_FROM_BLOCK = 0n

function notAVault(chainId: string, vault: Address): never {
  throw new InvalidArgumentError(`${vault} is not an ERC-4626 vault on chain ${chainId}`, {
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
      () => publicClient.readContract({ address: vault, abi: erc4626Abi, functionName: 'convertToAssets', args: [p.shares] }),
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
 */
export async function flows(client: EvmClient, p: FlowsParameters): Promise<VaultFlows> {
  const vault = parse(p.vaultAddress, 'vaultAddress')
  const owner = parse(p.owner, 'owner')
  const publicClient = requirePublicClient(client, p.chainId)
  const fromBlock = p.fromBlock === undefined ? FLOWS_FROM_BLOCK : BigInt(p.fromBlock)
  return share(client, `${p.chainId}|flows|${vault}|${owner}|${fromBlock}`, async () => {
    const [deposits, withdrawals] = await ask(p.chainId, () =>
      Promise.all([depositLogs(publicClient, vault, owner, fromBlock), withdrawLogs(publicClient, vault, owner, fromBlock)]),
    )
    // A log a reorganisation removed is no longer history.
    const sum = (logs: { removed: boolean; args: { assets?: bigint } }[]) =>
      logs.reduce((total, log) => (log.removed ? total : total + (log.args.assets ?? 0n)), 0n)
    return { deposited: sum(deposits), withdrawn: sum(withdrawals) }
  })
}

const depositLogs = (publicClient: PublicClient, vault: Address, owner: Address, fromBlock: bigint) =>
  publicClient.getLogs({ address: vault, event: DEPOSIT_EVENT, args: { owner }, fromBlock, toBlock: 'latest', strict: true })

const withdrawLogs = (publicClient: PublicClient, vault: Address, owner: Address, fromBlock: bigint) =>
  publicClient.getLogs({ address: vault, event: WITHDRAW_EVENT, args: { owner }, fromBlock, toBlock: 'latest', strict: true })
