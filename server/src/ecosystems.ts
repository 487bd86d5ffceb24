/**
 * The registry of ecosystem plugins: the one place that names them all. An id without a plugin
 * fails to compile. Plugins are imported on first use (or by `warm()` right after the server
 * listens): their chain libraries would otherwise dominate the cold start.
 */
import { type Config, ConfigError, createRegistry, type Ecosystem, type EcosystemId } from '@earn/core'

export const PLUGINS = {
  evm: () => import('@earn/plugin-evm').then((m) => m.evm),
  solana: () => import('@earn/plugin-solana').then((m) => m.solana),
  ton: () => import('@earn/plugin-ton').then((m) => m.ton),
} satisfies { [K in EcosystemId]: () => Promise<Ecosystem<K, any>> }

/** The configured ecosystems with clients from the environment; `clients` overrides (tests). */
export function loadEcosystems(config: Pick<Config, 'ecosystems' | 'env'>, clients: Partial<Record<EcosystemId, unknown>> = {}) {
  const loaders = Object.fromEntries(
    config.ecosystems.map((id) => [
      id,
      async () => {
        const plugin = (await PLUGINS[id]()) as Ecosystem<EcosystemId, any>
        if (clients[id] !== undefined) return { plugin, client: clients[id] }
        try {
          return { plugin, client: plugin.connect(config.env) }
        } catch (e) {
          // connect only reads the environment, so whatever it refuses is the plugin's configuration.
          throw new ConfigError(`${id} plugin`, e instanceof Error ? e.message : String(e))
        }
      },
    ]),
  )
  return createRegistry(loaders)
}
