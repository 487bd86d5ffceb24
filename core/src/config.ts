/**
 * The deployment's configuration, parsed once from an environment-style record. Pure: the
 * composition root hands it `process.env`; nothing else reads the environment.
 */
import { isIP } from 'node:net'
import { ECOSYSTEM_IDS, type EcosystemId, isEcosystemId } from './ecosystem.ts'
import { quoted } from './errors.ts'

export interface Config {
  port: number
  host: string
  dataDir: string
  databaseUrl: string | undefined
  /** PostgreSQL's statement timeout per connection (`DATABASE_STATEMENT_TIMEOUT_MS`, 0: none). */
  databaseStatementTimeoutMs: number
  redisUrl: string | undefined
  /** The meter's Redis keys begin `{<prefix>:` (`REDIS_KEY_PREFIX`, default `earn`): deployments sharing one Redis apart. */
  redisKeyPrefix: string
  /**
   * What a process does while Redis does not answer (`METER_REDIS_OUTAGE`): `closed` (default) refuses metered requests
   * (503) and fails readiness, so no request is admitted past a budget (DECISIONS); `open` meters each process alone.
   */
  meterRedisOutage: 'closed' | 'open'
  nonceTtlSeconds: number
  ecosystems: EcosystemId[]
  attributionSecret: string | undefined
  /** Seconds a verified key stays cached; bounds how late a revocation is seen. */
  keyCacheSeconds: number
  /**
   * Milliseconds a "not a member" answer is remembered; bounds how late a membership check in one
   * process sees a wallet registered through another. 0 asks the store every time.
   */
  membershipMissCacheMs: number
  logRequests: boolean
  /**
   * Which browser origins may call the API (`CORS_ORIGINS`): `*` (the default) any, a list those, `null` none.
   * Keys travel in a header, never in a cookie, so allowing an origin lets a page send only what it could send anyway.
   */
  corsOrigins: '*' | readonly string[] | null
  /** Seconds between catalog refreshes (the chain facts of every opportunity). */
  catalogRefreshSeconds: number
  /** How often pending token streams' treasuries are looked at for their fundings; 0: never (confirm only). */
  streamWatchSeconds: number
  /** Seconds a SIGTERM waits, in all, for requests in flight and a catalog refresh before the store is closed. */
  shutdownGraceSeconds: number
  /**
   * Seconds a SIGTERM keeps serving, new connections too, with readiness failing, before the stop begins: a load
   * balancer or Kubernetes takes a while to stop sending new connections once told (a preStop sleep, built in).
   */
  shutdownDelaySeconds: number
  /**
   * The tokens token streams may reward in, per chain id as the operator wrote it (`STREAM_REWARD_TOKENS`,
   * `chainId=token,...`, a chain named once per token, `native` its coin); null (unset): any token. A token's issuer
   * may freeze, pause or claw back what funded a stream (Token-2022 authorities, a blocklist): an operator answers
   * for the tokens it takes by naming them.
   */
  streamRewardTokens: Readonly<Record<string, readonly string[]>> | null
  /**
   * Where token streams are funded, per chain id (`STREAM_TREASURIES=chainId=address,...`). Addresses as
   * written: the chain's ecosystem checks them when a stream uses them. A chain without one takes no token streams.
   */
  streamTreasuries: Readonly<Record<string, string>>
  /** The environment record itself, for plugins' `connect` (each reads its own variables). */
  env: Readonly<Record<string, string | undefined>>
}

/** A bad value stops the start with one line naming the variable. */
export class ConfigError extends Error {
  constructor(readonly variable: string, reason: string) {
    super(`${variable}: ${reason}`)
    this.name = 'ConfigError'
  }
}

function integer(env: Config['env'], name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `expected a whole number, got "${quoted(raw)}"`)
  const n = Number(raw)
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${raw.length > 40 ? `${raw.slice(0, 40)}...` : raw}`)
  return n
}

/** PostgreSQL hosts as postgres.js reads them (`host[:port]`, several comma-separated): each one checked. */
function checkHosts(name: string, hosts: readonly string[]): void {
  for (const host of hosts) {
    if (host.startsWith('['))
      throw new ConfigError(name, `names the IPv6 address "${quoted(host)}", which the PostgreSQL client (postgres.js) cannot connect to: name the host (a DNS name, localhost) or an IPv4 address`)
    const m = /^[a-z0-9._-]+(?::(\d{1,5}))?$/i.exec(host)
    if (!m || (m[1] !== undefined && !validPort(m[1])))
      throw new ConfigError(name, `${hosts.length > 1 ? 'lists hosts, and' : 'names'} "${quoted(host)}", which is not a host[:port] (a port from 1 to 65535)`)
  }
}

const validPort = (port: string) => /^\d{1,5}$/.test(port) && Number(port) >= 1 && Number(port) <= 65_535

/**
 * PostgreSQL's URL may list hosts, each with its port (`host1:5432,host2:5433`: postgres.js fails over between them),
 * which WHATWG URL cannot parse (an audit: refused as "not a URL"). Each host is checked (a port out of range had
 * passed and crashed the server when it failed over to it, a re-audit), and the rest of the URL is read with the
 * first one alone. postgres.js splits a host on `:`, so an IPv6 literal never connects: refused, saying so.
 */
function parseUrl(name: string, raw: string): URL {
  const authority = name === 'DATABASE_URL' ? /^([a-z][a-z0-9+.-]*:\/\/(?:[^@/?#]*@)?)([^/?#]*)(.*)$/is.exec(raw) : null
  if (authority && (authority[2]!.includes(',') || authority[2]!.includes('['))) {
    const hosts = authority[2]!.split(',')
    checkHosts(name, hosts)
    try {
      return new URL(authority[1]! + hosts[0]! + authority[3]!)
    } catch {}
  }
  try {
    return new URL(raw)
  } catch {
    throw new ConfigError(name, 'is not a URL')
  }
}

function url(env: Config['env'], name: string, protocols: string[]): string | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  const parsed = parseUrl(name, raw)
  if (!protocols.includes(parsed.protocol))
    throw new ConfigError(name, `must start with ${protocols.map((p) => `${p}//`).join(' or ')}`)
  // `postgres://` alone connected as a role named after nothing to a default host. PGHOST names one: postgres.js takes
  // it from there as libpq does (`postgres:///earn`). postgres.js sends `?host=` to the server as a setting, refused.
  if (name === 'DATABASE_URL' && parsed.searchParams.has('host'))
    throw new ConfigError(name, 'takes no ?host= (postgres.js would send it to the server as a setting): write the host in the URL, or set PGHOST')
  if (!parsed.hostname && !(name === 'DATABASE_URL' && env.PGHOST)) throw new ConfigError(name, `names no host: write ${protocols[0]}//host[:port]/...${name === 'DATABASE_URL' ? ' (or set PGHOST)' : ''}`)
  // postgres.js reads PGHOST where the URL names no host, and PGPORT where its first host names no port: checked as
  // it reads them (a re-audit: a port out of range there crashed the server when it failed over to it): a socket
  // directory (`/var/run/postgresql`) only alone, hosts as written (no space trimmed), PGPORT one port.
  if (name === 'DATABASE_URL' && !parsed.hostname && !/^\/[^,]*$/.test(env.PGHOST!)) checkHosts('PGHOST', env.PGHOST!.split(','))
  if (name === 'DATABASE_URL' && parsed.port === '' && env.PGPORT !== undefined && env.PGPORT !== '' && !validPort(env.PGPORT))
    throw new ConfigError('PGPORT', `must be one port from 1 to 65535, got "${quoted(env.PGPORT)}"`)
  // The clients decode these themselves, failing later with words of their own ("URI error", "Invalid pathname") under
  // whatever step was running (an audit: a bad REDIS_URL stopped the start blaming DATA_DIR).
  for (const [part, value] of [['user', parsed.username], ['password', parsed.password], ['path', parsed.pathname]] as const) {
    try {
      decodeURIComponent(value)
    } catch {
      throw new ConfigError(name, `has a bad percent-encoding in its ${part} (a % must be followed by two hex digits: write a literal % as %25)`)
    }
  }
  // One host: a wildcard or two joined with a comma resolved to nothing, and the server metered per process for good.
  // (PostgreSQL's URL may list hosts: postgres.js fails over between them.)
  if (name === 'REDIS_URL' && !namesOneHost(parsed)) throw new ConfigError(name, 'names no single host: redis://host[:port][/N]')
  if (name === 'REDIS_URL' && !/^\/?(\d+)?$/.test(parsed.pathname))
    throw new ConfigError(name, 'names a database by its number, if at all: redis://host[:port][/N]')
  return raw
}

/**
 * The value, or undefined when unset or empty; one of white space only is refused. A template that rendered blank
 * had passed for unset: CORS_ORIGINS opened to every origin, ECOSYSTEMS to all three, without a word (an audit).
 */
function given(env: Config['env'], name: string): string | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  if (raw.trim() === '') throw new ConfigError(name, 'is only white space: unset it (or leave it empty) for the default, or give a value')
  return raw
}

function ecosystems(env: Config['env']): EcosystemId[] {
  const raw = given(env, 'ECOSYSTEMS')
  if (raw === undefined) return [...ECOSYSTEM_IDS]
  const ids = raw.split(',').map((s) => s.trim()).filter(Boolean)
  if (ids.length === 0) throw new ConfigError('ECOSYSTEMS', `names no ecosystem; give some of ${ECOSYSTEM_IDS.join(', ')} (comma-separated), or leave it unset for all`)
  for (const id of ids)
    if (!isEcosystemId(id)) throw new ConfigError('ECOSYSTEMS', `unknown ecosystem "${quoted(id)}"; known: ${ECOSYSTEM_IDS.join(', ')}`)
  return [...new Set(ids)] as EcosystemId[]
}

function streamTreasuries(env: Config['env']): Record<string, string> {
  const raw = given(env, 'STREAM_TREASURIES')
  // No prototype: a key such as `constructor` is a chain id like any other (and no ecosystem's).
  const treasuries: Record<string, string> = Object.create(null)
  if (raw === undefined) return treasuries
  for (const entry of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
    const eq = entry.indexOf('=')
    const chainId = eq < 0 ? '' : entry.slice(0, eq).trim()
    const address = eq < 0 ? '' : entry.slice(eq + 1).trim()
    if (!chainId || !address) throw new ConfigError('STREAM_TREASURIES', `expected chainId=address, got "${quoted(entry)}"`)
    if (Object.hasOwn(treasuries, chainId)) throw new ConfigError('STREAM_TREASURIES', `chain "${quoted(chainId)}" is named twice`)
    treasuries[chainId] = address
  }
  return treasuries
}

function streamRewardTokens(env: Config['env']): Record<string, string[]> | null {
  const raw = given(env, 'STREAM_REWARD_TOKENS')
  if (raw === undefined) return null
  // No prototype, as for the treasuries.
  const tokens: Record<string, string[]> = Object.create(null)
  for (const entry of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
    const eq = entry.indexOf('=')
    const chainId = eq < 0 ? '' : entry.slice(0, eq).trim()
    const token = eq < 0 ? '' : entry.slice(eq + 1).trim()
    if (!chainId || !token) throw new ConfigError('STREAM_REWARD_TOKENS', `expected chainId=token (or chainId=native), got "${quoted(entry)}"`)
    ;(tokens[chainId] ??= []).push(token)
  }
  if (Object.keys(tokens).length === 0) throw new ConfigError('STREAM_REWARD_TOKENS', 'names no token; give chainId=token entries, comma-separated, or leave it unset for any token')
  return tokens
}

/**
 * The meter's key prefix. Inside a Redis Cluster hash tag (`{prefix:keyId}`): a brace would end the tag early (both
 * counters of a key in different slots, its script refused), and white space or a control character has no place in
 * a key read back in `redis-cli`.
 */
function redisKeyPrefix(env: Config['env']): string {
  const raw = given(env, 'REDIS_KEY_PREFIX')
  if (raw === undefined) return 'earn'
  if (!/^[A-Za-z0-9._:-]{1,64}$/.test(raw)) throw new ConfigError('REDIS_KEY_PREFIX', `"${quoted(raw)}" is not a key prefix: 1 to 64 letters, digits and . _ : -`)
  return raw
}

function corsOrigins(env: Config['env']): Config['corsOrigins'] {
  const raw = given(env, 'CORS_ORIGINS')?.trim()
  if (raw === undefined || raw === '*') return '*'
  if (raw === 'none') return null
  return raw.split(',').map((entry) => {
    const origin = entry.trim()
    let parsed: URL | undefined
    try {
      parsed = new URL(origin)
    } catch {}
    // What a browser sends in Origin: scheme, host and port only, no path or trailing slash, lowercase, no default port.
    if (!parsed || !['http:', 'https:'].includes(parsed.protocol))
      throw new ConfigError('CORS_ORIGINS', `"${quoted(origin)}" is not an origin: expected https://host[:port], comma-separated, or * or none`)
    if (!namesOneHost(parsed))
      throw new ConfigError('CORS_ORIGINS', `"${quoted(origin)}" is not one origin: no wildcards (list each origin a browser may send, comma-separated)`)
    if (parsed.origin !== origin)
      throw new ConfigError('CORS_ORIGINS', `"${quoted(origin)}" is not an origin as a browser sends it: write ${parsed.origin} (scheme, host and port only, lowercase, no default port)`)
    return origin
  })
}

/**
 * Whether a parsed URL names one host, a DNS name or an IP address. URLs also take `*`, `,`, `;` or `=` in a host, so a
 * wildcard origin, or two URLs joined with the wrong separator, passed as one odd host (an audit): nothing answered
 * there, and the start said nothing.
 */
export function namesOneHost(url: URL): boolean {
  return /^(\[[0-9a-f:.]+\]|[a-z0-9._-]+)$/i.test(url.hostname)
}

function meterRedisOutage(env: Config['env']): Config['meterRedisOutage'] {
  const raw = given(env, 'METER_REDIS_OUTAGE')?.trim().toLowerCase()
  if (raw === undefined) return 'closed'
  if (raw === 'closed' || raw === 'open') return raw
  throw new ConfigError('METER_REDIS_OUTAGE', `expected closed (refuse metered requests while Redis does not answer) or open (meter each process alone), got "${quoted(env.METER_REDIS_OUTAGE!)}"`)
}

function flag(env: Config['env'], name: string, fallback: boolean): boolean {
  const raw = given(env, name)?.trim().toLowerCase()
  if (raw === undefined) return fallback
  if (raw === '1' || raw === 'true') return true
  if (raw === '0' || raw === 'false') return false
  throw new ConfigError(name, `expected 1 or 0 (true or false), got "${quoted(env[name]!)}"`)
}

/** A host name or an IP address to listen on; Bun's own errors for others name neither the variable nor the fault. */
function host(env: Config['env']): string {
  const raw = env.HOST
  if (raw === undefined || raw === '') return '127.0.0.1'
  const ipv4 = /^\d{1,3}(\.\d{1,3}){3}$/.test(raw)
  const valid = ipv4
    ? raw.split('.').every((octet) => Number(octet) <= 255)
    : raw.split('.').every((label) => /^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?$/.test(label)) || isIP(raw) === 6
  if (!valid && /^\[.*\]$/.test(raw)) throw new ConfigError('HOST', `write an IPv6 address without brackets (${quoted(raw.slice(1, -1))})`)
  if (!valid) throw new ConfigError('HOST', `"${quoted(raw)}" is not a host name or an IP address (e.g. 127.0.0.1, 0.0.0.0, ::)`)
  return raw
}

export function parseConfig(env: Config['env']): Config {
  const secret = env.ATTRIBUTION_SECRET
  if (secret !== undefined && secret !== '' && secret.length < 16)
    throw new ConfigError('ATTRIBUTION_SECRET', 'must be at least 16 characters')
  // A stray newline from a secrets file would give this process other MACs than its peers', and spaces alone are a
  // guessable key: both are refused rather than used.
  if (secret !== undefined && secret !== '' && (secret.trim() !== secret || secret.trim() === ''))
    throw new ConfigError('ATTRIBUTION_SECRET', 'must not begin or end with whitespace (a trailing newline, say), nor be only whitespace')
  // Bun's own, read at start: Bun reports a value it cannot take and runs on its default of 256 (README).
  integer(env, 'BUN_CONFIG_MAX_HTTP_REQUESTS', 0, 1, 65535)
  // Spaces alone would make a directory of that name where the server was started.
  if (env.DATA_DIR !== undefined && env.DATA_DIR !== '' && env.DATA_DIR.trim() === '') throw new ConfigError('DATA_DIR', 'must not be only whitespace')
  // The chain plugins' variables too, read when a plugin loads (each plugin trims its own): white space only is no
  // value there either (a re-audit: EVM_RPC_URLS of a space loaded the plugin with no chain, ready).
  for (const name of Object.keys(env).sort()) if (/^(EVM|SOLANA|TON)_/.test(name)) given(env, name)
  return {
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: host(env),
    dataDir: env.DATA_DIR || './.data',
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    databaseStatementTimeoutMs: integer(env, 'DATABASE_STATEMENT_TIMEOUT_MS', 10_000, 0, 600_000),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    redisKeyPrefix: redisKeyPrefix(env),
    meterRedisOutage: meterRedisOutage(env),
    nonceTtlSeconds: integer(env, 'NONCE_TTL_SECONDS', 300, 10, 86_400),
    ecosystems: ecosystems(env),
    attributionSecret: secret || undefined,
    keyCacheSeconds: integer(env, 'KEY_CACHE_SECONDS', 2, 0, 5),
    membershipMissCacheMs: integer(env, 'MEMBERSHIP_MISS_CACHE_MS', 1000, 0, 5000),
    logRequests: flag(env, 'LOG_REQUESTS', true),
    corsOrigins: corsOrigins(env),
    catalogRefreshSeconds: integer(env, 'CATALOG_REFRESH_SECONDS', 300, 5, 86_400),
    streamWatchSeconds: integer(env, 'STREAM_WATCH_SECONDS', 30, 0, 86_400),
    shutdownGraceSeconds: integer(env, 'SHUTDOWN_GRACE_SECONDS', 10, 0, 3_600),
    shutdownDelaySeconds: integer(env, 'SHUTDOWN_DELAY_SECONDS', 0, 0, 300),
    streamTreasuries: streamTreasuries(env),
    streamRewardTokens: streamRewardTokens(env),
    // A frozen copy: a plugin's `connect` reads it, and a write there must not reach the process's environment.
    env: Object.freeze({ ...env }),
  }
}
