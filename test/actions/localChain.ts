/**
 * The local chain the sample catalog (catalog/local.json) describes: a fresh anvil where the first dev account
 * deploys tUSD, a vault over it and a second vault over it, in that order, so the contracts land at the addresses
 * the catalog names (a CREATE address depends only on the deployer and its nonce). Then a swap router and a tEUR/tUSD
 * pool for swap-mode deposits. Tests and the bench start their chain here; a drift from the catalog fails loudly.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { evmClientFromPublicClients } from '@earn/plugin-evm'
import type { Address } from 'viem'
import { createPair, deploySwapRouter, deployToken, deployVault, startAnvil, type Anvil } from '../chains/evm.ts'

export const LOCAL_CATALOG_PATH = join(import.meta.dir, '..', '..', 'catalog', 'local.json')

export interface CatalogEntryJson {
  id: string
  name: string
  ecosystem: string
  chainId: string
  vaultAddress: string
  depositTokens: { address: string; symbol: string; decimals: number }[]
  baseToken: { symbol: string; address?: string; decimals?: number }
  receiptToken: { symbol: string; address?: string; decimals?: number }
  swapRouteEnabled: boolean
  [field: string]: unknown
}

export interface CatalogJson {
  opportunities: CatalogEntryJson[]
}

/** The sample catalog's entries of one ecosystem (each test starts only that ecosystem's chain). */
export const localCatalog = (ecosystem = 'evm'): CatalogJson => {
  const file = JSON.parse(readFileSync(LOCAL_CATALOG_PATH, 'utf8')) as CatalogJson
  return { opportunities: file.opportunities.filter((o) => o.ecosystem === ecosystem) }
}

export interface LocalChain {
  anvil: Anvil
  /** tUSD, 6 decimals: the vaults' asset. */
  token: Address
  /** The direct-only opportunity's vault. */
  vault: Address
  /** The swap-enabled opportunity's vault. */
  swapVault: Address
  router: Address
  /** tEUR, 18 decimals: routable into tUSD through the router's pool. */
  otherToken: Address
  directId: string
  swapId: string
  /** An EVM client bound to this anvil, with the router configured for swap mode. */
  /** On anvil's public client, with the swap router; `confirmations` as EVM_CONFIRMATIONS would set for chain 31337. */
  evmClient(options?: { confirmations?: number }): ReturnType<typeof evmClientFromPublicClients>
  /** `EVM_RPC_URLS` and `EVM_SWAP_ROUTERS` for a server process. */
  env(rpcUrl?: string): Record<string, string>
}

export async function startLocalChain(): Promise<LocalChain> {
  const anvil = await startAnvil()
  try {
    // Order matters: these three are the catalog's addresses.
    const token = await deployToken(anvil, { name: 'Test USD', symbol: 'tUSD', decimals: 6 })
    const vault = await deployVault(anvil, token, { name: 'Test Vault Share', symbol: 'vtUSD' })
    const swapVault = await deployVault(anvil, token, { name: 'Swap Test Vault Share', symbol: 'vstUSD' })
    const catalog = localCatalog()
    const [direct, swap] = catalog.opportunities
    const same = (a: string | undefined, b: string) => a !== undefined && a.toLowerCase() === b.toLowerCase()
    if (!direct || !swap || !same(direct.vaultAddress, vault) || !same(swap.vaultAddress, swapVault) || !same(direct.depositTokens[0]?.address, token) || !same(direct.baseToken.address, token))
      throw new Error(`catalog/local.json does not name the contracts a fresh anvil deploys (token ${token}, vaults ${vault}, ${swapVault})`)

    const router = await deploySwapRouter(anvil)
    const otherToken = await deployToken(anvil, { name: 'Test Euro', symbol: 'tEUR', decimals: 18 })
    // 1 tEUR is about 1.1 tUSD, in a pool deep enough that test swaps barely move the price.
    await createPair(anvil, router, otherToken, token, 1_000_000n * 10n ** 18n, 1_100_000n * 10n ** 6n)
    return {
      anvil,
      token,
      vault,
      swapVault,
      router,
      otherToken,
      directId: direct.id,
      swapId: swap.id,
      evmClient: (options = {}) =>
        evmClientFromPublicClients(
          { [anvil.chainId]: anvil.publicClient },
          { swapRouters: { [anvil.chainId]: router }, ...(options.confirmations ? { confirmations: { [anvil.chainId]: options.confirmations } } : {}) },
        ),
      env: (rpcUrl = anvil.url) => ({ EVM_RPC_URLS: `${anvil.chainId}=${rpcUrl}`, EVM_SWAP_ROUTERS: `${anvil.chainId}=${router}` }),
    }
  } catch (e) {
    await anvil.stop()
    throw e
  }
}
