/**
 * What the chain knows about an ERC-4626 vault, for the catalog: its asset, the asset's decimals, its own (share)
 * decimals and the assets it holds. The reads ride the plugin's Multicall3 batcher (calldata.ts `readCall`), so
 * enriching a catalog costs few round trips, and a vault that fails its whole batch (a return bomb, a gas burner)
 * fails its own reads only: with viem's batching, every vault read beside it failed as "not an ERC-4626 vault".
 */
import { InvalidArgumentError, NATIVE_TOKEN, type VaultParameters, type VaultState } from '@earn/core'
import { type Address, decodeFunctionResult, encodeFunctionData, erc4626Abi, type Hex, type PublicClient, RawContractError } from 'viem'
import { format, parse } from './address.ts'
import { decodeUint256, readCall, readUint256, SELECTORS } from './calldata.ts'
import { readRight, refuse, refused, requirePublicClient, vouch, type EvmClient } from './client.ts'
import { ask, assertServesChain } from './rpc.ts'

const ASSET_DATA = encodeFunctionData({ abi: erc4626Abi, functionName: 'asset' })
const TOTAL_ASSETS_DATA = encodeFunctionData({ abi: erc4626Abi, functionName: 'totalAssets' })

/** One view call of a vault or token, through the chain's batcher; `read(to, data)`. */
type Read = (to: Address, data: Hex) => Promise<Hex | undefined>

export async function vault(client: EvmClient, p: VaultParameters): Promise<VaultState> {
  const address = parse(p.vaultAddress, 'vaultAddress')
  const publicClient = requirePublicClient(client, p.chainId)
  // Asked beside the reads: an RPC URL that serves another chain (vaults often share an address across chains) would
  // have that chain's facts stored as this one's. Its failure is the answer, whatever the reads met there.
  const served = assertServesChain(publicClient, p.chainId)
  const state = readVault(client, p, address, publicClient, served).catch(async (error: unknown) => {
    await served
    throw error
  })
  state.then(
    (facts) => readRight(client, p.chainId, [address, facts.baseToken]),
    (error: unknown) => {
      if (error instanceof InvalidArgumentError) refuse(client, p.chainId, [address, ...(error instanceof RefusedAssetError ? [error.asset] : [])])
    },
  )
  state.catch(() => {})
  await served
  return state
}

/** The vault's asset answers no decimals() a uint8 holds. */
class RefusedAssetError extends InvalidArgumentError {
  constructor(
    vault: Address,
    readonly asset: Address,
    chainId: string,
  ) {
    super(`the asset of vault ${format(vault)} on chain ${chainId} is not an ERC-20 token`, { vaultAddress: `its asset ${format(asset)} has no decimals() a uint8 holds` })
  }
}

async function readVault(client: EvmClient, p: VaultParameters, address: Address, publicClient: PublicClient, served: Promise<void>): Promise<VaultState> {
  const read: Read = (to, data) => readCall(client, p.chainId, publicClient, to, data)
  // The contracts the catalog names are vouched for as they are read, so their reads share batches from the first
  // pass on (unvouched, each contract's went in a call of its own: an import of 40 vaults made ~50 eth_calls); the
  // asset, which the chain names, once the RPC is known to serve that chain; neither where the chain refused it last.
  vouch(client, p.chainId, [address, ...(p.tokens ?? []).filter((t) => t !== NATIVE_TOKEN)].filter((a) => !refused(client, p.chainId, a)))
  const notAVault = () => {
    throw new InvalidArgumentError(`${format(address)} is not an ERC-4626 vault on chain ${p.chainId}`, {
      vaultAddress: `no ERC-4626 asset() and totalAssets() at this address on chain ${p.chainId}`,
    })
  }
  // The file's tokens are asked beside the vault (they need nothing it answers): a pass is two round trips in turn, not
  // three, and one where the vault's asset is among them (as deposit tokens usually are) needs no second for its decimals.
  const tokens = tokensDecimals(p.chainId, read, p.tokens ?? [])
  // A token that answers no decimals (none there, or one whose reads fail as a whole) is read apart, as a refused vault
  // is (an audit: a gas burner listed as a deposit token failed the shared batch of every pass, 52 requests for 20 reads).
  tokens.then((answers) => {
    for (const [token, decimals] of Object.entries(answers ?? {})) (decimals === null ? refuse : readRight)(client, p.chainId, [token])
  }, () => {})
  const [[asset, totalAssets], receiptDecimals] = await Promise.all([
    ask(
      p.chainId,
      () =>
        Promise.all([
          // An empty answer decodes as nothing (AbiDecodingZeroDataError): a refusal, as viem's readContract makes it.
          read(address, ASSET_DATA).then((data) => decodeFunctionResult({ abi: erc4626Abi, functionName: 'asset', data: data ?? '0x' })),
          readUint256(client, p.chainId, publicClient, address, TOTAL_ASSETS_DATA),
        ]),
      notAVault,
    ),
    // EIP-4626 vaults carry ERC-20 metadata, but one without `decimals()` is still a vault: its shares are then
    // described with the file's decimals, or the asset's.
    ask<number | undefined>(p.chainId, () => readDecimals(read, address), () => undefined),
  ])
  await served
  if (!refused(client, p.chainId, asset)) vouch(client, p.chainId, [asset])
  const tokenDecimals = await tokens
  const asToken = Object.entries(tokenDecimals ?? {}).find(([token]) => token.toLowerCase() === asset.toLowerCase())?.[1]
  const refusedAsset = () => {
    throw new RefusedAssetError(address, asset, p.chainId)
  }
  const decimals = asToken !== undefined ? (asToken ?? refusedAsset()) : await ask(p.chainId, () => readDecimals(read, asset), refusedAsset)
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
async function tokensDecimals(chainId: string, read: Read, tokens: readonly string[]): Promise<Record<string, number | null> | undefined> {
  if (!tokens.length) return undefined
  const answers = await Promise.all(
    tokens.map((token) =>
      ask<number | null>(chainId, () => readDecimals(read, parse(token, 'token')), () => null),
    ),
  )
  return Object.fromEntries(tokens.map((token, i) => [token, answers[i]!]))
}

/**
 * `decimals()` as ERC-20 types it, a uint8. The word is read whole, so a contract answering 300 is not taken as
 * 300 (it would break every view of the entry): such an answer is no decimals at all, a refusal as a revert is
 * (`RawContractError`, which `ask` hands to the caller's fallback).
 */
async function readDecimals(read: Read, address: Address): Promise<number> {
  const decimals = decodeUint256(await read(address, SELECTORS.decimals))
  if (decimals > 255n) throw new RawContractError({ data: '0x' })
  return Number(decimals)
}
