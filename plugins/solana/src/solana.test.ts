/**
 * The shared ecosystem conformance kit against the Solana plugin, with its client bound to LiteSVM
 * behind a JSON-RPC endpoint (chain id `localnet`, as the sample catalog names it).
 */
import { afterAll } from 'bun:test'
import { runEcosystemConformance, type ConformanceFixtures } from '@earn/plugin-conformance'
import { getBase58Decoder } from '@solana/kit'
import { startSolana, type SolanaChain } from '../../../test/chains/solana.ts'
import type { SolanaClient } from './client.ts'
import { newWallet } from './fixtures.ts'
import { solana } from './index.ts'

let chain: SolanaChain | undefined
afterAll(() => chain?.stop())

runEcosystemConformance(solana, async (): Promise<ConformanceFixtures<SolanaClient>> => {
  chain = await startSolana()
  const holder = newWallet()
  const mint = await chain.createMint({ decimals: 6 })
  const receiptMint = await chain.createMint({ decimals: 6 })
  await chain.mintTo({ mint, owner: holder.address, amount: 42_000_000n })
  // The fee, and the rent of the vault's token account the deposit creates.
  await chain.airdrop(holder.address, 1_000_000_000n)
  const vault = newWallet().address
  return {
    client: solana.connect({ SOLANA_RPC_URL: chain.url }),
    chainId: 'localnet',
    // Base58 is the only spelling of a Solana address.
    addressForms: [holder.address],
    invalidAddresses: [
      '',
      holder.address.toLowerCase(),
      `${holder.address}1`,
      holder.address.slice(0, -1),
      '0x52908400098527886E0F7030069857D2E4169EE7',
      'EQCD39VS5jcptHL8vMjEXrzGaRcCVYto7HUn4bpAOg8xqB2N',
    ].filter((s) => !isStillValid(s, holder.address)),
    async newSigner() {
      const w = newWallet()
      return { address: w.address, sign: async (message) => w.sign(message) }
    },
    balance: { params: { chainId: 'localnet', owner: holder.address, token: mint }, expected: 42_000_000n },
    build: {
      params: {
        kind: 'deposit',
        chainId: 'localnet',
        owner: holder.address,
        opportunity: { id: 'conformance', chainId: 'localnet', vaultAddress: vault, baseToken: mint, receiptToken: receiptMint },
        tokenIn: mint,
        mode: 'direct',
        amount: 1_000_000n,
        slippageBps: 50,
        tag: 'earn:v1:conformance:build:0000',
      },
      expectedTypes: ['deposit'],
    },
    // The vault's assets are what its deposit authority holds of the base mint (none yet); a wallet is no mint.
    vault: {
      params: { chainId: 'localnet', vaultAddress: vault, baseToken: mint, receiptToken: receiptMint },
      expected: { decimals: 6, totalAssets: 0n },
      wrong: { params: { chainId: 'localnet', vaultAddress: vault, baseToken: holder.address, receiptToken: receiptMint }, field: 'baseToken' },
    },
    // A signature of the right form (64 bytes in base58) that no transaction has.
    unknownTxHash: getBase58Decoder().decode(new Uint8Array(64).fill(7)),
  }
})

/** Mutations of a random address can, rarely, land on another valid 32-byte key. */
function isStillValid(mutation: string, original: string): boolean {
  return mutation !== original && solana.address.isValid(mutation)
}
