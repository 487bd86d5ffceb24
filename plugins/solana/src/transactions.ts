/**
 * Deposit and withdraw steps for Solana opportunities, and reading their attribution memos back.
 * Not built yet: the server answers 500 with a plain statement rather than steps a wallet could
 * sign by mistake.
 */
import { ApiError, type BuildParameters, type ReadTagParameters, type ReadTagResult, type UnsignedTransaction } from '@earn/core'
import type { SolanaClient } from './client.ts'

export async function buildTransactions(_client: SolanaClient, _p: BuildParameters): Promise<UnsignedTransaction[]> {
  throw new ApiError('INTERNAL', 'Solana transaction building is not implemented yet')
}

export async function readTag(_client: SolanaClient, _p: ReadTagParameters): Promise<ReadTagResult> {
  throw new ApiError('INTERNAL', 'Solana attribution reading is not implemented yet')
}
