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

/** `evm (reason), solana (reason), ...` for the ecosystems given. */
export const addressProblems = (loaded: readonly WithAddress[], input: string): string =>
  loaded.map((e) => `${e.plugin.id} (${addressProblem(e.plugin, input)})`).join(', ')
