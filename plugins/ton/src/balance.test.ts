import { beforeAll, describe, expect, test } from 'bun:test'
import { ApiError, InvalidAddressError, InvalidArgumentError, UnavailableError } from '@earn/core'
import { toNano, type Address } from '@ton/core'
import { keyPairFromSeed } from '@ton/crypto'
import { startTon, tonWallet, type TonSandbox, type TonWallet } from '../../../test/chains/ton.ts'
import { createTonClient } from './client.ts'
import { readTonBalance } from './balance.ts'

describe('TON balances on the sandbox', () => {
  let chain: TonSandbox
  let holder: TonWallet
  let stranger: TonWallet
  let master: Address

  beforeAll(async () => {
    chain = await startTon()
    holder = await chain.deployWallet('v5r1', keyPairFromSeed(Buffer.alloc(32, 1)), toNano('3'))
    stranger = await chain.deployWallet('v4r2', keyPairFromSeed(Buffer.alloc(32, 2)), toNano('1'))
    master = await chain.deployJetton()
    await chain.mintJetton(master, holder.address, 1_234_567_890n)
  })

  const read = (owner: string, token: string) => readTonBalance(chain.client, { chainId: '-239', owner, token })

  test('native: the wallet balance in nanotons', async () => {
    const balance = await read(holder.address.toRawString(), 'native')
    expect(typeof balance).toBe('bigint')
    expect(balance).toBe((await chain.blockchain.getContract(holder.address)).balance)
    // 3 TON sent, less the deployment's fees.
    expect(balance).toBeLessThan(toNano('3'))
    expect(balance).toBeGreaterThan(toNano('2.9'))
  })

  test('native: an address that never received anything holds 0', async () => {
    const empty = tonWallet('v5r1', keyPairFromSeed(Buffer.alloc(32, 9)).publicKey)
    expect(await read(empty.address.toString(), 'native')).toBe(0n)
  })

  test('jetton: the minted amount, with the owner and master in any form', async () => {
    expect(await read(holder.address.toRawString(), master.toRawString())).toBe(1_234_567_890n)
    expect(await read(holder.address.toString({ bounceable: false }), master.toString())).toBe(1_234_567_890n)
  })

  test('jetton: a second mint adds up', async () => {
    const other = await chain.deployJetton()
    await chain.mintJetton(other, stranger.address, 5n)
    await chain.mintJetton(other, stranger.address, 7n)
    expect(await read(stranger.address.toRawString(), other.toRawString())).toBe(12n)
  })

  test('jetton: two round trips, the state and the get-method of each contract asked together', async () => {
    // Every call to the sandbox answers 200 ms late, as a remote endpoint would: four calls one after another took 800.
    const DELAY = 200
    const slow = createTonClient((address, init) => {
      const p = chain.blockchain.provider(address, init)
      const late = <A extends unknown[], R>(f: (...a: A) => Promise<R>) => async (...a: A) => (await Bun.sleep(DELAY), f(...a))
      return { ...p, getState: late(p.getState.bind(p)), get: late(p.get.bind(p)) }
    })
    const started = performance.now()
    expect(await readTonBalance(slow, { chainId: '-239', owner: holder.address.toRawString(), token: master.toRawString() })).toBe(1_234_567_890n)
    expect(performance.now() - started).toBeLessThan(3 * DELAY)
    // Where the wallet is not deployed (or the master is none), the state's answer is the verdict, as before.
    expect(await readTonBalance(slow, { chainId: '-239', owner: stranger.address.toRawString(), token: master.toRawString() })).toBe(0n)
    const notMaster = await readTonBalance(slow, { chainId: '-239', owner: holder.address.toRawString(), token: tonWallet('v4r2', Buffer.alloc(32, 6)).address.toRawString() }).catch((e: unknown) => e)
    expect(notMaster).toBeInstanceOf(InvalidArgumentError)
    expect((notMaster as ApiError).message).toContain('no contract is deployed at that address')
  })

  test('jetton: an owner without a jetton wallet holds 0', async () => {
    expect(await read(stranger.address.toRawString(), master.toRawString())).toBe(0n)
  })

  test('a token that is not a jetton master is a 400 naming the token', async () => {
    for (const token of [stranger.address.toRawString(), tonWallet('v4r2', Buffer.alloc(32, 5)).address.toRawString()]) {
      const error = await read(holder.address.toRawString(), token).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(InvalidArgumentError)
      expect((error as ApiError).context).toHaveProperty('token')
    }
  })

  test('bad owner or token addresses are InvalidAddressError for that field', async () => {
    const owner = await read('nope', 'native').catch((e: unknown) => e)
    expect(owner).toBeInstanceOf(InvalidAddressError)
    expect((owner as ApiError).context).toHaveProperty('owner')
    const token = await read(holder.address.toRawString(), '0:xyz').catch((e: unknown) => e)
    expect(token).toBeInstanceOf(InvalidAddressError)
    expect((token as ApiError).context).toHaveProperty('token')
  })

  test('a TON API that cannot be reached is UnavailableError (503)', async () => {
    // Stands in for an unreachable TON API: every call fails as a refused HTTP connection does.
    const down = createTonClient(() => ({
      getState: () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.1:443')),
      get: () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.1:443')),
      external: () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.1:443')),
      internal: () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.1:443')),
      open: () => {
        throw new Error('not used')
      },
      getTransactions: () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.1:443')),
    }))
    for (const token of ['native', master.toRawString()]) {
      const error = await readTonBalance(down, { chainId: '-239', owner: holder.address.toRawString(), token }).catch(
        (e: unknown) => e,
      )
      expect(error).toBeInstanceOf(UnavailableError)
      expect((error as ApiError).status).toBe(503)
    }
  })
})
