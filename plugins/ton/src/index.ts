/**
 * `@earn/plugin-ton`: TON wallets for the Earn API (TON Connect sign-in, TON and jetton balances,
 * deposits and withdrawals as TON Connect requests, attribution tags read back by transaction hash, stream fundings
 * found for the watch on pending streams).
 */
import { defineEcosystem } from '@earn/core'
import { formatTonAddress, formatTonContract, isValidTonAddress, parseTonAddress } from './address.ts'
import { readTonBalance } from './balance.ts'
import { withinBudget } from './budget.ts'
import { connectTon, TON_IN_FLIGHT } from './client.ts'
import { tonSignInMessage, verifyTonSignIn } from './signIn.ts'
import { buildTonTransactions, checkTonTransactions } from './transactions.ts'
import { readTonVault } from './vault.ts'
import { readTonAssets, readTonFlows } from './portfolio.ts'
import { buildTonTransfer } from './fundingTransfer.ts'
import { readTonTransfers } from './readTransfers.ts'
import { findTonFundings } from './fundings.ts'
import { health } from './health.ts'
import { onItsNetwork } from './network.ts'
import { parseTxHash } from './lookup.ts'

export const ton = defineEcosystem({
  id: 'ton',
  nativeCoin: { symbol: 'TON', decimals: 9 },
  receiptsOneToOne: true,
  // TON's global ids: -239 mainnet, -3 testnet. Tests run the sandbox as -239: its client stands in
  // for mainnet's API, as an anvil client does for an EVM chain id (see README).
  ownsChain: (chainId: string) => chainId === '-239' || chainId === '-3',
  chainIdForms: '-239 (mainnet) or -3 (testnet)',
  connect: connectTon,
  health,
  address: {
    isValid: isValidTonAddress,
    parse: (input: string) => parseTonAddress(input),
    format: formatTonAddress,
    formatContract: formatTonContract,
  },
  signIn: {
    message: tonSignInMessage,
    verify: withinBudget(verifyTonSignIn),
  },
  // Each chain read first checks the endpoint serves the network the chain id names (network.ts).
  balance: {
    read: onItsNetwork(readTonBalance),
    vault: onItsNetwork(readTonVault),
    assets: readTonAssets,
    flows: readTonFlows,
    // Each balance is up to four calls to the endpoint, two at a time (a jetton's state and get-method together): a
    // portfolio's go half as many at a time as the client sends, so no read's calls wait for a slot behind the
    // portfolio's own (an audit: at 128 reads, a slow endpoint's second half timed out waiting; core's portfolio/read.ts).
    readsAtOnce: TON_IN_FLIGHT / 2,
  },
  transactions: {
    check: checkTonTransactions,
    build: onItsNetwork(buildTonTransactions, checkTonTransactions),
    buildTransfer: onItsNetwork(buildTonTransfer),
    readTransfers: onItsNetwork(readTonTransfers, (_, p) => void parseTxHash(p.txHash)),
    findFundings: onItsNetwork(findTonFundings),
  },
})

export { checkTonAddress, formatTonAddress, formatTonContract, isValidTonAddress, parseTonAddress, toTonAddress } from './address.ts'
export { connectTon, createTonClient, type ProviderFactory, type TonChainClient, type TonClientOptions } from './client.ts'
export { type AccountTransactions, type AccountWindow, indexUrlFrom, MAX_LISTED_TRANSACTIONS, type MessageLookup, messageCells, parseTxHash, toncenterLookups, type ToncenterLookupOptions, type TransactionLookup } from './lookup.ts'
export { CLOCK_SKEW_SECONDS, MAX_PROOF_AGE_SECONDS, tonSignInMessage, verifyTonSignIn } from './signIn.ts'
export { decodeTonProof, tonProofHash, type TonProof } from './tonProof.ts'
export { publicKeyFromStateInit, type WalletKey, type WalletVersion } from './walletState.ts'
export { readTonBalance } from './balance.ts'
export { DEFAULT_JETTON_DECIMALS, jettonDecimals, jettonWalletOf, ownJettonWallet } from './jettonMaster.ts'
export { commentCell, readComment } from './comment.ts'
export { JETTON_OP, jettonTransferBody, parseInternalTransfer, parseJettonTransfer, type JettonTransfer } from './jetton.ts'
export { FIRST_LOOK_SECONDS, findTonFundings, MAX_FOLLOWED } from './fundings.ts'
export { TON_MAINNET, TON_TESTNET, VALIDITY_SECONDS, type TonConnectMessage, type TonConnectRequest } from './request.ts'
export { buildTonTransactions, JETTON_FORWARD_TON, JETTON_TRANSFER_TON } from './transactions.ts'
export { readTonTag, TAG_PREFIX, tagOfTransaction } from './tag.ts'
export { readTonVault } from './vault.ts'
