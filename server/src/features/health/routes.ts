/** Liveness and readiness; no key needed. */
import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps.ts'

const Check = t.Object({ status: t.Union([t.Literal('ok'), t.Literal('unavailable')]), checks: t.Record(t.String(), t.String()) })

export const healthRoutes = (deps: Deps) =>
  new Elysia()
    .get('/healthz', () => ({ status: 'ok' as const, checks: {} }), { response: Check, detail: { tags: ['Health'], summary: 'Liveness' } })
    .get(
      '/readyz',
      async ({ set }) => {
        const checks: Record<string, string> = {}
        const probe = async (name: string, f: () => Promise<void>) => {
          try {
            await f()
            checks[name] = 'ok'
          } catch (e) {
            checks[name] = `unavailable: ${e instanceof Error ? e.message.split('\n')[0]!.slice(0, 120) : 'error'}`
          }
        }
        await Promise.all([
          probe('store', () => deps.store.ping()),
          probe('meter', () => deps.meter.ping()),
          probe('ecosystems', async () => {
            const missing = deps.ecosystems.ids.filter((id) => !deps.ecosystems.loaded().includes(id))
            if (missing.length) throw new Error(`loading ${missing.join(', ')}`)
          }),
        ])
        const ok = Object.values(checks).every((c) => c === 'ok')
        if (!ok) set.status = 503
        return { status: ok ? ('ok' as const) : ('unavailable' as const), checks }
      },
      { response: { 200: Check, 503: Check }, detail: { tags: ['Health'], summary: 'Readiness: store, meter and chains reachable' } },
    )
