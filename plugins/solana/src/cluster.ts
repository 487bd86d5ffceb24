/**
 * Which cluster the one `SOLANA_RPC_URL` serves, asked once: the catalog names a cluster per opportunity
 * (chain.ts), and an RPC on another one would answer for the wrong accounts (a devnet mint read as mainnet's).
 * Solana has no chain id to ask for; a node's genesis hash is what names its cluster (and what CAIP-2 ids quote).
 */
import { UnavailableError } from '@earn/core'
import type { Rpc, SolanaRpcApi } from '@solana/kit'
import { canonicalSolanaChain, PUBLIC_GENESIS } from './chain.ts'
import type { SolanaClient } from './client.ts'
import { deadline, requireRpc, rpcFailure } from './rpc.ts'


/** The cluster name of a genesis hash: one of the public ones, or `localnet` for any other (a test validator's). */
export const clusterOf = (genesisHash: string): string => PUBLIC_GENESIS[genesisHash] ?? 'localnet'

/** Whether a node with this genesis serves the chain id (a cluster name, or `solana:` and a genesis-hash prefix). */
export function servesChain(chainId: string, genesisHash: string): boolean {
  // A public cluster's CAIP-2 id (or a prefix of it) is that cluster, as its name is: no other genesis serves it.
  const named = canonicalSolanaChain(chainId)
  if (named.startsWith('solana:')) return genesisHash.startsWith(named.slice('solana:'.length))
  return clusterOf(genesisHash) === named
}

// Per RPC handle (connect makes one per client): a genesis never changes, so one answer serves the process.
const genesisOf = new WeakMap<object, Promise<string>>()

/** Throws the 503 for an RPC that serves another cluster than `chainId`; the first call per client asks the node. */
async function assertServes(rpc: Rpc<SolanaRpcApi>, chainId: string): Promise<void> {
  let genesis = genesisOf.get(rpc)
  if (!genesis) {
    const asked = rpc.getGenesisHash().send({ abortSignal: deadline() }).then(String)
    genesis = asked
    genesisOf.set(rpc, asked)
    // A failed ask is not remembered: the next request asks again.
    asked.catch(() => genesisOf.get(rpc) === asked && genesisOf.delete(rpc))
  }
  let hash: string
  try {
    hash = await genesis
  } catch (e) {
    throw rpcFailure(e)
  }
  if (!servesChain(chainId, hash))
    throw new UnavailableError(`the SOLANA_RPC_URL configured serves Solana ${clusterOf(hash)} (genesis ${hash}), not ${chainId}`, { chainId })
}

/** The client's RPC (or the 503 naming the setting), checked to serve `chainId`: what every chain read starts with. */
export async function clusterRpc(client: SolanaClient, chainId: string, capability: string): Promise<Rpc<SolanaRpcApi>> {
  const rpc = requireRpc(client, capability)
  await assertServes(rpc, chainId)
  return rpc
}
