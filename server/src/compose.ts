/**
 * Builds the dependencies from configuration: the store the environment names, the meter, the
 * ecosystems. main.ts and the CLI share it so both act on the same deployment.
 */
import { join } from 'node:path'
import {
  attributionSecretSource,
  type Clock,
  type Config,
  type KeyUsage,
  createKeyVerifier,
  createMemberCache,
  createStore,
  type Store,
  systemClock,
  withinRunningTime,
} from '@earn/core'
import { createMemoryMeter } from '@earn/core/metering/memory'
import { type Meter, windowsAt } from '@earn/core/metering/meter'
import { createPersistentMemoryMeter } from '@earn/core/metering/persistent'
import { createResilientMeter } from '@earn/core/metering/resilient'
import type { Deps } from './deps.ts'
import { loadEcosystems } from './ecosystems.ts'
import { createJsonLogger, type Logger } from './logger.ts'

/** How long a start waits for Redis before serving with per-process metering (it keeps retrying). */
const REDIS_START_WAIT_MS = 3000

export function openStore(config: Config): Store {
  return config.databaseUrl
    ? createStore({ engine: 'postgres', url: config.databaseUrl, statementTimeoutMs: config.databaseStatementTimeoutMs })
    : createStore({ engine: 'sqlite', path: join(config.dataDir, 'earn.sqlite') })
}

const errorText = (e: unknown) => (e instanceof Error ? e.message.split('\n')[0] : String(e))

/**
 * REDIS_URL set: the Redis meter, shared by every process, behind the resilient wrapper (while Redis is unreachable,
 * metered requests refused, or with METER_REDIS_OUTAGE=open metered per process). Unset: the in-process meter, its
 * usage kept in the store.
 */
export async function openMeter(config: Config, deps: { store: Store; clock: Clock; logger: Logger }): Promise<Meter> {
  const { logger } = deps
  if (!config.redisUrl)
    return createPersistentMemoryMeter({
      store: deps.store,
      clock: deps.clock,
      onError: (e) => logger.error({ msg: 'meter: writing usage to the store failed; retrying with the next write', error: errorText(e) }),
    })
  // Loaded only when configured: the embedded default does not pay for the Redis client at start.
  const { createRedisMeter, isRedisRefusal } = await import('@earn/core/metering/redis')
  // The client's own last connection error says why (WRONGPASS, a refused port) where a command only hears "offline";
  // kept, not logged as it comes: a client that cannot connect reports every retry, several a second.
  let connectionError: Error | undefined
  // Redis refusing the connection as it starts (a wrong password or user, a database number it does not have) is the
  // configuration's fault, not an outage: the start stops saying so. Metering alone per process for good had been
  // the answer (readiness "degraded", monthly usage lost with every restart). Later refusals fail open, as outages do.
  let starting = true
  let refusedAtStart: (e: Error) => void = () => {}
  const refusal = new Promise<never>((_, reject) => (refusedAtStart = reject))
  refusal.catch(() => {})
  const redis = createRedisMeter({
    url: config.redisUrl,
    prefix: config.redisKeyPrefix,
    onError: (e) => {
      connectionError = e
      if (starting && refusesSettings(e)) refusedAtStart(e)
    },
  })
  const closed = config.meterRedisOutage === 'closed'
  // The store's usage is carried into Redis once: at start, or when Redis first answers after a start without it (a
  // re-audit: Redis started with the servers, a few seconds behind them, had had none carried).
  let carried: Promise<boolean> | undefined
  const carryOnce = () => {
    carried ??= seedFromStore(redis, deps).then((done) => {
      if (!done) carried = undefined
      return done
    })
    return carried
  }
  const meter = createResilientMeter({
    primary: redis,
    fallback: createMemoryMeter(),
    outage: config.meterRedisOutage,
    refused: isRedisRefusal,
    onRefundLost: (p, cause) =>
      logger.error({ msg: 'meter: a timed-out charge that redis applied late was not confirmed taken back; the key may stay counted for it', keyId: p.keyId, cost: p.cost, error: errorText(cause) }),
    onChange: (state, cause) => {
      if (state === 'primary') {
        logger.info({ msg: 'meter: redis reachable again; shared metering resumed' })
        void carryOnce()
        return
      }
      logger.error({
        msg: closed
          ? 'meter: redis at REDIS_URL unreachable or refusing; metered requests refused (503) until it answers (METER_REDIS_OUTAGE=closed)'
          : 'meter: redis at REDIS_URL unreachable or refusing; metering per process until it answers',
        error: errorText(cause),
        ...(connectionError ? { connection: errorText(connectionError) } : {}),
      })
    },
  })
  let up: boolean
  try {
    up = await Promise.race([redis.connected.then(() => true), refusal, Bun.sleep(REDIS_START_WAIT_MS).then(() => false)])
  } catch (e) {
    await meter.close().catch(() => {})
    throw new Error(`redis refused the connection: ${(e instanceof Error ? e.message : String(e)).replace(/\.$/, '')}; check the user, password and database number in REDIS_URL`)
  } finally {
    starting = false
  }
  // Not up yet: switch to the outage's answers now (and start probing) rather than on the first request. (Closed, the
  // ping says it cannot meter: the start goes on, not ready, until Redis answers.)
  if (!up) await meter.ping().catch(() => undefined)
  else await carryOnce()
  return meter
}

/**
 * This month's usage the embedded meter kept in the store, carried into a Redis that has no count for it: a deployment
 * that set REDIS_URL mid-month (going from one process to several) had given every key its monthly cap and its hour
 * afresh (an audit). Once a process (`carryOnce`); Redis's counts stand where it has them. False where it failed.
 */
async function seedFromStore(redis: { seed(rows: readonly KeyUsage[], now: number): Promise<number> }, deps: { store: Store; clock: Clock; logger: Logger }): Promise<boolean> {
  const now = deps.clock.now()
  try {
    // Bounded as the start's wait for Redis: a Redis that connected and then went silent had held the start for good (a
    // re-audit), where the outage policy is what answers for it.
    const written = await withinRunningTime(
      deps.store.loadKeyUsage(windowsAt(now).monthId).then((rows) => redis.seed(rows, now)),
      REDIS_START_WAIT_MS,
      () => new Error(`redis did not answer within ${REDIS_START_WAIT_MS / 1000} s`),
    )
    if (written) deps.logger.info({ msg: "meter: this month's usage kept in the store carried into redis", counters: written })
    return true
  } catch (e) {
    deps.logger.error({ msg: "meter: carrying this month's usage from the store into redis failed; tried again when redis next comes back", error: errorText(e) })
    return false
  }
}

/**
 * A Redis refusal of the connection's settings (user, password, database number), which no retry mends; not one of
 * load (`ERR max number of clients reached`, a re-audit: new processes had crash-looped through a spike) or state.
 */
function refusesSettings(error: Error): boolean {
  return /^(WRONGPASS|NOAUTH|NOPERM)\b|^ERR (DB index is out of range|invalid DB index|invalid password|AUTH <password> called without any password configured|Client sent AUTH, but no password is set)/.test(error.message)
}

/** How long a start or a CLI command waits for the store's first answer (a PostgreSQL host that drops packets never refuses). */
export const STORE_START_WAIT_MS = 30_000

/** A store of an older schema, which a command other than `store migrate` does not upgrade (cli.ts). */
export class StoreNeedsMigrationError extends Error {
  constructor(readonly version: number, readonly pending: number[]) {
    super(
      `the store's schema is at version ${version} and this release needs ${pending.at(-1)} (migrations ${pending.join(', ')}); an upgrade is one-way ` +
        '(an older release refuses the store after it): back the store up, then run `bun run cli store migrate`, or start this release\'s server, which migrates it',
    )
  }
}

/**
 * Migrates the store once it answers, or fails within `STORE_START_WAIT_MS` saying it did not. Only the first answer
 * is bounded: a migration may build an index over a large table or wait for another process migrating. `upgrade`
 * `refuse`: a new store is made, but one of an older schema is left as it is (StoreNeedsMigrationError). An upgrade is
 * logged, before (nothing listens while it runs: minutes on a large store) and after, with what it applied.
 */
export async function migrateStore(
  store: Store,
  clock: Clock,
  options: { waitMs?: number; logger?: Pick<Logger, 'info'>; upgrade?: 'refuse' } = {},
): Promise<{ from: number | null; applied: number[] }> {
  const waitMs = options.waitMs ?? STORE_START_WAIT_MS
  // In the process's running time: a start slowed by its own work (loading modules on a starved CPU) is not the store's silence.
  await withinRunningTime(store.ping(), waitMs, () => new Error(`the ${store.engine === 'postgres' ? 'database at DATABASE_URL' : 'embedded store'} did not answer within ${waitMs / 1000} s`))
  const { version, pending } = await store.schemaState()
  // An operator's command to look (an audit: `org list` of a new release) had upgraded a store for good, silently.
  if (version !== null && pending.length && options.upgrade === 'refuse') throw new StoreNeedsMigrationError(version, pending)
  const started = performance.now()
  if (version !== null && pending.length) options.logger?.info({ msg: 'store: migrating; the server listens once it is done', from: version, pending })
  const applied = await store.migrate(clock.now())
  if (version !== null && applied.length) options.logger?.info({ msg: 'store: migrated', from: version, applied, ms: Math.round(performance.now() - started) })
  return { from: version, applied }
}

/** A start that failed in a step of its own past opening the store (Redis's): its variable is the one to look at. */
export class StartupStepError extends Error {
  constructor(
    readonly step: string,
    readonly error: unknown,
  ) {
    super(error instanceof Error ? error.message : String(error), { cause: error })
  }
}

export async function composeDeps(config: Config): Promise<Deps> {
  const clock = systemClock
  const logger = createJsonLogger()
  const store = openStore(config)
  await migrateStore(store, clock, { logger })
  // An embedded store on a read-only mount opens, reads and, with nothing to migrate, writes nothing: the start went on,
  // ready, every write failing (an audit). A PostgreSQL standby may yet be promoted: readiness says it, not the start.
  if (store.engine === 'sqlite') await store.checkWritable()
  // Redis's own step: its client's failures ("Invalid pathname") had been told as the store's (an audit). Without it,
  // the meter reads the store's usage: a failure there is the store's.
  const opening = openMeter(config, { store, clock, logger })
  const meter = await (config.redisUrl
    ? opening.catch((e: unknown) => {
        throw new StartupStepError('connecting to Redis (REDIS_URL)', e)
      })
    : opening)
  return {
    config,
    store,
    meter,
    clock,
    keys: createKeyVerifier({ store, clock, cacheMs: config.keyCacheSeconds * 1000 }),
    members: createMemberCache({ store, clock, negativeTtlMs: config.membershipMissCacheMs }),
    ecosystems: loadEcosystems(config),
    logger,
    attributionSecret: attributionSecretSource(store, config.attributionSecret),
  }
}
