/** Unsigned deposit and withdraw steps for ERC-4626 vaults, and reading attribution tags back: issue 5. */
import { ApiError, type BuildParameters, type ReadTagParameters, type ReadTagResult, type UnsignedTransaction } from '@earn/core'
import type { EvmClient } from './client.ts'

export async function build(_client: EvmClient, _p: BuildParameters): Promise<UnsignedTransaction[]> {
  throw new ApiError('INTERNAL', 'EVM transaction building is not implemented yet')
}

export async function readTag(_client: EvmClient, _p: ReadTagParameters): Promise<ReadTagResult> {
  throw new ApiError('INTERNAL', 'EVM attribution reading is not implemented yet')
}
