/**
 * Test fixtures: anvil with an ERC-4626 opportunity and a swap pool feeding it, and funded users. Only tests
 * import this file.
 */
import type { BuildParameters, OpportunityTarget } from '@earn/core'
import { erc20Abi, erc4626Abi, getAddress, parseUnits, type Address, type Hash } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import {
  createPair,
  deploySwapRouter,
  deployToken,
  deployVault,
  mintToken,
  sendUnsigned,
  setNativeBalance,
  startAnvil,
  type Anvil,
} from '../../../test/chains/evm.ts'
import { evmClientFromPublicClients, type EvmClient } from './client.ts'

export type DepositParameters = Extract<BuildParameters, { kind: 'deposit' }>

export interface EarnChain {
  anvil: Anvil
  /** The vault's asset: tUSD, 6 decimals. */
  asset: Address
  vault: Address
  /** A token with a tUSD pool on the router (1 WETH-like unit = 2 000 tUSD). */
  other: Address
  /** A token with no pool. */
  lonely: Address
  router: Address
  opportunity: OpportunityTarget
  /** A client with the router configured; a fresh one has measured no gas yet. */
  client(options?: { swapRouter?: boolean }): EvmClient
  /** A wallet with gas money and `assets` of the asset. */
  user(assets?: bigint): Promise<PrivateKeyAccount>
  tag(actionId?: string): string
  deposit(p: { owner: PrivateKeyAccount; amount: bigint; tokenIn?: Address; mode?: 'direct' | 'swap'; slippageBps?: number; tag?: string }): DepositParameters
  /** Sends built steps in order from `owner`; resolves to the hashes, failing on the first revert. */
  sendAll(owner: PrivateKeyAccount, steps: { transaction: Record<string, unknown> }[]): Promise<Hash[]>
  read: {
    balance(token: Address, owner: Address): Promise<bigint>
    allowance(token: Address, owner: Address, spender: Address): Promise<bigint>
    previewDeposit(assets: bigint): Promise<bigint>
    previewRedeem(shares: bigint): Promise<bigint>
  }
}

/** `anvilArgs`: extra anvil flags, e.g. `--slots-in-an-epoch` to move its `finalized` block. */
export async function startEarnChain(options: { anvilArgs?: string[] } = {}): Promise<EarnChain> {
  const anvil = await startAnvil({ args: options.anvilArgs })
  // EIP-55 throughout, as a wallet shows addresses; the plugin answers in lowercase.
  const asset = getAddress(await deployToken(anvil, { symbol: 'tUSD', decimals: 6 }))
  const vault = getAddress(await deployVault(anvil, asset))
  const other = getAddress(await deployToken(anvil, { name: 'Test Ether', symbol: 'tETH', decimals: 18 }))
  const lonely = getAddress(await deployToken(anvil, { name: 'Lonely', symbol: 'LONE', decimals: 18 }))
  const router = getAddress(await deploySwapRouter(anvil))
  await createPair(anvil, router, other, asset, parseUnits('1000', 18), parseUnits('2000000', 6))
  const chainId = anvil.chainId
  const opportunity: OpportunityTarget = {
    id: '00000000-0000-4000-8000-000000000005',
    chainId,
    vaultAddress: vault.toLowerCase(),
    baseToken: asset.toLowerCase(),
    receiptToken: vault.toLowerCase(),
  }
  const read = anvil.publicClient.readContract
  let actions = 0
  const chain: EarnChain = {
    anvil,
    asset,
    vault,
    other,
    lonely,
    router,
    opportunity,
    client: ({ swapRouter = true } = {}) =>
      evmClientFromPublicClients({ [chainId]: anvil.publicClient }, swapRouter ? { swapRouters: { [chainId]: router } } : {}),
    async user(assets = 0n) {
      const account = privateKeyToAccount(generatePrivateKey())
      await setNativeBalance(anvil, account.address, 10n ** 18n)
      if (assets > 0n) await mintToken(anvil, asset, account.address, assets)
      return account
    },
    tag: (actionId = `a${++actions}`) => `earn:v1:dist-42:${actionId}:3f9a0c1b2d4e5f60`,
    deposit: (p) => ({
      kind: 'deposit',
      chainId,
      owner: p.owner.address.toLowerCase(),
      opportunity,
      amount: p.amount,
      tag: p.tag ?? chain.tag(),
      slippageBps: p.slippageBps ?? 50,
      tokenIn: p.tokenIn ?? asset,
      mode: p.mode ?? 'direct',
    }),
    async sendAll(owner, steps) {
      const hashes: Hash[] = []
      for (const [i, s] of steps.entries()) {
        const receipt = await sendUnsigned(anvil, owner, s.transaction)
        if (receipt.status !== 'success') throw new Error(`step ${i} reverted (${receipt.transactionHash})`)
        hashes.push(receipt.transactionHash)
      }
      return hashes
    },
    read: {
      balance: (token, owner) => read({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [owner] }),
      allowance: (token, owner, spender) => read({ address: token, abi: erc20Abi, functionName: 'allowance', args: [owner, spender] }),
      previewDeposit: (assets) => read({ address: vault, abi: erc4626Abi, functionName: 'previewDeposit', args: [assets] }),
      previewRedeem: (shares) => read({ address: vault, abi: erc4626Abi, functionName: 'previewRedeem', args: [shares] }),
    },
  }
  return chain
}
