/**
 * The EVM ecosystem: addresses, EIP-4361 sign-in (EOA offline; ERC-1271 and ERC-6492 contract wallets through
 * the chain's RPC), live balances, and (later) ERC-4626 transactions. Configured by `EVM_RPC_URLS`.
 */
import { defineEcosystem } from '@earn/core'
import * as address from './address.ts'
import * as balance from './balance.ts'
import { connect } from './client.ts'
import * as signIn from './signIn.ts'
import * as transactions from './transactions.ts'

export const evm = defineEcosystem({
  id: 'evm',
  // EVM chain ids are positive decimal integers (EIP-155).
  ownsChain: (chainId: string) => /^[1-9]\d{0,18}$/.test(chainId),
  connect,
  address: { isValid: address.isValid, parse: address.parse, format: address.format },
  signIn: { message: signIn.message, verify: signIn.verify },
  balance: { read: balance.read, vault: balance.vault },
  transactions: { build: transactions.build, readTag: transactions.readTag },
})

export { connect, evmClientFromPublicClients, parseRpcUrls, RPC_URLS_VARIABLE, type EvmClient } from './client.ts'
export { NATIVE_TOKEN } from './balance.ts'
export { SIGN_IN_STATEMENT } from './signIn.ts'
export { classifyRpcError, type RpcFailure } from './rpc.ts'
