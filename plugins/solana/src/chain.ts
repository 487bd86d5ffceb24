/**
 * Which chain ids name a Solana cluster. Solana has no numeric chain id, so the catalog writes the
 * cluster names SIWS uses (`mainnet`, `devnet`, `testnet`, `localnet`) or CAIP-2 ids
 * (`solana:<genesis-hash prefix>`); neither can be mistaken for an EVM decimal id or a TON global id.
 */
const CLUSTERS = new Set(['mainnet', 'devnet', 'testnet', 'localnet'])
const CAIP2 = /^solana:[1-9A-HJ-NP-Za-km-z]{1,32}$/

export function ownsSolanaChain(chainId: string): boolean {
  return CLUSTERS.has(chainId) || CAIP2.test(chainId)
}
