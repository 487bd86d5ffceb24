/**
 * Finding stream fundings for core's watch on pending streams (core/src/streams/watch.ts): the landed transactions
 * that name the treasury's account for the reward token (its associated token account, which the built funding pays;
 * for SOL, the treasury itself), newer than the cursor (the newest signature of the last look), as the node lists them
 * (`getSignaturesForAddress`, at `COMMITMENT`, as `readTransfers` reads). Without a cursor, the latest page. A failed
 * transaction moved nothing and is left out.
 */
import { NATIVE_TOKEN, type FindFundingsParameters, type FoundFundings } from '@earn/core'
import { address, signature, type Address, type Rpc, type Signature, type SolanaRpcApi } from '@solana/kit'
import type { SolanaClient } from './client.ts'
import { clusterRpc } from './cluster.ts'
import { COMMITMENT, deadline, rpcFailure } from './rpc.ts'
import { readMintWithAccounts } from './token.ts'

/** Signatures a page; a look reads at most `PAGES` pages back to its cursor, the newest first. */
const PAGE = 100
const PAGES = 4

export async function findFundings(client: SolanaClient, p: FindFundingsParameters): Promise<FoundFundings> {
  const rpc = await clusterRpc(client, p.chainId, 'Solana stream fundings')
  const abortSignal = deadline()
  try {
    const treasury = address(p.treasury)
    const watched =
      p.token === NATIVE_TOKEN ? treasury : (await readMintWithAccounts(rpc, { mint: address(p.token), owners: [treasury], field: 'token', abortSignal })).accounts[0]!.address
    const until = p.cursor ? signature(p.cursor) : undefined
    const found = await newestSignatures(rpc, watched, until, abortSignal)
    return { txHashes: found.filter((s) => s.err === null).map((s) => s.signature).reverse(), cursor: found[0]?.signature ?? p.cursor ?? '' }
  } catch (e) {
    throw rpcFailure(e)
  }
}

/**
 * The address's signatures newer than `until`, newest first: page after page down to it, at most `PAGES` (more new
 * ones than that since the last look leaves the oldest to the endpoint's confirm). Without `until`, the latest page.
 */
async function newestSignatures(rpc: Rpc<SolanaRpcApi>, watched: Address, until: Signature | undefined, abortSignal: AbortSignal) {
  const found: { signature: Signature; err: unknown }[] = []
  let before: Signature | undefined
  for (let page = 0; page < (until ? PAGES : 1); page++) {
    const got = await rpc
      .getSignaturesForAddress(watched, { limit: PAGE, commitment: COMMITMENT, ...(until ? { until } : {}), ...(before ? { before } : {}) })
      .send({ abortSignal })
    found.push(...got.map((s) => ({ signature: s.signature, err: s.err })))
    if (got.length < PAGE) break
    before = got[got.length - 1]!.signature
  }
  return found
}
