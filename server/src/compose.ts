/**
 * Builds the dependencies from configuration: the store the environment names, the meter, the
 * ecosystems. main.ts and the CLI share it so both act on the same deployment.
 */
import { join } from 'node:path'
import { type Config, createKeyVerifier, createStore, type Store, systemClock } from '@earn/core'
import { createMemoryMeter } from '@earn/core/metering/memory'
import type { Deps } from './deps.ts'
import { loadEcosystems } from './ecosystems.ts'
import { createJsonLogger } from './logger.ts'

export function openStore(config: Config): Store {
  return config.databaseUrl
    ? createStore({ engine: 'postgres', url: config.databaseUrl })
    : createStore({ engine: 'sqlite', path: join(config.dataDir, 'earn.sqlite') })
}

export async function composeDeps(config: Config): Promise<Deps> {
  const clock = systemClock
  const store = openStore(config)
  await store.migrate(clock.now())
  const meter = createMemoryMeter()
  return {
    config,
    store,
    meter,
    clock,
    keys: createKeyVerifier({ store, clock, cacheMs: config.keyCacheSeconds * 1000 }),
    ecosystems: loadEcosystems(config),
    logger: createJsonLogger(),
  }
}
