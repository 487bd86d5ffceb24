/**
 * The ecosystems this deployment loaded, each with its client. Core asks the registry; it never
 * names an ecosystem itself.
 */
import { type Ecosystem, type EcosystemId, ECOSYSTEM_IDS } from './ecosystem.ts'
import { UnsupportedEcosystemError } from './errors.ts'

export interface LoadedEcosystem {
  plugin: Ecosystem<EcosystemId, any>
  client: unknown
}

export interface EcosystemRegistry {
  ids: readonly EcosystemId[]
  /** The loaded ecosystem, or 400 for an unknown one and for a known one this deployment did not load. */
  get(id: string): LoadedEcosystem
  all(): LoadedEcosystem[]
}

export function createRegistry(loaded: LoadedEcosystem[]): EcosystemRegistry {
  const byId = new Map(loaded.map((l) => [l.plugin.id as string, l]))
  const ids = ECOSYSTEM_IDS.filter((id) => byId.has(id))
  return {
    ids,
    get(id) {
      const found = byId.get(id)
      if (!found) throw new UnsupportedEcosystemError(id, ids)
      return found
    },
    all: () => [...byId.values()],
  }
}
