import { describe, expect, test } from 'bun:test'
import { InvalidAddressError, InvalidArgumentError } from '@earn/core'
import { Address } from '@ton/core'
import { connectTon } from './client.ts'
import { readTonAssets, readTonFlows } from './portfolio.ts'

// Neither read touches the chain, so a client without TON_API_URL is enough.
const client = connectTon({})
const vaultAddress = new Address(0, Buffer.alloc(32, 7)).toString()
const owner = new Address(0, Buffer.alloc(32, 9)).toRawString()

describe('balance.assets and balance.flows (sample TON vaults)', () => {
  test('a receipt jetton is a 1:1 claim on the base token', async () => {
    for (const shares of [0n, 1n, 987_654_321n, 2n ** 120n]) expect(await readTonAssets(client, { chainId: '-239', vaultAddress, shares })).toBe(shares)
  })

  test('flows are not known from the chain: null, not zero', async () => {
    expect(await readTonFlows(client, { chainId: '-239', vaultAddress, owner })).toBeNull()
  })

  test('a malformed vault or owner, or negative shares, are 400s naming the field', async () => {
    await expect(readTonAssets(client, { chainId: '-239', vaultAddress: '0:zz', shares: 1n })).rejects.toBeInstanceOf(InvalidAddressError)
    await expect(readTonFlows(client, { chainId: '-239', vaultAddress, owner: 'EQnope' })).rejects.toMatchObject({ context: { owner: expect.any(String) } })
    await expect(readTonAssets(client, { chainId: '-239', vaultAddress, shares: -1n })).rejects.toBeInstanceOf(InvalidArgumentError)
  })
})
