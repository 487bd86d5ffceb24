/**
 * Balances read live from the chain (the action preflight must not act on a stale number). ERC-20 reads go
 * through the client's `call` (calldata from calldata.ts), so concurrent reads for one chain fold into one
 * Multicall3 call, and identical reads waiting in the same batch share one answer (shared.ts `shareUnsent`).
 */
import { type BalanceParameters, NATIVE_TOKEN } from '@earn/core'
import { parse } from './address.ts'
import { balanceOfData, readUint256 } from './calldata.ts'
import { requirePublicClient, type EvmClient } from './client.ts'
import { notErc20 } from './erc20.ts'
import { ask } from './rpc.ts'
import { shareUnsent } from './shared.ts'

export { NATIVE_TOKEN }

export async function read(client: EvmClient, p: BalanceParameters): Promise<bigint> {
  const owner = parse(p.owner, 'owner')
  const token = p.token === NATIVE_TOKEN ? NATIVE_TOKEN : parse(p.token, 'token')
  const publicClient = requirePublicClient(client, p.chainId)

  // The coin's balance goes through viem, which may batch it but never joins one already sent: not shared here.
  if (token === NATIVE_TOKEN) return ask(p.chainId, () => publicClient.getBalance({ address: owner }))
  return shareUnsent(client, p.chainId, publicClient, `${p.chainId}|balance|${token}|${owner}`, () => {
    return ask(
      p.chainId,
      () => readUint256(client, p.chainId, publicClient, token, balanceOfData(owner)),
      () => {
        // The chain answered: there is no ERC-20 at that address (no code, or a contract without balanceOf).
        throw notErc20(p.chainId, token, 'token')
      },
    )
  })
}
