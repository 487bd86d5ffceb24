/**
 * A vault's on-chain facts for the catalog. Not built yet: Solana vaults have no common standard
 * like ERC-4626, so each protocol's accounts need their own reader.
 */
import { ApiError, type VaultParameters, type VaultState } from '@earn/core'
import type { SolanaClient } from './client.ts'

export async function readVault(_client: SolanaClient, _p: VaultParameters): Promise<VaultState> {
  throw new ApiError('INTERNAL', 'Solana vault reading is not implemented yet')
}
