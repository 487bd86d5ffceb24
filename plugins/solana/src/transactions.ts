/**
 * Deposit and withdraw steps for Solana opportunities: one unsigned v0 transaction each, the user
 * paying the fee, the attribution tag in a memo. Reading the tag back lives in readTag.ts.
 */
import type { BuildParameters, UnsignedTransaction } from '@earn/core'
import { buildContext, checkParameters } from './build.ts'
import type { SolanaClient } from './client.ts'
import { buildDeposit, checkDeposit } from './deposit.ts'
import { rpcFailure } from './rpc.ts'
import { buildWithdraw, checkWithdraw } from './withdraw.ts'

export { readTag } from './readTag.ts'

/** Everything a build would refuse without reading the chain, refused the same way. */
export function checkTransactions(_client: SolanaClient, p: BuildParameters): void {
  checkParameters(p)
  if (p.kind === 'deposit') checkDeposit(p)
  else checkWithdraw(p)
}

/** Steps in signing order; on Solana every action is a single transaction. */
export async function buildTransactions(client: SolanaClient, p: BuildParameters): Promise<UnsignedTransaction[]> {
  // Every refusal that needs no chain comes first: the cluster check in buildContext is a read.
  checkTransactions(client, p)
  try {
    const ctx = await buildContext(client, p)
    return [p.kind === 'deposit' ? await buildDeposit(ctx, p) : await buildWithdraw(ctx, p)]
  } catch (e) {
    throw rpcFailure(e)
  }
}
