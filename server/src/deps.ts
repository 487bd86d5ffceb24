import type { Clock, Config, EcosystemRegistry, KeyVerifier, MemberCache, Store } from '@earn/core'
import type { Meter } from '@earn/core/metering/meter'
import type { Logger } from './logger.ts'

/** Everything a route needs, built once by main.ts (or a test harness) and passed in. */
export interface Deps {
  config: Config
  store: Store
  meter: Meter
  keys: KeyVerifier
  /** Membership answers, shared by the membership check and the action gate. */
  members: MemberCache
  ecosystems: EcosystemRegistry
  clock: Clock
  logger: Logger
  /** The attribution secret (configured, or generated once and kept in the store), shared by every feature that tags. */
  attributionSecret: () => Promise<string>
  /**
   * Set by main.ts. `draining` when a stop begins: readiness fails while the server reads what its clients already
   * sent. `respelling` until stored catalog entries are in the one spelling of their chain.
   */
  lifecycle?: { draining: boolean; respelling?: boolean }
}
