/** 20 concurrent creates with one valid nonce, split over two server processes sharing PostgreSQL. */
import { describe, expect, test } from 'bun:test'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import postgres from 'postgres'
import { runCli, startServer } from '../process.ts'
import { DATABASE_URL, freshSchema, postgresAvailable } from '../services.ts'

describe('membership create race across processes', () => {
  test('exactly one of 20 creates over two processes makes a member', async () => {
    if (!(await postgresAvailable())) return
    const { schema, drop } = await freshSchema()
    const env = { DATABASE_URL: `${DATABASE_URL}?search_path=${schema}`, ECOSYSTEMS: 'evm' }
    const servers = await Promise.all([startServer(env), startServer(env)])
    try {
      const { secretKey } = (await runCli(['org', 'create', '--name', 'Race', '--json'], env)).json()
      const headers = { 'x-api-key': secretKey, 'content-type': 'application/json' }
      const wallet = privateKeyToAccount(generatePrivateKey())
      const agreement = await fetch(`${servers[0]!.url}/v2/membership/agreement`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ address: wallet.address, walletEcosystem: 'evm', url: 'https://app.example.com' }),
      }).then((r) => r.json())
      const body = JSON.stringify({
        address: wallet.address,
        walletEcosystem: 'evm',
        nonce: agreement.nonce,
        signature: await wallet.signMessage({ message: agreement.message }),
      })
      const statuses = await Promise.all(
        Array.from({ length: 20 }, (_, i) => fetch(`${servers[i % 2]!.url}/v2/membership/`, { method: 'POST', headers, body }).then((r) => r.status)),
      )
      expect(statuses.filter((s) => s === 200)).toHaveLength(1)
      expect(statuses.every((s) => s === 200 || s === 409 || s === 400)).toBe(true)
      const sql = postgres(env.DATABASE_URL, { max: 1 })
      const [row] = await sql`select count(*)::int as n from members where address = ${wallet.address.toLowerCase()}`
      await sql.end()
      expect(row!.n).toBe(1)
    } finally {
      await Promise.all(servers.map((s) => s.stop()))
      await drop()
    }
  })
})
