import { expect, test } from 'bun:test'
import { canonicalSolanaChain, ownsSolanaChain } from './chain.ts'

test('owns Solana cluster names and CAIP-2 ids, not EVM or TON chain ids', () => {
  for (const id of ['mainnet', 'devnet', 'testnet', 'localnet', 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', `solana:${'1'.repeat(32)}`, 'solana:localnet'])
    expect(ownsSolanaChain(id)).toBe(true)
  for (const id of ['1', '8453', '-239', '-3', '', 'Mainnet', 'mainnet-beta', 'solana:', `solana:${'1'.repeat(33)}`, 'eip155:1'])
    expect(ownsSolanaChain(id)).toBe(false)
})

test("a public cluster's CAIP-2 id is stored as its name; other ids as they are", () => {
  expect(
    ['solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1', 'solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z'].map(canonicalSolanaChain),
  ).toEqual(['mainnet', 'devnet', 'testnet'])
  // A shorter prefix (CAIP-2 says 32 characters; earlier releases took fewer) names the same cluster.
  expect(canonicalSolanaChain('solana:5eykt4')).toBe('mainnet')
  // wallet-standard's chain spellings name the cluster.
  expect(['solana:mainnet', 'solana:devnet', 'solana:testnet', 'solana:localnet'].map(canonicalSolanaChain)).toEqual(['mainnet', 'devnet', 'testnet', 'localnet'])
  for (const id of ['mainnet', 'localnet', `solana:${'1'.repeat(32)}`]) expect(canonicalSolanaChain(id)).toBe(id)
})
