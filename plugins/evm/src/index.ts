/**
 * The EVM ecosystem: addresses, EIP-4361 sign-in (EOA offline; ERC-1271 and ERC-6492 contract wallets through
 * the chain's RPC), live balances, ERC-4626 vault facts, deposit and withdraw steps (direct, or through a
 * Uniswap-V2-style router in swap mode) with the attribution tag in the calldata, and reading that tag back.
 * Configured by `EVM_RPC_URLS` and `EVM_SWAP_ROUTERS`.
 */
import { defineEcosystem } from '@earn/core'
import * as address from './address.ts'
import * as balance from './balance.ts'
import { connect } from './client.ts'
import * as signIn from './signIn.ts'
import * as transactions from './transactions.ts'
import { vault } from './vault.ts'
import * as portfolio from './portfolio.ts'
import * as transfer from './transfer.ts'
import { findFundings } from './fundings.ts'
import { health } from './health.ts'
import { withinBudget } from './budget.ts'
import { onServedChain } from './servedChain.ts'
import { assertTransactionHash } from './readTag.ts'

const onChain = (p: { chainId: string }) => p.chainId

export const evm = defineEcosystem({
  id: 'evm',
  // Chains whose coin is another (POL, BNB, xDAI) keep 18 decimals; their catalog names it (a `native` token).
  nativeCoin: { symbol: 'ETH', decimals: 18 },
  // EVM chain ids are positive decimal integers (EIP-155), as far as EVM_RPC_URLS and SIWE take them (2^53 - 1).
  ownsChain: (chainId: string) => /^[1-9]\d{0,15}$/.test(chainId) && Number.isSafeInteger(Number(chainId)),
  chainIdForms: 'a decimal EIP-155 chain id, such as 1 or 8453',
  connect,
  health,
  address: { isValid: address.isValid, parse: address.parse, format: address.format },
  // Each capability that asks the chain answers within the client's budget (budget.ts).
  signIn: { defaultChainId: signIn.DEFAULT_CHAIN_ID, message: signIn.message, verify: withinBudget(signIn.verify, (p) => p.chainId ?? signIn.DEFAULT_CHAIN_ID) },
  // Whatever reads the state it acts on, or remembers, first checks that the RPC serves its chain (servedChain.ts);
  // vault facts and sign-in check it themselves.
  balance: {
    read: onServedChain(withinBudget(balance.read, onChain), onChain),
    vault: withinBudget(vault, onChain),
    assets: onServedChain(withinBudget(portfolio.assets, onChain), onChain),
    flows: onServedChain(withinBudget(portfolio.flows, onChain), onChain),
    servesChain: withinBudget(portfolio.servesChain, (chainId) => chainId),
  },
  transactions: {
    check: transactions.check,
    build: onServedChain(withinBudget(transactions.build, onChain), onChain),
    buildTransfer: onServedChain(withinBudget(transfer.buildTransfer, onChain), onChain),
    readTransfers: onServedChain(withinBudget(transfer.readTransfers, onChain), onChain, (p) => assertTransactionHash(p.txHash)),
    findFundings: onServedChain(withinBudget(findFundings, onChain), onChain),
  },
})

export {
  connect,
  evmClientFromPublicClients,
  MULTICALL_BATCH_BYTES,
  MULTICALL_WAIT_MS,
  type EvmClient,
  type EvmClientOptions,
  type EvmClientState,
} from './client.ts'
export { BUDGET_TIMEOUTS } from './budget.ts'
export { parseRpcUrls, parseSwapRouters, RPC_URLS_VARIABLE, SWAP_ROUTERS_VARIABLE } from './env.ts'
export { NATIVE_TOKEN } from './balance.ts'
export { SIGN_IN_STATEMENT } from './signIn.ts'
export { classifyRpcError, type RpcFailure } from './rpc.ts'
export { DEFAULT_GAS, reusedGasLimit, withHeadroom, type GasLimitSource, type GasStep } from './gas.ts'
export { appendTag, findTag, TAG_PREFIX } from './tag.ts'
export { minimumOut, SWAP_DEADLINE_SECONDS, swapRouterAbi } from './swap.ts'
