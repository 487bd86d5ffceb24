/**
 * `@earn/plugin-solana`: Solana wallets for the Earn API. Base58 addresses, Sign-In-With-Solana
 * membership proofs verified offline, SOL / SPL balances, deposits and withdrawals as unsigned v0
 * transactions tagged with a Memo, and reading those tags back; all through @solana/kit.
 */
import { defineEcosystem } from '@earn/core'
import { formatAddress, isValidAddress, parseAddress } from './address.ts'
import { readBalance } from './balance.ts'
import { canonicalSolanaChain, ownsSolanaChain } from './chain.ts'
import { connect } from './client.ts'
import { SOLANA_IN_FLIGHT } from './transport.ts'
import { signInMessage, verifySignIn } from './signIn.ts'
import { buildTransactions, checkTransactions } from './transactions.ts'
import { readVault } from './vault.ts'
import { readAssets, readFlows } from './portfolio.ts'
import { buildTransfer } from './fundingTransfer.ts'
import { readTransfers } from './readTransfers.ts'
import { findFundings } from './fundings.ts'
import { health } from './health.ts'

export type { SolanaClient } from './client.ts'

export const solana = defineEcosystem({
  id: 'solana',
  nativeCoin: { symbol: 'SOL', decimals: 9 },
  receiptsOneToOne: true,
  ownsChain: ownsSolanaChain,
  chainIdForms: 'mainnet, devnet, testnet, localnet, or solana: and the genesis hash (CAIP-2)',
  canonicalChainId: canonicalSolanaChain,
  connect,
  health,
  address: { isValid: isValidAddress, parse: (input: string) => parseAddress(input), format: formatAddress },
  signIn: { message: signInMessage, verify: verifySignIn },
  // Each balance is a request to the RPC: a portfolio's go as many at a time as the client sends
  // (core's portfolio/read.ts).
  balance: { read: readBalance, vault: readVault, assets: readAssets, flows: readFlows, readsAtOnce: SOLANA_IN_FLIGHT },
  transactions: { check: checkTransactions, build: buildTransactions, buildTransfer, readTransfers, findFundings },
})
