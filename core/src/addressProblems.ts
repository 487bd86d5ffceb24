/** Why each loaded ecosystem refuses an input as an address, in its own words: a checksum typo is named as one. */
import type { Ecosystem, EcosystemId } from './ecosystem.ts'
import { ApiError } from './errors.ts'

type WithAddress = { plugin: Pick<Ecosystem<EcosystemId, unknown>, 'id' | 'address'> }

function addressProblem(plugin: WithAddress['plugin'], input: string): string {
  try {
    plugin.address.parse(input)
    return 'valid'
  } catch (e) {
    return e instanceof ApiError ? String(Object.values(e.context)[0] ?? e.message) : String(e)
  }
}

/**
 * The canonical form of an address the chain reported, or undefined where the ecosystem takes no such address (a TON
 * masterchain one): read from a transaction, an address is compared, not validated, and one that is not ours is
 * simply not the wallet or the vault.
 */
export function canonicalOrNone(address: Ecosystem<EcosystemId, unknown>['address'], input: string): string | undefined {
  try {
    return address.parse(input)
  } catch (e) {
    if (e instanceof ApiError) return undefined
    throw e
  }
}

/** `evm (reason), solana (reason), ...` for the ecosystems given. */
export const addressProblems = (loaded: readonly WithAddress[], input: string): string =>
  loaded.map((e) => `${e.plugin.id} (${addressProblem(e.plugin, input)})`).join(', ')
