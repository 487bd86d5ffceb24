/**
 * Which public network the one `TON_API_URL` serves, asked once: the catalog names `-239` (mainnet) or `-3` (testnet)
 * per opportunity, and an endpoint on the other would answer for the wrong accounts. A TON endpoint names no global id,
 * but its masterchain's zero state does (toncenter's `getMasterchainInfo` reports it as `init`).
 */
import { UnavailableError } from '@earn/core'
import { withinBudget } from './budget.ts'
import type { TonChainClient } from './client.ts'

/** The public networks' zero state root hashes, as their global config files give them. */
const ZERO_STATES: Readonly<Record<string, string>> = {
  'F6OpKZKqvqeFp6CQmFomXNMfMj2EnaUSOXN+Mh+wVWk=': '-239',
  'gj+B8wb/AmlPk1z1AhVI484rhrUpgSr2oSFIh56VoSg=': '-3',
}
const NAMES: Readonly<Record<string, string>> = { '-239': 'mainnet', '-3': 'testnet' }

/** The global id of the network with this zero state root hash; undefined for any other (a private network's). */
export const networkOfZeroState = (rootHash: string): string | undefined => ZERO_STATES[rootHash]

/** Throws the 503 for an endpoint known to serve the other public network; one it cannot tell (the sandbox) passes. */
export async function assertServesNetwork(client: TonChainClient, chainId: string): Promise<void> {
  const served = await client.network?.()
  if (served !== undefined && served !== chainId)
    throw new UnavailableError(`the TON_API_URL configured serves TON ${NAMES[served]} (${served}), not ${chainId}`, { chainId })
}

/**
 * A capability that reads `p.chainId`'s network, checked to be the one the endpoint serves before it reads.
 * `refusalsFirst`: the capability's own checks that need no chain, so a client's mistake is a 400 even while the
 * endpoint cannot be asked.
 */
export const onItsNetwork = <P extends { chainId: string }, R>(read: (client: TonChainClient, p: P) => Promise<R>, refusalsFirst?: (client: TonChainClient, p: P) => void) =>
  // One budget for the network check and the reads (budget.ts).
  withinBudget(async (client: TonChainClient, p: P): Promise<R> => {
    refusalsFirst?.(client, p)
    await assertServesNetwork(client, p.chainId)
    return read(client, p)
  })
