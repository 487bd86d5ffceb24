/**
 * Valuing a position in the sample Solana vaults (deposit.ts, withdraw.ts): a deposit hands the vault base tokens
 * and the wallet receipt tokens one for one, and a withdrawal returns them one for one. These vaults keep no share
 * price on chain, so a share is worth exactly one base unit and reading the chain would add nothing.
 *
 * Flows: Solana keeps no per-vault event log a node can filter by wallet; finding a wallet's deposits means walking
 * every signature of the vault's token account (getSignaturesForAddress, then each transaction), which grows with
 * the vault's whole history. So this answers null ("not known from the chain") and the portfolio says so, rather
 * than a figure that would silently stop at a page limit. An indexer is the way to offer them.
 */
import { InvalidArgumentError, type AssetsParameters, type FlowsParameters, type VaultFlows } from '@earn/core'
import { parseAddress } from './address.ts'
import { ownsSolanaChain } from './chain.ts'
import type { SolanaClient } from './client.ts'

function checkChain(chainId: string): void {
  if (!ownsSolanaChain(chainId)) throw new InvalidArgumentError(`chainId ${chainId} is not a Solana cluster`, { chainId: 'not a Solana cluster' })
}

export async function readAssets(_client: SolanaClient, p: AssetsParameters): Promise<bigint> {
  checkChain(p.chainId)
  parseAddress(p.vaultAddress, 'vaultAddress')
  if (p.shares < 0n) throw new InvalidArgumentError('shares must not be negative', { shares: 'negative' })
  return p.shares
}

export async function readFlows(_client: SolanaClient, p: FlowsParameters): Promise<VaultFlows | null> {
  checkChain(p.chainId)
  parseAddress(p.vaultAddress, 'vaultAddress')
  parseAddress(p.owner, 'owner')
  return null
}
