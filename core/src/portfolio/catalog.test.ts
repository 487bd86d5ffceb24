/** Which catalog entry stands for a position (core/src/portfolio/catalog.ts), over the rows a store answers in id order. */
import { expect, test } from 'bun:test'
import type { Store } from '../store/store.ts'
import { servedOpportunities } from './catalog.ts'

const row = (id: string, p: { vault: string; receipt: string; createdAt: number; delisted?: boolean }) => ({
  id,
  ecosystem: 'solana',
  chainId: 'localnet',
  vaultAddress: p.vault,
  tvl: 0,
  refreshedAt: 1,
  refreshError: null,
  delistedAt: p.delisted ? 5 : null,
  createdAt: p.createdAt,
  listing: JSON.stringify({ id, chainId: 'localnet', name: id, vaultAddress: p.vault, baseToken: { symbol: 'B' }, receiptToken: { symbol: 'R' }, depositTokens: [] }),
  chainFacts: JSON.stringify({ baseToken: 'b', receiptToken: p.receipt, decimals: 6, totalAssets: '0' }),
})
const served = async (rows: ReturnType<typeof row>[]) =>
  servedOpportunities({ allOpportunities: async () => rows } as unknown as Store, 'solana')

test('of two listed ids at one position, the one imported first stands for it, whatever their ids; a listed one over a delisted one', async () => {
  // In id order, as the store answers: 'aa' was imported after 'zz'.
  const both = await served([row('aa', { vault: 'V', receipt: 'R', createdAt: 2 }), row('zz', { vault: 'V', receipt: 'R', createdAt: 1 })])
  expect(both.opportunities.map((o) => o.listing.id)).toEqual(['zz'])
  expect(both.standsFor({ opportunityId: 'aa', chainId: 'localnet', vault: 'V' })).toBe('zz')
  const relisted = await served([row('aa', { vault: 'V', receipt: 'R', createdAt: 2 }), row('zz', { vault: 'V', receipt: 'R', createdAt: 1, delisted: true })])
  expect(relisted.opportunities.map((o) => o.listing.id)).toEqual(['aa'])
})

test('two products at one vault wallet are two positions; an action stands for its own', async () => {
  const { opportunities, standsFor } = await served([row('p1', { vault: 'V', receipt: 'R1', createdAt: 1 }), row('p2', { vault: 'V', receipt: 'R2', createdAt: 2 })])
  expect(opportunities.map((o) => o.listing.id)).toEqual(['p1', 'p2'])
  expect([standsFor({ opportunityId: 'p1', chainId: 'localnet', vault: 'V' }), standsFor({ opportunityId: 'p2', chainId: 'localnet', vault: 'V' })]).toEqual(['p1', 'p2'])
})
