/**
 * The ecosystems this deployment loaded, each with its client. Core asks the registry; beyond the ids in
 * `ECOSYSTEM_IDS`, it never names an ecosystem itself. Plugins load lazily (their chain libraries are most of the
 * start-up cost), so `get` is async; `warm` loads them all ahead of traffic.
 */
import { type Ecosystem, type EcosystemId, ECOSYSTEM_IDS } from './ecosystem.ts'
import { UnsupportedEcosystemError } from './errors.ts'
import { UnsupportedChainError } from './actions/errors.ts'

export interface LoadedEcosystem {
  plugin: Ecosystem<EcosystemId, any>
  client: unknown
}

export type EcosystemLoader = () => Promise<LoadedEcosystem>

export interface EcosystemRegistry {
  ids: readonly EcosystemId[]
  /** The loaded ecosystem; 400 for an unknown one and for a known one this deployment did not load. */
  get(id: string): Promise<LoadedEcosystem>
  all(): Promise<LoadedEcosystem[]>
  /** Starts loading every ecosystem; resolves when all are ready. */
  warm(): Promise<void>
  /** Which ecosystems have finished loading (for readiness). */
  loaded(): EcosystemId[]
}

export function createRegistry(loaders: Partial<Record<EcosystemId, EcosystemLoader>>): EcosystemRegistry {
  const ids = ECOSYSTEM_IDS.filter((id) => loaders[id])
  const pending = new Map<EcosystemId, Promise<LoadedEcosystem>>()
  const ready = new Set<EcosystemId>()
  const load = (id: EcosystemId) => {
    let p = pending.get(id)
    if (!p) {
      p = loaders[id]!().then((l) => {
        ready.add(id)
        return l
      })
      // A failed load is retried on the next request rather than cached.
      p.catch(() => pending.delete(id))
      pending.set(id, p)
    }
    return p
  }
  return {
    ids,
    get(id) {
      if (!(ids as readonly string[]).includes(id)) return Promise.reject(new UnsupportedEcosystemError(id, ids))
      return load(id as EcosystemId)
    },
    all: () => Promise.all(ids.map(load)),
    async warm() {
      await Promise.all(ids.map(load))
    },
    loaded: () => ids.filter((id) => ready.has(id)),
  }
}

/** The chain id in the spelling its ecosystem stores and compares (see `Ecosystem.canonicalChainId`). */
export const canonicalChainId = (plugin: Ecosystem<EcosystemId, any>, chainId: string): string => plugin.canonicalChainId?.(chainId) ?? chainId

/** The loaded ecosystem that owns a chain id a client named, with the id in its stored spelling; 400 when none does. */
export async function chainOf(ecosystems: EcosystemRegistry, chainId: string): Promise<{ ecosystem: LoadedEcosystem; chainId: string }> {
  const ecosystem = (await ecosystems.all()).find((e) => e.plugin.ownsChain(chainId))
  if (!ecosystem) throw new UnsupportedChainError(chainId, ecosystems.ids)
  return { ecosystem, chainId: canonicalChainId(ecosystem.plugin, chainId) }
}
