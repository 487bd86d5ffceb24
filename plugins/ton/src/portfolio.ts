/**
 * Valuing a position in the sample TON vaults: a deposit sends the vault base tokens and the wallet is issued
 * receipt jettons one for one, and a withdrawal returns them one for one. These vaults keep no share price on chain,
 * so a share is worth exactly one base unit and reading the chain would add nothing.
 *
 * Flows: TON has no event log a node can filter by wallet; a vault's deposits are messages in its transaction
 * history, which a reader would page through from the start (and jetton deposits arrive as notifications from
 * jetton wallets, not from the depositor). So this answers null ("not known from the chain") and the portfolio
 * says so, rather than a figure that would silently stop at a page limit. An indexer is the way to offer them.
 */
import { InvalidArgumentError, type AssetsParameters, type FlowsParameters, type VaultFlows } from '@earn/core'
import { toTonAddress } from './address.ts'
import type { TonChainClient } from './client.ts'

// `chainId` is not consulted, as in the other TON reads: the client serves one network.
export async function readTonAssets(_client: TonChainClient, p: AssetsParameters): Promise<bigint> {
  toTonAddress(p.vaultAddress, 'vaultAddress')
  if (p.shares < 0n) throw new InvalidArgumentError('shares must not be negative', { shares: 'negative' })
  return p.shares
}

export async function readTonFlows(_client: TonChainClient, p: FlowsParameters): Promise<VaultFlows | null> {
  toTonAddress(p.vaultAddress, 'vaultAddress')
  toTonAddress(p.owner, 'owner')
  return null
}
