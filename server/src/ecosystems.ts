/**
 * The registry of ecosystem plugins: the one place that names them all. An id without a plugin
 * fails to compile.
 */
import { type Config, createRegistry, type Ecosystem, type EcosystemId, type LoadedEcosystem } from '@earn/core'
import { evm } from '@earn/plugin-evm'
import { solana } from '@earn/plugin-solana'
import { ton } from '@earn/plugin-ton'

export const PLUGINS = { evm, solana, ton } satisfies { [K in EcosystemId]: Ecosystem<K, any> }

/** Loads the configured ecosystems with clients from the environment; `clients` overrides (tests). */
export function loadEcosystems(config: Pick<Config, 'ecosystems' | 'env'>, clients: Partial<Record<EcosystemId, unknown>> = {}) {
  const loaded: LoadedEcosystem[] = config.ecosystems.map((id) => {
    const plugin = PLUGINS[id] as Ecosystem<EcosystemId, any>
    return { plugin, client: clients[id] ?? plugin.connect(config.env) }
  })
  return createRegistry(loaded)
}
