import { describe, expect, test } from 'bun:test'
import { beginCell, Cell } from '@ton/core'
import { keyPairFromSeed } from '@ton/crypto'
import { tonWallet } from '../../../test/chains/ton.ts'
import { publicKeyFromStateInit } from './walletState.ts'

const key = keyPairFromSeed(Buffer.alloc(32, 3)).publicKey

describe('publicKeyFromStateInit', () => {
  for (const version of ['v3r2', 'v4r2', 'v5r1'] as const) {
    test(`reads the key of a ${version} wallet`, () => {
      const { init } = tonWallet(version, key)
      expect(publicKeyFromStateInit(init)).toEqual({ version, publicKey: key })
    })
  }

  test('the known code hashes are the published wallet codes', () => {
    // The standard wallets' well-known code hashes, pinned: if @ton/ton ever bundled other code,
    // wallets in the wild would stop matching, and this should fail first.
    const codes = {
      v3r2: '84dafa449f98a6987789ba232358072bc0f76dc4524002a5d0918b9a75d2d599',
      v4r2: 'feb5ff6820e2ff0d9483e7e0d62c817d846789fb4ae580c878866d959dabd5c0',
      v5r1: '20834b7b72b112147e1b2fb457b84e74d1a30f04f737d4f62a668e9552d2b72f',
    } as const
    for (const [version, hash] of Object.entries(codes)) {
      expect(tonWallet(version as keyof typeof codes, key).init.code.hash().toString('hex')).toBe(hash)
    }
  })

  test('unknown code gives null, so the caller asks the chain', () => {
    const { init } = tonWallet('v4r2', key)
    expect(publicKeyFromStateInit({ code: beginCell().storeUint(1, 8).endCell(), data: init.data })).toBeNull()
    expect(publicKeyFromStateInit({ code: null, data: init.data })).toBeNull()
    expect(publicKeyFromStateInit({ code: init.code, data: null })).toBeNull()
  })

  test('a known code with data too short for a key gives null, not a throw', () => {
    const { init } = tonWallet('v5r1', key)
    expect(publicKeyFromStateInit({ code: init.code, data: beginCell().storeUint(0, 64).endCell() })).toBeNull()
    expect(publicKeyFromStateInit({ code: init.code, data: Cell.EMPTY })).toBeNull()
  })
})
