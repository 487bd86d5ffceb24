import { expect, test } from 'bun:test'
import { ownsSolanaChain } from './chain.ts'

test('owns Solana cluster names and CAIP-2 ids, not EVM or TON chain ids', () => {
  for (const id of ['mainnet', 'devnet', 'testnet', 'localnet', 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'])
    expect(ownsSolanaChain(id)).toBe(true)
  for (const id of ['1', '8453', '-239', '-3', '', 'Mainnet', 'mainnet-beta', 'solana:', 'eip155:1'])
    expect(ownsSolanaChain(id)).toBe(false)
})
