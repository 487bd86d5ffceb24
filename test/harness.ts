/**
 * The test harness: an app over an isolated store with a seeded organization, called through
 * `app.handle` (no port). Tests get typed helpers and the keys they need.
 */
import { expect } from 'bun:test'
import {
  attributionSecretSource,
  createMemberCache,
  type Clock,
  createKeyVerifier,
  createOrganization,
  createDistributor,
  createStore,
  type EcosystemId,
  parseConfig,
  type Store,
  systemClock,
} from '@earn/core'
import type { Meter } from '@earn/core/metering/meter'
import { createMemoryMeter } from '@earn/core/metering/memory'
import { createApp } from '@earn/server/app'
import type { Deps } from '@earn/server/deps'
import { loadEcosystems } from '@earn/server/ecosystems'
import { silentLogger, type Logger } from '@earn/server/logger'

export interface HarnessOptions {
  store?: Store
  meter?: Meter
  clock?: Clock
  logger?: Logger
  env?: Record<string, string>
  /** Ecosystem clients bound to local chains, overriding what the environment would connect to. */
  clients?: Partial<Record<EcosystemId, unknown>>
  org?: { tier?: 'standard' | 'premium'; hourlyBudget?: number; monthlyBudget?: number | null }
}

export type Json = Record<string, any>

export async function createHarness(options: HarnessOptions = {}) {
  const clock = options.clock ?? systemClock
  const store = options.store ?? createStore({ engine: 'sqlite', path: ':memory:' })
  await store.migrate(clock.now())
  const config = parseConfig({ LOG_REQUESTS: '0', ...options.env })
  const deps: Deps = {
    config,
    store,
    clock,
    meter: options.meter ?? createMemoryMeter(),
    keys: createKeyVerifier({ store, clock, cacheMs: config.keyCacheSeconds * 1000 }),
    members: createMemberCache({ store, clock, negativeTtlMs: config.membershipMissCacheMs }),
    ecosystems: loadEcosystems(config, options.clients),
    logger: options.logger ?? silentLogger,
    attributionSecret: attributionSecretSource(store, config.attributionSecret),
  }
  await deps.ecosystems.warm()
  const app = createApp(deps)
  const org = await createOrganization({ store, clock }, { name: 'Test org', ...options.org })
  const { distributorId } = await createDistributor({ store, clock }, { orgId: org.orgId, name: 'Test distributor' })

  async function request(method: string, path: string, init: { key?: string | null; body?: unknown; rawBody?: string | Uint8Array<ArrayBuffer>; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { ...init.headers }
    const key = init.key === undefined ? org.secretKey : init.key
    if (key) headers['x-api-key'] = key
    let body: string | Uint8Array<ArrayBuffer> | undefined = init.rawBody
    if (init.body !== undefined) body = JSON.stringify(init.body)
    if (body !== undefined) headers['content-type'] ??= 'application/json'
    const response = await app.handle(new Request(`http://localhost${path}`, { method, headers, body }))
    const text = await response.text()
    let json: Json = {}
    try {
      json = text ? JSON.parse(text) : {}
    } catch {
      json = { text }
    }
    return { status: response.status, headers: response.headers, body: json, text }
  }

  return {
    app,
    deps,
    store,
    org,
    distributorId,
    get: (path: string, init?: Parameters<typeof request>[2]) => request('GET', path, init),
    post: (path: string, body?: unknown, init?: Parameters<typeof request>[2]) => request('POST', path, { ...init, body }),
    request,
    async close() {
      await store.close()
    },
  }
}

export type Harness = Awaited<ReturnType<typeof createHarness>>

/**
 * Asserts the envelope every error must have. (Not an asymmetric-matcher object: bun's
 * toMatchObject writes the matchers back into the received object.)
 */
export function expectEnvelope(body: Json, code: number, status: string) {
  expect(Object.keys(body).sort()).toEqual(['code', 'context', 'error', 'status'])
  expect(body.code).toBe(code)
  expect(body.status).toBe(status)
  expect(typeof body.error).toBe('string')
  expect(body.error.length).toBeGreaterThan(0)
  expect(typeof body.context).toBe('object')
}
