/** Deposit and withdraw building for TON, and reading attribution tags back: issue 6 fills these in. */
import {
  ApiError,
  type BuildParameters,
  type ReadTagParameters,
  type ReadTagResult,
  type UnsignedTransaction,
  type VaultParameters,
  type VaultState,
} from '@earn/core'
import type { TonChainClient } from './client.ts'

export async function buildTonTransactions(_client: TonChainClient, _p: BuildParameters): Promise<UnsignedTransaction[]> {
  throw new ApiError('INTERNAL', 'TON transaction building is not implemented yet')
}

export async function readTonTag(_client: TonChainClient, _p: ReadTagParameters): Promise<ReadTagResult> {
  throw new ApiError('INTERNAL', 'TON attribution reading is not implemented yet')
}

export async function readTonVault(_client: TonChainClient, _p: VaultParameters): Promise<VaultState> {
  throw new ApiError('INTERNAL', 'TON vault reading is not implemented yet')
}
