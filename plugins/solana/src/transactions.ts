/**
 * Deposit and withdraw steps for Solana opportunities: one unsigned v0 transaction each, the user
 * paying the fee, the attribution tag in a memo. Reading the tag back lives in readTag.ts.
 */
import type { BuildParameters, UnsignedTransaction } from '@earn/core'
import { buildContext } from './build.ts'
import type { SolanaClient } from './client.ts'
import { buildDeposit } from './deposit.ts'
import { rpcFailure } from './rpc.ts'
import { buildWithdraw } from './withdraw.ts'

export { readTag } from './readTag.ts'

/** Steps in signing order; on Solana every action is a single transaction. */
export async function buildTransactions(client: SolanaClient, p: BuildParameters): Promise<UnsignedTransaction[]> {
  const ctx = buildContext(client, p)
  try {
    return [p.kind === 'deposit' ? await buildDeposit(ctx, p) : await buildWithdraw(ctx, p)]
  } catch (e) {
    throw rpcFailure(e)
  }
}
