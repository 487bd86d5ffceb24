/**
 * `bun run start`: the server's composition root. With the other entry points (cli.ts, launch.ts) the only module
 * that reads the environment and opens connections; the only one that owns the process's signals.
 */
import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { checkRewardTokens, checkTreasuries, ConfigError, parseConfig, respellStoredChains, startCatalogRefresher, startStreamWatcher } from '@earn/core'
import { createApp } from './app.ts'
import { streamDeps } from './features/streams/routes.ts'
import { loadDocsGenerator } from './http/docs.ts'
import { IDLE_TIMEOUT_SECONDS } from './http/idle.ts'
import { createDemoIfEmpty, demoBanner } from './bootstrap.ts'
import { composeDeps, StartupStepError } from './compose.ts'
import { loggableError, outputReaderGone, outputRefused, writeOutput } from './logger.ts'

const PLUGIN_WARM_DELAY_MS = 1000
/** A second stop signal within this of the first is the same stop, delivered twice (see shutdown). */
const REPEATED_SIGNAL_MS = 1000

/** One line for a start that cannot go on: the cause and its code (ENOTDIR, SQLITE_CANTOPEN, EADDRINUSE), no stack. */
function startupError(step: string, e: unknown): never {
  console.error(startupLine(step, e))
  process.exit(1)
}

function startupLine(step: string, e: unknown): string {
  const code = (e as { code?: unknown } | null)?.code
  const message = e instanceof Error ? e.message.split('\n', 1)[0]! : String(e)
  return `startup error: ${step}: ${message}${typeof code === 'string' && !message.includes(code) ? ` (${code})` : ''}`
}

async function main() {
  let config
  try {
    config = parseConfig(process.env)
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(`configuration error: ${e.message}`)
      process.exit(1)
    }
    throw e
  }
  const deps = await composeDeps(config).catch((e) =>
    e instanceof StartupStepError
      ? startupError(e.step, e.error)
      : startupError(config.databaseUrl ? 'opening the database (DATABASE_URL)' : `opening the embedded store in ${config.dataDir} (DATA_DIR)`, e),
  )
  // Not ready until stored catalog entries are in the one spelling of their chain: the chainIds filter compares it.
  const lifecycle = { draining: false, respelling: true }
  deps.lifecycle = lifecycle
  const app = createApp(deps)
  let server: ReturnType<typeof Bun.serve> | undefined
  let refresher: ReturnType<typeof startCatalogRefresher> | undefined
  let watcher: ReturnType<typeof startStreamWatcher> | undefined

  let stopping = false
  let stoppingSince = 0
  const shutdown = async (signal: string, exitCode = 0) => {
    if (stopping) {
      // The same stop delivered twice: `bun run` passes its signal on, and a signal to the process group (a terminal's
      // Ctrl-C, systemd's control-group kill) reaches the server directly too, a moment apart (an audit: every Ctrl-C
      // stopped at once, losing the usage).
      // (A configuration error meanwhile is no repeat: it stops now, with its code.)
      if (exitCode === 0 && performance.now() - stoppingSince < REPEATED_SIGNAL_MS) return
      // A later one is the operator insisting: stop now, as a kill would (usage since the last write is lost).
      deps.logger.info({ msg: 'stopping now', signal })
      process.exit(exitCode || 1)
    }
    stopping = true
    stoppingSince = performance.now()
    deps.logger.info({ msg: 'shutting down', signal })
    // Serving on, new connections too, while readiness fails, until the balancer has stopped sending (a second
    // signal meanwhile stops at once, as ever).
    // Not for a server stopped by its own configuration (exit code 1): never ready, nothing is sending to it.
    if (server && config.shutdownDelaySeconds > 0 && exitCode === 0) {
      lifecycle.draining = true
      await Bun.sleep(config.shutdownDelaySeconds * 1000)
    }
    // One grace period for everything a stop waits on, so an orchestrator's kill does not skip the usage write.
    let late = false
    const graceEnd = performance.now() + config.shutdownGraceSeconds * 1000
    const deadline = Bun.sleep(config.shutdownGraceSeconds * 1000).then(() => (late = true))
    // A deadline already past gives what is stopping a turn of the event loop to end, so an idle stop (a grace of 0)
    // is not said abandoned (an audit).
    const beforeDeadline = <T>(p: Promise<T>) =>
      Promise.race([p.then(() => true), deadline.then(() => new Promise<void>((resolve) => setImmediate(resolve))).then(() => false)])
    let drained = true
    if (server) {
      // Requests a client sent just before the signal may still sit unread in their sockets, where stop(false) would
      // close their connections unanswered: keep serving (readiness failing) until the server has been quiet a
      // moment, then stop taking connections. (Bun keeps the connection header its own: an answer cannot close one.)
      lifecycle.draining = true
      await untilQuiet(server, () => late)
      // stop(false) refuses new connections and resolves when requests in flight have finished.
      drained = await beforeDeadline(server.stop(false))
      if (!drained) await server.stop(true)
      // The request log's line of each answered request is written after its answer (Elysia's afterResponse, on the
      // next turn): the exit below came first, and the lines of requests answered while stopping were lost (an audit).
      await new Promise<void>((resolve) => setImmediate(resolve))
    }
    // A catalog refresh reading a chain that hangs could hold the stop for minutes (two RPC timeouts per vault).
    // So could the watch on stream fundings, reading a chain that hangs.
    const [refreshEnded, watchEnded] = await Promise.all([refresher ? beforeDeadline(refresher.stop()) : true, watcher ? beforeDeadline(watcher.stop()) : true])
    // In order: the meter's last usage write goes to the store. It is always tried, with what is left of the grace
    // period but at least CLOSE_MS (a grace of 0, or one the requests used up, must not drop the usage unwritten),
    // and a store or Redis that stopped answering is abandoned after that.
    const closing = deps.meter.close().then(() => deps.store.close())
    const closed = await Promise.race([closing.then(() => true), Bun.sleep(Math.max(graceEnd - performance.now(), CLOSE_MS)).then(() => false)])
    // The store refused the last usage write all along (a full disk): said, with how much, and the exit is a failure.
    const lost = closed ? undefined : deps.meter.usageNotStored?.()
    if (lost && lost.units > 0) deps.logger.error({ msg: 'meter: usage the store did not take is lost', keys: lost.keys, units: lost.units })
    deps.logger.info({ msg: 'stopped', drained, ...(refreshEnded ? {} : { refresh: 'abandoned' }), ...(watchEnded ? {} : { watch: 'abandoned' }), ...(closed ? {} : { close: 'abandoned' }), ...(lost?.units ? { usage: 'lost' } : {}) })
    process.exit(lost?.units ? exitCode || 1 : exitCode)
  }
  // A write error the stream reports later rather than throws (its reader gone) is the same lost output, not a crash.
  process.stdout.on('error', outputRefused)
  // Before the server listens: a signal from then on stops it gracefully, never by Bun's default.
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))

  // Bun's own limit would answer an empty 413 before the app sees the request. The app reads at most
  // MAX_BODY_BYTES of any body (http/parse.ts) and answers the rest with its envelope, so Bun's limit only has to
  // stay out of its way. development off whatever NODE_ENV says: an error that escaped the app must never get
  // Bun's page of source lines. reusePort off (Elysia turns it on): a second server started on the same port would
  // otherwise listen beside the first, each taking part of the other's requests with its own store. A connection
  // that sends nothing for 10 s (idle between requests, or a body stalled; not one waiting for its answer, see
  // http/idle.ts) is closed: Elysia's 30 s let a client hold the process's file descriptors three times as cheaply.
  try {
    app.listen({ port: config.port, hostname: config.host, maxRequestBodySize: Number.MAX_SAFE_INTEGER, development: false, reusePort: false, idleTimeout: IDLE_TIMEOUT_SECONDS })
  } catch (e) {
    // Bun says a host name that resolves to nothing in several ways (ENOENT, EINVAL, EADDRINUSE, by resolver): asked.
    const unresolved = isIP(config.host) === 0 && (await lookup(config.host).then(() => false, () => true))
    startupError(`listening on ${config.host}:${config.port} (HOST, PORT)`, unresolved ? new Error(`the host name ${config.host} resolves to no address here; give one of this machine's names or an IP address`) : e)
  }
  server = app.server!
  const baseUrl = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${server.port}`
  deps.logger.info({ msg: 'listening', url: baseUrl, store: deps.store.engine, meter: deps.meter.kind, ecosystems: deps.ecosystems.ids })
  // The first start's demo, made once the server listens (a start that cannot listen leaves no demo whose keys were
  // never shown) and the chain plugins have taken their variables: a start stopped by a bad one had shown keys that
  // the fixed start, finding the demo made, never showed again.
  const showDemo = async () => {
    if (stopping) return
    let demo
    try {
      demo = await createDemoIfEmpty(deps)
    } catch (e) {
      // A stop signalled meanwhile closes the store under it: the stop then ends the process, not this error.
      if (stopping) return
      console.error(startupLine('creating the demo organization', e))
      return void shutdown('startup error', 1)
    }
    // Shown even while stopping: made, its keys are shown now or never.
    // On standard error where standard output is gone (a closed pipe): shown nowhere, the keys were lost (a re-audit).
    if (demo && (outputReaderGone() || !writeOutput(demoBanner(demo, baseUrl) + '\n'))) console.error(demoBanner(demo, baseUrl))
  }
  // Entries an earlier release stored in another spelling of their chain (see core's spelling.ts), until it succeeds.
  const respell = async () => {
    while (!stopping) {
      try {
        const respelled = await respellStoredChains(deps)
        if (respelled) deps.logger.info({ msg: 'catalog entries stored in an earlier spelling of their chain id rewritten', respelled })
        lifecycle.respelling = false
        return
      } catch (e) {
        deps.logger.error({ msg: 'rewriting stored chain ids failed; trying again in 5 s', ...loggableError(e) })
        await Bun.sleep(5000)
      }
    }
  }
  // Load the chain plugins shortly after start, off the path of the first requests (loading blocks the
  // event loop for a while); a request that needs one sooner loads it itself. /readyz waits for them.
  // A plugin's variables are read when it loads: one it refuses stops the server as a bad variable stops the start.
  setTimeout(() => {
    // The document generator too, so the first /openapi.json does not pay for loading it (docs.ts).
    void loadDocsGenerator().catch((e: unknown) => deps.logger.error({ msg: 'the API document generator failed to load', error: String(e) }))
    deps.ecosystems
      .warm()
      .then(async () => {
        const loaded = await deps.ecosystems.all()
        checkTreasuries(loaded, config.streamTreasuries)
        checkRewardTokens(loaded, config.streamRewardTokens)
      })
      .then(
        () => {
          deps.logger.info({ msg: 'ecosystems loaded', ecosystems: deps.ecosystems.ids })
          return showDemo()
        },
        (e) => {
          if (!(e instanceof ConfigError)) {
            deps.logger.error({ msg: 'an ecosystem failed to load', error: String(e) })
            return showDemo()
          }
          console.error(`configuration error: ${e.message}`)
          void shutdown('configuration error', 1)
        },
      )
    void respell()
  }, PLUGIN_WARM_DELAY_MS)
  // The catalog's chain facts (total assets, TVL) are read on a schedule, never on a request.
  if (!stopping) refresher = startCatalogRefresher(deps, config.catalogRefreshSeconds * 1000)
  // Pending token streams' fundings are looked for on their chains, as a confirm would read them.
  if (!stopping && config.streamWatchSeconds > 0) watcher = startStreamWatcher({ ...streamDeps(deps), logger: deps.logger }, config.streamWatchSeconds * 1000)
}

/** The least time a stop gives the meter's last usage write and the store's close. */
const CLOSE_MS = 2000
/** How long the server must have had no request in flight before a stop closes its connections. */
const QUIET_MS = 100
/** At most this long: under steady traffic (a balancer still sending) it is never quiet, and stops anyway. */
const MAX_DRAIN_MS = 2000

async function untilQuiet(server: { pendingRequests: number }, late: () => boolean): Promise<void> {
  const start = performance.now()
  let quietSince = start
  while (!late() && performance.now() - start < MAX_DRAIN_MS) {
    if (server.pendingRequests > 0) quietSince = performance.now()
    else if (performance.now() - quietSince >= QUIET_MS) return
    await Bun.sleep(10)
  }
}

await main()
