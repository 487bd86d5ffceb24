import { describe, expect, test } from 'bun:test'
import { InvalidAddressError, InvalidArgumentError } from '@earn/core'
import { connect } from './client.ts'
import { newWallet } from './fixtures.ts'
import { readAssets, readFlows } from './portfolio.ts'

// Neither read touches the chain, so a client without an RPC is enough.
const client = connect({})
const vaultAddress = newWallet().address

describe('balance.assets and balance.flows (sample Solana vaults)', () => {
  test('a receipt token is a 1:1 claim on the base token', async () => {
    for (const shares of [0n, 1n, 123_456_789n, 2n ** 64n]) expect(await readAssets(client, { chainId: 'localnet', vaultAddress, shares })).toBe(shares)
  })

  test('flows are not known from the chain: null, not zero', async () => {
    expect(await readFlows(client, { chainId: 'localnet', vaultAddress, owner: newWallet().address })).toBeNull()
  })

  test('a malformed vault or owner, another ecosystem\'s chain, or negative shares are 400s naming the field', async () => {
    await expect(readAssets(client, { chainId: 'localnet', vaultAddress: '0xabc', shares: 1n })).rejects.toBeInstanceOf(InvalidAddressError)
    await expect(readFlows(client, { chainId: 'localnet', vaultAddress, owner: 'nope0' })).rejects.toMatchObject({ context: { owner: expect.any(String) } })
    await expect(readAssets(client, { chainId: '1', vaultAddress, shares: 1n })).rejects.toMatchObject({ status: 400, context: { chainId: expect.any(String) } })
    await expect(readAssets(client, { chainId: 'localnet', vaultAddress, shares: -1n })).rejects.toBeInstanceOf(InvalidArgumentError)
  })
})
