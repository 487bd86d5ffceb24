/**
 * Real PostgreSQL and Redis for tests. On a laptop without them a suite is skipped with the reason;
 * with CI=true a missing service fails the run instead.
 */
import postgres from 'postgres'
import { randomBytes } from 'node:crypto'

export const DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
const CI = process.env.CI === 'true'

async function reachable(name: string, probe: () => Promise<unknown>): Promise<boolean> {
  try {
    await probe()
    return true
  } catch (e) {
    const why = `${name} is not reachable: ${e instanceof Error ? e.message : e}`
    if (CI) throw new Error(`${why} (CI=true: a missing service is a failure, not a skip)`)
    console.warn(`skipping ${name} tests: ${why}`)
    return false
  }
}

export const postgresAvailable = () =>
  reachable('PostgreSQL', async () => {
    const sql = postgres(DATABASE_URL, { max: 1, connect_timeout: 3, onnotice: () => {} })
    try {
      await sql`select 1`
    } finally {
      await sql.end()
    }
  })

export const redisAvailable = () =>
  reachable('Redis', async () => {
    const { createClient } = await import('redis')
    const client = createClient({ url: REDIS_URL, socket: { connectTimeout: 3000, reconnectStrategy: false } })
    await client.connect()
    await client.ping()
    await client.quit()
  })

/** A fresh PostgreSQL schema for one test suite; dropped by the returned cleanup. */
export async function freshSchema(): Promise<{ schema: string; drop(): Promise<void> }> {
  const schema = `t_${randomBytes(6).toString('hex')}`
  const sql = postgres(DATABASE_URL, { max: 1, onnotice: () => {} })
  await sql.unsafe(`create schema ${schema}`)
  return {
    schema,
    async drop() {
      await sql.unsafe(`drop schema if exists ${schema} cascade`)
      await sql.end()
    },
  }
}
