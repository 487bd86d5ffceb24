/**
 * What the chain knows about an ERC-4626 vault, for the catalog: its asset, the asset's decimals, its own (share)
 * decimals and the assets it holds. The reads ride the client's Multicall3 batching, so enriching a catalog costs few round trips.
 */
import { InvalidArgumentError, NATIVE_TOKEN, type VaultParameters, type VaultState } from '@earn/core'
import { type Address, erc20Abi, erc4626Abi, type PublicClient, RawContractError } from 'viem'
import { format, parse } from './address.ts'
import { requirePublicClient, vouch, type EvmClient } from './client.ts'
import { ask } from './rpc.ts'

export async function vault(client: EvmClient, p: VaultParameters): Promise<VaultState> {
  const address = parse(p.vaultAddress, 'vaultAddress')
  const publicClient = requirePublicClient(client, p.chainId)
  const notAVault = () => {
    throw new InvalidArgumentError(`${format(address)} is not an ERC-4626 vault on chain ${p.chainId}`, {
      vaultAddress: `no ERC-4626 asset() and totalAssets() at this address on chain ${p.chainId}`,
    })
  }
  const [[asset, totalAssets], receiptDecimals] = await Promise.all([
    ask(
      p.chainId,
      () =>
        Promise.all([
          publicClient.readContract({ address, abi: erc4626Abi, functionName: 'asset' }),
          publicClient.readContract({ address, abi: erc4626Abi, functionName: 'totalAssets' }),
        ]),
      notAVault,
    ),
    // EIP-4626 vaults carry ERC-20 metadata, but one without `decimals()` is still a vault: its shares are then
    // described with the file's decimals, or the asset's.
    ask<number | undefined>(p.chainId, () => readDecimals(publicClient, address), () => undefined),
  ])
  const decimals = await ask(
    p.chainId,
    () => readDecimals(publicClient, asset),
    () => {
      throw new InvalidArgumentError(`the asset of vault ${format(address)} on chain ${p.chainId} is not an ERC-20 token`, {
        vaultAddress: `its asset ${format(asset)} has no decimals() a uint8 holds`,
      })
    },
  )
  const tokenDecimals = await tokensDecimals(p.chainId, publicClient, p.tokens ?? [])
  vouch(client, p.chainId, [address, asset, ...(p.tokens ?? []).filter((t) => t !== NATIVE_TOKEN)])
  return {
    baseToken: asset.toLowerCase(),
    receiptToken: address,
    decimals,
    ...(receiptDecimals === undefined ? {} : { receiptDecimals }),
    totalAssets,
    ...(tokenDecimals === undefined ? {} : { tokenDecimals }),
  }
}

/** Each token's `decimals()`, in one batch; null where the address answers none (no ERC-20 there). */
async function tokensDecimals(chainId: string, publicClient: PublicClient, tokens: readonly string[]): Promise<Record<string, number | null> | undefined> {
  if (!tokens.length) return undefined
  const answers = await Promise.all(
    tokens.map((token) =>
      ask<number | null>(chainId, () => readDecimals(publicClient, parse(token, 'token')), () => null),
    ),
  )
  return Object.fromEntries(tokens.map((token, i) => [token, answers[i]!]))
}

/**
 * `decimals()` as ERC-20 types it, a uint8. viem decodes the word without checking its range, so a contract
 * answering 300 would be stored as 300 and break every view of the entry: such an answer is no decimals at all,
 * a refusal as a revert is (`RawContractError`, which `ask` hands to the caller's fallback).
 */
async function readDecimals(publicClient: PublicClient, address: Address): Promise<number> {
  const decimals = await publicClient.readContract({ address, abi: erc20Abi, functionName: 'decimals' })
  if (!Number.isInteger(decimals) || decimals < 0 || decimals > 255) throw new RawContractError({ data: '0x' })
  return decimals
}
