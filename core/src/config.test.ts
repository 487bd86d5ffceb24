import { expect, test } from 'bun:test'
import { ConfigError, parseConfig } from './config.ts'

const refusal = (env: Record<string, string>) => {
  try {
    parseConfig(env)
  } catch (e) {
    if (e instanceof ConfigError) return e.message
    throw e
  }
  return undefined
}

test('HOST takes host names (a container name too) and IP addresses, and refuses what Bun could not listen on', () => {
  for (const host of ['localhost', '0.0.0.0', '127.0.0.1', '::', '::1', 'api', 'earn_api', 'api.internal.example']) expect(parseConfig({ HOST: host }).host).toBe(host)
  expect(parseConfig({}).host).toBe('127.0.0.1')
  for (const host of [' ', 'a b', '256.1.1.1', 'a/b', 'a@b', '-api']) expect(refusal({ HOST: host })).toStartWith('HOST: ')
  expect(refusal({ HOST: '[::1]' })).toBe('HOST: write an IPv6 address without brackets (::1)')
  // What only looks like one: colons that are no IPv6 address, an empty label.
  for (const host of [':::', '1:2:3:4:5:6:7:8:9', 'a..b', '.a']) expect(refusal({ HOST: host }), host).toStartWith('HOST: ')
  expect(parseConfig({ HOST: '2001:db8::1' }).host).toBe('2001:db8::1')
})

test('ECOSYSTEMS must name one; LOG_REQUESTS is a switch', () => {
  expect(refusal({ ECOSYSTEMS: ',' })).toStartWith('ECOSYSTEMS: names no ecosystem')
  expect(parseConfig({ ECOSYSTEMS: 'ton, evm' }).ecosystems).toEqual(['ton', 'evm'])
  const logs = (value: string) => parseConfig({ LOG_REQUESTS: value }).logRequests
  expect([logs('1'), logs('true'), logs('TRUE'), logs(''), logs('0'), logs('false')]).toEqual([true, true, true, true, false, false])
  expect(refusal({ LOG_REQUESTS: 'maybe' })).toBe('LOG_REQUESTS: expected 1 or 0 (true or false), got "maybe"')
})

test('SHUTDOWN_GRACE_SECONDS is a whole number of seconds up to an hour', () => {
  expect(parseConfig({}).shutdownGraceSeconds).toBe(10)
  expect(parseConfig({ SHUTDOWN_GRACE_SECONDS: '0' }).shutdownGraceSeconds).toBe(0)
  expect(refusal({ SHUTDOWN_GRACE_SECONDS: '3601' })).toStartWith('SHUTDOWN_GRACE_SECONDS: must be between 0 and 3600')
  expect([parseConfig({}).shutdownDelaySeconds, parseConfig({ SHUTDOWN_DELAY_SECONDS: '15' }).shutdownDelaySeconds]).toEqual([0, 15])
  expect(refusal({ SHUTDOWN_DELAY_SECONDS: '301' })).toStartWith('SHUTDOWN_DELAY_SECONDS: must be between 0 and 300')
})

test('ATTRIBUTION_SECRET: at least 16 characters, no surrounding whitespace, not only whitespace; empty is unset', () => {
  expect(parseConfig({ ATTRIBUTION_SECRET: 'a-long-enough-secret' }).attributionSecret).toBe('a-long-enough-secret')
  expect(parseConfig({ ATTRIBUTION_SECRET: '' }).attributionSecret).toBeUndefined()
  expect(refusal({ ATTRIBUTION_SECRET: 'short' })).toBe('ATTRIBUTION_SECRET: must be at least 16 characters')
  for (const secret of [' '.repeat(16), '\t'.repeat(16), '0123456789abcdef\n', ' 0123456789abcdef'])
    expect(refusal({ ATTRIBUTION_SECRET: secret })).toBe('ATTRIBUTION_SECRET: must not begin or end with whitespace (a trailing newline, say), nor be only whitespace')
})

test('DATABASE_URL and REDIS_URL must name a host (PostgreSQL: or PGHOST; never ?host=, which postgres.js sends as a setting)', () => {
  for (const env of [{ DATABASE_URL: 'postgres://' }, { DATABASE_URL: 'postgresql:' }, { REDIS_URL: 'redis://' }] as Record<string, string>[]) expect(refusal(env)).toMatch(/^(DATABASE|REDIS)_URL: names no host: write (postgres|redis):\/\/host\[:port\]\/\.\.\.( \(or set PGHOST\))?$/)
  // The host from PGHOST, as postgres.js reads it.
  expect(parseConfig({ DATABASE_URL: 'postgres:///earn', PGHOST: '127.0.0.1' }).databaseUrl).toBe('postgres:///earn')
  expect(refusal({ DATABASE_URL: 'postgres:///earn?host=/var/run/postgresql' })).toStartWith('DATABASE_URL: takes no ?host=')
})

test('DATABASE_URL may list hosts, each with its port (postgres.js fails over between them); each is checked', () => {
  for (const listed of ['postgres://postgres@127.0.0.1:5432,127.0.0.1:5433/test', 'postgres://u:p@db1,db2:5433/earn?sslmode=require', 'postgresql://a.internal:5432,db.internal/x'])
    expect(parseConfig({ DATABASE_URL: listed }).databaseUrl, listed).toBe(listed)
  const notHost = (host: string) => `DATABASE_URL: lists hosts, and "${host}", which is not a host[:port] (a port from 1 to 65535)`
  expect(refusal({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432,bad host:1/test' })).toBe(notHost('bad host:1'))
  expect(refusal({ DATABASE_URL: 'postgres://postgres@a:5432,,b/test' })).toBe(notHost(''))
  expect(refusal({ DATABASE_URL: 'postgres://postgres@,127.0.0.1:5432/test' })).toBe(notHost(''))
  // A failover host's port out of range had passed, and crashed the server when it failed over to it.
  expect(refusal({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432,127.0.0.1:99999/test' })).toBe(notHost('127.0.0.1:99999'))
  expect(refusal({ DATABASE_URL: 'postgres://postgres@127.0.0.1:0,b/test' })).toBe(notHost('127.0.0.1:0'))
  // PGHOST and PGPORT, which postgres.js reads where the URL names no host, the same way.
  const noHost = 'postgres:///test'
  expect(refusal({ DATABASE_URL: noHost, PGHOST: '127.0.0.1:5432,127.0.0.1:99999' })).toBe('PGHOST: lists hosts, and "127.0.0.1:99999", which is not a host[:port] (a port from 1 to 65535)')
  expect(refusal({ DATABASE_URL: noHost, PGHOST: '[::1]' })).toStartWith('PGHOST: names the IPv6 address "[::1]"')
  // PGPORT is one port, wherever the URL's first host names none (postgres.js reads it then).
  for (const [url, pgport] of [[noHost, '70000'], ['postgres://postgres@127.0.0.1/test', '99999'], [noHost, '5432,5433'], ['postgres://postgres@db/test', 'abc']])
    expect(refusal({ DATABASE_URL: url!, PGHOST: 'db', PGPORT: pgport! }), pgport).toBe(`PGPORT: must be one port from 1 to 65535, got "${pgport}"`)
  expect(parseConfig({ DATABASE_URL: 'postgres://postgres@db:5432/test', PGPORT: 'unused' }).databaseUrl).toBe('postgres://postgres@db:5432/test')
  // As postgres.js reads PGHOST: no space trimmed, a socket directory alone.
  for (const pghost of ['127.0.0.1:1, 127.0.0.1:5432', ' 127.0.0.1', '127.0.0.1:1,/var/run/postgresql'])
    expect(refusal({ DATABASE_URL: noHost, PGHOST: pghost }), pghost).toMatch(/^PGHOST: (lists hosts, and|names) ".*", which is not a host\[:port\]/)
  for (const pghost of ['127.0.0.1', 'a:5432,b', '/var/run/postgresql']) expect(parseConfig({ DATABASE_URL: noHost, PGHOST: pghost, PGPORT: '5432' }).databaseUrl, pghost).toBe(noHost)
  // postgres.js splits a host on ':': an IPv6 literal never connects, listed or alone.
  for (const url of ['postgres://postgres@[::1]:5432/test', 'postgresql://a:5432,[::1]:5432/x'])
    expect(refusal({ DATABASE_URL: url }), url).toStartWith('DATABASE_URL: names the IPv6 address "[::1]')
  expect(refusal({ REDIS_URL: 'redis://a:6379,b:6379' })).toBe('REDIS_URL: is not a URL')
})

test('DATABASE_URL and REDIS_URL: a bad percent-encoding, or a Redis path that is no database number, is refused naming the variable', () => {
  expect(refusal({ DATABASE_URL: 'postgres://postgres:%zzpass@127.0.0.1:5432/test' })).toBe(
    'DATABASE_URL: has a bad percent-encoding in its password (a % must be followed by two hex digits: write a literal % as %25)',
  )
  expect(refusal({ REDIS_URL: 'redis://:%zzpass@127.0.0.1:6379' })).toStartWith('REDIS_URL: has a bad percent-encoding in its password')
  for (const path of ['/notanumber', '/1/2']) expect(refusal({ REDIS_URL: `redis://127.0.0.1:6379${path}` })).toBe('REDIS_URL: names a database by its number, if at all: redis://host[:port][/N]')
  for (const ok of ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6379/', 'redis://127.0.0.1:6379/3', 'redis://cache_1:6379']) expect(refusal({ REDIS_URL: ok })).toBeUndefined()
  for (const joined of ['redis://a,b:6379', 'redis://*.example:6379']) expect(refusal({ REDIS_URL: joined })).toBe('REDIS_URL: names no single host: redis://host[:port][/N]')
})

test('a value echoed in a refusal stays on one line, control characters written out, a long one cut', () => {
  expect(refusal({ PORT: '3000\n' })).toBe('PORT: expected a whole number, got "3000\\u000a"')
  expect(refusal({ ECOSYSTEMS: 'x'.repeat(3000) })!.length).toBeLessThan(200)
  expect(refusal({ STREAM_TREASURIES: '1=a,1\nforged=b,1\nforged=c' })).toBe('STREAM_TREASURIES: chain "1\\u000aforged" is named twice')
  expect(refusal({ HOST: '[\u001b[31mred]' })).toBe('HOST: write an IPv6 address without brackets (\\u001b[31mred)')
})

test('CORS_ORIGINS: an origin written otherwise than a browser sends it is refused saying how to write it', () => {
  expect(refusal({ CORS_ORIGINS: 'https://*.example.com' })).toBe('CORS_ORIGINS: "https://*.example.com" is not one origin: no wildcards (list each origin a browser may send, comma-separated)')
  expect(refusal({ CORS_ORIGINS: 'https://a.com:443' })).toBe('CORS_ORIGINS: "https://a.com:443" is not an origin as a browser sends it: write https://a.com (scheme, host and port only, lowercase, no default port)')
  expect(refusal({ CORS_ORIGINS: 'https://App.example' })).toContain('write https://app.example ')
})

test("BUN_CONFIG_MAX_HTTP_REQUESTS (Bun's own, which runs on 256 past a value it cannot take) is held to 1 to 65535; DATA_DIR is not only whitespace", () => {
  for (const value of ['abc', '0', '70000', ' ']) expect(refusal({ BUN_CONFIG_MAX_HTTP_REQUESTS: value }), value).toStartWith('BUN_CONFIG_MAX_HTTP_REQUESTS: ')
  expect(refusal({ BUN_CONFIG_MAX_HTTP_REQUESTS: '2048' })).toBeUndefined()
  expect(refusal({ DATA_DIR: '  ' })).toBe('DATA_DIR: must not be only whitespace')
  expect(parseConfig({ DATA_DIR: 'my data' }).dataDir).toBe('my data')
  expect(parseConfig({ DATA_DIR: '' }).dataDir).toBe('./.data')
})

test('a value of white space only is refused, not taken for unset: a template rendered blank had opened CORS to every origin', () => {
  for (const name of ['CORS_ORIGINS', 'ECOSYSTEMS', 'LOG_REQUESTS', 'STREAM_TREASURIES'])
    for (const value of [' ', '\n', ' \t '])
      expect(refusal({ [name]: value }), `${name}=${JSON.stringify(value)}`).toBe(`${name}: is only white space: unset it (or leave it empty) for the default, or give a value`)
  // The chain plugins' variables as well, though they are read when the plugins load.
  for (const name of ['EVM_RPC_URLS', 'SOLANA_RPC_URL', 'TON_API_URL', 'TON_API_KEY'])
    expect(refusal({ [name]: '  ' }), name).toBe(`${name}: is only white space: unset it (or leave it empty) for the default, or give a value`)
  // Empty is unset, as everywhere.
  const empty = parseConfig({ CORS_ORIGINS: '', ECOSYSTEMS: '', LOG_REQUESTS: '', STREAM_TREASURIES: '' })
  expect([empty.corsOrigins, empty.ecosystems.length, empty.logRequests, Object.keys(empty.streamTreasuries)]).toEqual(['*', 3, true, []])
})

test('STREAM_REWARD_TOKENS: chainId=token entries, a chain named once per token; unset is any token', () => {
  expect(parseConfig({}).streamRewardTokens).toBeNull()
  expect(parseConfig({ STREAM_REWARD_TOKENS: '1=0xA, 1=native,solana=Mint1,' }).streamRewardTokens).toEqual({ '1': ['0xA', 'native'], solana: ['Mint1'] })
  expect(refusal({ STREAM_REWARD_TOKENS: '1=0xA,0xB' })).toBe('STREAM_REWARD_TOKENS: expected chainId=token (or chainId=native), got "0xB"')
  expect(refusal({ STREAM_REWARD_TOKENS: ',' })).toStartWith('STREAM_REWARD_TOKENS: names no token')
  expect(refusal({ STREAM_REWARD_TOKENS: ' ' })).toStartWith('STREAM_REWARD_TOKENS: is only white space')
  // No prototype: a chain id such as `constructor` is a key like any other.
  expect(parseConfig({ STREAM_REWARD_TOKENS: 'constructor=x' }).streamRewardTokens).toEqual({ constructor: ['x'] })
})

test('METER_REDIS_OUTAGE: closed (the default: nothing admitted that Redis cannot count) or open, in any case', () => {
  expect([parseConfig({}).meterRedisOutage, parseConfig({ METER_REDIS_OUTAGE: 'Open' }).meterRedisOutage, parseConfig({ METER_REDIS_OUTAGE: 'closed' }).meterRedisOutage]).toEqual(['closed', 'open', 'closed'])
  for (const bad of ['fail-open', '1', ' '])
    expect(refusal({ METER_REDIS_OUTAGE: bad }), bad).toStartWith('METER_REDIS_OUTAGE: ')
})

test('REDIS_KEY_PREFIX: letters, digits and . _ : -, default earn; a brace would break the hash tag', () => {
  expect([parseConfig({}).redisKeyPrefix, parseConfig({ REDIS_KEY_PREFIX: 'earn-staging:eu.1' }).redisKeyPrefix]).toEqual(['earn', 'earn-staging:eu.1'])
  for (const bad of ['a}b', '{x', 'two words', 'x'.repeat(65)]) expect(refusal({ REDIS_KEY_PREFIX: bad }), bad).toStartWith('REDIS_KEY_PREFIX: ')
})

test("plugins get a frozen copy of the environment: a write in a plugin's connect cannot reach the process's", () => {
  const env: Record<string, string | undefined> = { PORT: '3001', EVM_RPC_URLS: '1=http://127.0.0.1:8545' }
  const config = parseConfig(env)
  expect(config.env).toEqual(env)
  expect(config.env).not.toBe(env)
  expect(Object.isFrozen(config.env)).toBe(true)
  expect(() => {
    ;(config.env as Record<string, string>).ATTRIBUTION_SECRET = 'written by a plugin'
  }).toThrow()
  expect(env.ATTRIBUTION_SECRET).toBeUndefined()
})

test('a number out of range is told as written, not as the double it reads as', () => {
  expect(refusal({ PORT: '99999999999999999999999999' })).toBe('PORT: must be between 0 and 65535, got 99999999999999999999999999')
  expect(refusal({ PORT: '9'.repeat(100) })).toBe(`PORT: must be between 0 and 65535, got ${'9'.repeat(40)}...`)
})
