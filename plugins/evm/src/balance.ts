/**
 * Balances read live from the chain (the action preflight must not act on a stale number). ERC-20 reads go
 * through `readContract`, so concurrent reads for one chain fold into one Multicall3 call where the chain has one.
 */
import { ApiError, InvalidArgumentError, type BalanceParameters, type VaultParameters, type VaultState } from '@earn/core'
import { erc20Abi } from 'viem'
import { parse } from './address.ts'
import type { EvmClient } from './client.ts'
import { ask } from './rpc.ts'

export const NATIVE_TOKEN = 'native'

export async function read(client: EvmClient, p: BalanceParameters): Promise<bigint> {
  const owner = parse(p.owner, 'owner')
  const token = p.token === NATIVE_TOKEN ? NATIVE_TOKEN : parse(p.token, 'token')
  const publicClient = client.publicClient(p.chainId)
  if (!publicClient)
    throw new InvalidArgumentError(`EVM chain ${p.chainId} is not supported by this server (no RPC configured for it)`, {
      chainId: `no RPC configured for chain ${p.chainId}`,
    })

  if (token === NATIVE_TOKEN)
    return ask(p.chainId, () => publicClient.getBalance({ address: owner }))
  return ask(
    p.chainId,
    () => publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [owner] }),
    () => {
      // The chain answered: there is no ERC-20 at that address (no code, or a contract without balanceOf).
      throw new InvalidArgumentError(`token ${token} is not an ERC-20 contract on chain ${p.chainId}`, {
        token: `no ERC-20 balanceOf at this address on chain ${p.chainId}`,
      })
    },
  )
}

/** ERC-4626 facts for the catalog: issue 5. */
export async function vault(_client: EvmClient, _p: VaultParameters): Promise<VaultState> {
  throw new ApiError('INTERNAL', 'EVM vault reading is not implemented yet')
}
