/** `@earn/plugin-ton`: TON wallets for the Earn API (TON Connect sign-in, TON and jetton balances). */
import { defineEcosystem } from '@earn/core'
import { formatTonAddress, isValidTonAddress, parseTonAddress } from './address.ts'
import { readTonBalance } from './balance.ts'
import { connectTon } from './client.ts'
import { tonSignInMessage, verifyTonSignIn } from './signIn.ts'
import { buildTonTransactions, readTonTag, readTonVault } from './transactions.ts'

export const ton = defineEcosystem({
  id: 'ton',
  // TON's global ids: -239 mainnet, -3 testnet.
  ownsChain: (chainId: string) => chainId === '-239' || chainId === '-3',
  connect: connectTon,
  address: {
    isValid: isValidTonAddress,
    parse: (input: string) => parseTonAddress(input),
    format: formatTonAddress,
  },
  signIn: {
    message: tonSignInMessage,
    verify: verifyTonSignIn,
  },
  balance: {
    read: readTonBalance,
    vault: readTonVault,
  },
  transactions: {
    build: buildTonTransactions,
    readTag: readTonTag,
  },
})

export { checkTonAddress, formatTonAddress, isValidTonAddress, parseTonAddress, toTonAddress } from './address.ts'
export { connectTon, createTonClient, type ProviderFactory, type TonChainClient } from './client.ts'
export { CLOCK_SKEW_SECONDS, MAX_PROOF_AGE_SECONDS, tonSignInMessage, verifyTonSignIn } from './signIn.ts'
export { decodeTonProof, tonProofHash, type TonProof } from './tonProof.ts'
export { publicKeyFromStateInit, type WalletKey, type WalletVersion } from './walletState.ts'
export { readTonBalance } from './balance.ts'
