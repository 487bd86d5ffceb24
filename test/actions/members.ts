/** Wallets for action tests: registered through the membership flow, funded on the local chain. */
import { expect } from 'bun:test'
import { getBase58Decoder, signBytes, type KeyPairSigner } from '@solana/kit'
import type { Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { mintToken, setNativeBalance } from '../chains/evm.ts'
import type { Harness } from '../harness.ts'
import type { LocalChain } from './localChain.ts'

/** Registers a wallet through the HTTP flow (agreement, signature, create), as an integrator would. */
export async function register(h: Harness, wallet: PrivateKeyAccount): Promise<void> {
  const agreement = await h.post('/v2/membership/agreement', { address: wallet.address, walletEcosystem: 'evm', url: 'https://wallet.example.com' })
  expect(agreement.status).toBe(200)
  const signature = await wallet.signMessage({ message: agreement.body.message })
  const created = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature, nonce: agreement.body.nonce })
  expect(created.body).toEqual({ isMember: true, error: '' })
}

/** Registers a Solana wallet through the HTTP flow: ed25519 over the message's UTF-8 bytes, in base58, as `signMessage` gives. */
export async function registerSolana(h: Harness, wallet: KeyPairSigner): Promise<void> {
  const agreement = await h.post('/v2/membership/agreement', { address: wallet.address, walletEcosystem: 'solana', url: 'https://app.example.com/earn' }, { key: h.org.publishableKey })
  expect(agreement.status).toBe(200)
  const signature = getBase58Decoder().decode(new Uint8Array(await signBytes(wallet.keyPair.privateKey, new TextEncoder().encode(agreement.body.message))))
  const created = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'solana', signature, nonce: agreement.body.nonce, distributorId: h.distributorId })
  expect(created.body).toEqual({ isMember: true, error: '' })
}

/** Registers a contract wallet (ERC-1271) through the HTTP flow: its owner signs the agreement for it. */
export async function registerContractWallet(h: Harness, wallet: Address, owner: PrivateKeyAccount, chainId: string): Promise<void> {
  const agreement = await h.post('/v2/membership/agreement', { address: wallet, walletEcosystem: 'evm', url: 'https://wallet.example.com', chainId })
  expect(agreement.status).toBe(200)
  const signature = await owner.signMessage({ message: agreement.body.message })
  const created = await h.post('/v2/membership/', { address: wallet, walletEcosystem: 'evm', signature, nonce: agreement.body.nonce })
  expect(created.body).toEqual({ isMember: true, error: '' })
}

/** A new member wallet with gas money and `tusd` smallest units of tUSD. */
export async function fundedMember(h: Harness, chain: LocalChain, tusd = 0n): Promise<PrivateKeyAccount> {
  const wallet = privateKeyToAccount(generatePrivateKey())
  await register(h, wallet)
  await setNativeBalance(chain.anvil, wallet.address, 10n ** 18n)
  if (tusd > 0n) await mintToken(chain.anvil, chain.token, wallet.address, tusd)
  return wallet
}
