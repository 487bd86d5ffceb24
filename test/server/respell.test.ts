/**
 * A server started on a store an earlier release wrote, with a Solana entry under mainnet's CAIP-2 id: it is not ready
 * until the entry is in the one spelling, and then the entry is, its facts as they were.
 */
import { afterAll, expect, test } from 'bun:test'
import { createStore } from '@earn/core'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { localCatalog } from '../actions/localChain.ts'
import { startServer } from '../process.ts'

const dir = mkdtempSync(join(tmpdir(), 'earn-respell-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('a stored entry under a CAIP-2 id is rewritten to the cluster name before the server says it is ready', async () => {
  const CAIP = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'
  const entry = { ...localCatalog('solana').opportunities[0]!, chainId: CAIP }
  const listing = { ...entry, depositTokens: entry.depositTokens.map((t) => ({ ...t, chainId: CAIP })) }
  const facts = JSON.stringify({ baseToken: entry.baseToken.address, receiptToken: entry.receiptToken.address, decimals: 6, totalAssets: '5' })
  const row = { id: entry.id, ecosystem: 'solana', chainId: CAIP, vaultAddress: entry.vaultAddress, listing: JSON.stringify(listing), chainFacts: facts, tvl: 0, refreshedAt: 1, refreshError: null, delistedAt: null, createdAt: 1, updatedAt: 1 }
  const seed = createStore({ engine: 'sqlite', path: join(dir, 'earn.sqlite') })
  await seed.migrate(Date.now())
  await seed.upsertOpportunity(row, [entry.baseToken.address!])
  await seed.close()

  const server = await startServer({ DATA_DIR: dir, CATALOG_REFRESH_SECONDS: '86400' })
  try {
    let ready: Response
    while ((ready = await fetch(`${server.url}/readyz`)).status !== 200) await Bun.sleep(50)
    const store = createStore({ engine: 'sqlite', path: join(dir, 'earn.sqlite') })
    try {
      const stored = await store.getOpportunity(entry.id)
      expect([stored?.chainId, JSON.parse(stored!.listing).chainId, stored?.chainFacts, stored?.refreshedAt]).toEqual(['mainnet', 'mainnet', facts, 1])
    } finally {
      await store.close()
    }
    expect(server.output()).toContain('"msg":"catalog entries stored in an earlier spelling of their chain id rewritten","respelled":1')
  } finally {
    expect(await server.stop()).toBe(0)
  }
})
