/**
 * Which chain ids name a Solana cluster. Solana has no numeric chain id, so the catalog writes the
 * cluster names SIWS uses (`mainnet`, `devnet`, `testnet`, `localnet`) or CAIP-2 ids
 * (`solana:` and the first 32 characters of the genesis hash, as CAIP-2 says; a shorter prefix, which earlier
 * releases took and may have stored, is taken too); neither can be mistaken for an EVM decimal id or a TON global id.
 */
const CLUSTERS = new Set(['mainnet', 'devnet', 'testnet', 'localnet'])
const CAIP2 = /^solana:[1-9A-HJ-NP-Za-km-z]{1,32}$/

/** The public clusters' genesis hashes: what a node's `getGenesisHash` answers, and what their CAIP-2 ids quote. */
export const PUBLIC_GENESIS: Readonly<Record<string, string>> = {
  '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d': 'mainnet',
  EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG: 'devnet',
  '4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY': 'testnet',
}

/** wallet-standard's spelling of a cluster (`solana:mainnet`): a name, not the start of a genesis hash. */
const namedCluster = (chainId: string): string | undefined => {
  const name = chainId.startsWith('solana:') ? chainId.slice('solana:'.length) : undefined
  return name !== undefined && CLUSTERS.has(name) ? name : undefined
}

export function ownsSolanaChain(chainId: string): boolean {
  return CLUSTERS.has(chainId) || CAIP2.test(chainId) || namedCluster(chainId) !== undefined
}

/** A public cluster's CAIP-2 id is stored as its name, so `mainnet` and `solana:5eykt…` are one chain everywhere. */
export function canonicalSolanaChain(chainId: string): string {
  const name = namedCluster(chainId)
  if (name !== undefined) return name
  if (!CAIP2.test(chainId)) return chainId
  const reference = chainId.slice('solana:'.length)
  const cluster = Object.entries(PUBLIC_GENESIS).find(([genesis]) => genesis.startsWith(reference))
  return cluster ? cluster[1] : chainId
}
