/** Liveness and readiness; no key needed. */
import { type ChainHealth, storeUnavailable, withinRunningTime } from '@earn/core'
import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps.ts'
import { loggableError } from '../../logger.ts'
import { ErrorEnvelopeSchema } from '../../http/envelope.ts'

const Check = t.Object({
  status: t.Union([t.Literal('ok'), t.Literal('degraded'), t.Literal('unavailable')], {
    description: 'degraded: answering, but metering per process because the shared meter (Redis) is unreachable (METER_REDIS_OUTAGE=open; closed, the default, is unavailable then)',
  }),
  checks: t.Record(t.String(), t.String()),
})

/** A probe answers within this, whatever its dependency does: a readiness check that waits is no check. */
const PROBE_LIMIT_MS = 2_000

/** In this process's running time: a pause of its own is not the store's silence (runningTimeout in core). */
const within = <T>(work: Promise<T>): Promise<T> => withinRunningTime(work, PROBE_LIMIT_MS, () => new ProbeTimeout(`no answer within ${PROBE_LIMIT_MS} ms`))

class ProbeTimeout extends Error {}

const firstLine = (e: unknown) => (e instanceof Error ? e.message.split('\n')[0]!.slice(0, 120) : 'error')

/**
 * A chain's answer is shared for this long: `/readyz` needs no key, and each probe asked every configured chain
 * (an audit: 400 anonymous probes were 400 calls to the operator's paid RPC), so probes within it share one ask.
 */
const CHAIN_PROBE_SHARED_MS = 1_000

/** How often readiness logs why the store failed its probe, where it fails in a state the answer names. */
const LOG_EVERY_MS = 10_000

export const healthRoutes = (deps: Deps) => {
  let lastStoreLog = -Infinity
  const probes = new Map<string, { at: number; answer: Promise<ChainHealth[]> }>()
  const chainHealth = (id: string, plugin: { health(client: unknown): Promise<ChainHealth[]> }, client: unknown) => {
    const now = performance.now()
    const last = probes.get(id)
    if (last && now - last.at < CHAIN_PROBE_SHARED_MS) return last.answer
    const answer = within(plugin.health(client))
    probes.set(id, { at: now, answer })
    return answer
  }
  return new Elysia()
    .get('/healthz', () => ({ status: 'ok' as const, checks: {} }), { response: { 200: Check, 400: ErrorEnvelopeSchema }, detail: { tags: ['Health'], summary: 'Liveness' } })
    .get(
      '/readyz',
      async ({ set }) => {
        const checks: Record<string, string> = {}
        // A stop has begun: out of rotation at once, asking nothing of the store or the chains (a slow chain held this
        // answer up to the probes' 2 s, and kept the stop waiting on it meanwhile).
        if (deps.lifecycle?.draining) {
          set.status = 503
          return { status: 'unavailable' as const, checks: { server: 'unavailable: shutting down' } }
        }
        if (deps.lifecycle?.respelling) checks.server = 'unavailable: rewriting stored chain ids to one spelling'
        let degraded = false
        const probe = async (name: string, f: () => Promise<string>) => {
          try {
            checks[name] = await f()
          } catch (e) {
            checks[name] = `unavailable: ${firstLine(e)}`
          }
        }
        await Promise.all([
          // The store's state in a word, as the API's 503s say it: a driver's text names the database's host (an audit),
          // and this answer needs no key.
          probe('store', () =>
            within(deps.store.ping().then(() => deps.store.checkWritable())).then(
              () => 'ok',
              (e: unknown) => {
                if (e instanceof ProbeTimeout) throw e
                const state = storeUnavailable(e)
                // The detail in the log, a known state's too (a server out of rotation gets only probes, so nothing else
                // says why: an audit), at most every LOG_EVERY_MS: probes come every few seconds from each balancer.
                if (!state || performance.now() - lastStoreLog >= LOG_EVERY_MS) {
                  lastStoreLog = performance.now()
                  deps.logger.error({ msg: 'readiness: the store failed its probe', ...(state ? { state } : {}), ...loggableError(e) })
                }
                throw new Error(state ?? 'failed (the server log says why)')
              },
            ),
          ),
          probe('meter', async () => {
            const s = await deps.meter.ping()
            if (s.state === 'ok') return 'ok'
            degraded = true
            return `degraded: ${s.reason}`
          }),
          probe('ecosystems', async () => {
            // Plugins load in the background after start (or on first use); not ready until they are in.
            const loading = deps.ecosystems.ids.filter((id) => !deps.ecosystems.loaded().includes(id))
            if (loading.length) throw new Error(`loading ${loading.join(', ')}`)
            return 'ok'
          }),
          // Every configured chain must answer; chains of plugins still loading are asked once they are in.
          // Bounded and caught here too: the built-in plugins bound their own probes, a fourth one may not (a health that
          // hung held this answer for good, one that threw was a 500).
          // (Loading errors are not caught: a configuration error's text may hold an RPC URL's key; see errors.ts.)
          ...deps.ecosystems.loaded().map(async (id) => {
            const { plugin, client } = await deps.ecosystems.get(id)
            try {
              for (const chain of await chainHealth(id, plugin, client))
                checks[`chain:${id}:${chain.chain}`] = chain.ok ? 'ok' : `unavailable: ${chain.detail ?? 'no answer'}`
            } catch (e) {
              // Its text is the plugin's (it may name an RPC URL and its key): logged redacted, not shown to anyone asking.
              if (!(e instanceof ProbeTimeout)) deps.logger.error({ msg: 'health check failed', ecosystem: id, ...loggableError(e) })
              checks[`chain:${id}`] = `unavailable: ${e instanceof ProbeTimeout ? e.message : 'its health check failed (see the server log)'}`
            }
          }),
        ])
        // A degraded meter (METER_REDIS_OUTAGE=open) still answers every request, so the process stays ready; closed, the
        // meter's ping fails and so does readiness (see the README's outage policy).
        const ok = Object.values(checks).every((c) => c === 'ok' || c.startsWith('degraded'))
        if (!ok) set.status = 503
        return { status: !ok ? ('unavailable' as const) : degraded ? ('degraded' as const) : ('ok' as const), checks }
      },
      // 400: a request without a Host header, refused on every path.
      { response: { 200: Check, 400: ErrorEnvelopeSchema, 503: Check }, detail: { tags: ['Health'], summary: 'Readiness: store, meter and chains reachable' } },
    )
}
