import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ChainNotConfiguredError, InvalidAddressError, InvalidArgumentError, UnavailableError } from '@earn/core'
import type { Address } from '@solana/kit'
import { startSolana, type SolanaChain } from '../../../test/chains/solana.ts'
import { readBalance } from './balance.ts'
import { connect, type SolanaClient } from './client.ts'
import { newWallet } from './fixtures.ts'

let chain: SolanaChain
let client: SolanaClient

beforeAll(async () => {
  chain = await startSolana()
  client = connect({ SOLANA_RPC_URL: chain.url })
})
afterAll(() => chain?.stop())

const read = (owner: string, token: string, c = client) => readBalance(c, { chainId: 'localnet', owner, token })

describe('balance.read on LiteSVM through JSON-RPC', () => {
  test('native: lamports of a funded wallet, 0 for one never seen', async () => {
    const w = newWallet()
    await chain.airdrop(w.address, 1_500_000_123n)
    expect(await read(w.address, 'native')).toBe(1_500_000_123n)
    expect(await read(newWallet().address, 'native')).toBe(0n)
  })

  test('SPL: the amount in the associated token account', async () => {
    const mint = await chain.createMint({ decimals: 6 })
    const w = newWallet()
    await chain.mintTo({ mint, owner: w.address, amount: 1_234_567n })
    expect(await read(w.address, mint)).toBe(1_234_567n)
    await chain.mintTo({ mint, owner: w.address, amount: 1_234_567n })
    expect(await read(w.address, mint)).toBe(2_469_134n)
  })

  test("SPL: the sum over all of the wallet's accounts for the mint, and only that mint", async () => {
    const [mint, otherMint] = [await chain.createMint(), await chain.createMint({ decimals: 9 })]
    const w = newWallet()
    await chain.mintTo({ mint, owner: w.address, amount: 500n })
    const second = await chain.createTokenAccount({ mint, owner: w.address })
    await chain.mintTo({ mint, owner: w.address, amount: 250n, account: second })
    await chain.mintTo({ mint: otherMint, owner: w.address, amount: 10n ** 12n })
    // Someone else's account for the same mint is not counted.
    await chain.mintTo({ mint, owner: newWallet().address, amount: 7n })
    expect(await read(w.address, mint)).toBe(750n)
    expect(await read(w.address, otherMint)).toBe(10n ** 12n)
  })

  test('SPL: thousands of token accounts others opened for the wallet (anyone may) are still read, each for its amount', async () => {
    const mint = await chain.createMint()
    const w = newWallet()
    const ata = await chain.mintTo({ mint, owner: w.address, amount: 1_000n })
    // Copies of its account at other addresses, each holding 1: what opening them one by one would leave.
    const account = chain.svm.getAccount(ata)
    if (!account.exists) throw new Error('no account')
    const data = new Uint8Array(account.data)
    new DataView(data.buffer).setBigUint64(64, 1n, true)
    for (let i = 0; i < 6_000; i++) chain.svm.setAccount({ ...account, address: newWallet().address as Address, data })
    expect(await read(w.address, mint)).toBe(7_000n)
  })

  test('SPL: 0 for a wallet with no token account for the mint', async () => {
    const mint = await chain.createMint()
    expect(await read(newWallet().address, mint)).toBe(0n)
  })

  test('an address that is no mint on this cluster is a 400 naming the token', async () => {
    const notAMint = newWallet().address
    const e = await read(newWallet().address, notAMint).catch((e: unknown) => e)
    expect(e).toBeInstanceOf(InvalidArgumentError)
    expect((e as InvalidArgumentError).context).toEqual({ token: 'not a token mint on this cluster' })
  })

  test('invalid owner or token addresses are 400s naming the field', async () => {
    const owner = await read('not-an-address', 'native').catch((e: unknown) => e)
    expect(owner).toBeInstanceOf(InvalidAddressError)
    expect(Object.keys((owner as InvalidAddressError).context)).toEqual(['owner'])
    const token = await read(newWallet().address, 'USDC').catch((e: unknown) => e)
    expect(token).toBeInstanceOf(InvalidAddressError)
    expect(Object.keys((token as InvalidAddressError).context)).toEqual(['token'])
  })

  test('without SOLANA_RPC_URL it is a 503 (the deployment lacks it) that names the setting', async () => {
    const e = await read(newWallet().address, 'native', connect({})).catch((e: unknown) => e)
    expect(e).toBeInstanceOf(ChainNotConfiguredError)
    expect((e as ChainNotConfiguredError).status).toBe(503)
    expect((e as Error).message).toContain('SOLANA_RPC_URL')
  })

  test('an RPC that cannot be reached, or answers 5xx, is 503 Unavailable', async () => {
    const closed = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') })
    const url = `http://127.0.0.1:${closed.port}`
    await closed.stop(true)
    const refused = await read(newWallet().address, 'native', connect({ SOLANA_RPC_URL: url })).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(UnavailableError)
    expect((refused as UnavailableError).status).toBe(503)

    const failing = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('overloaded', { status: 502 }) })
    try {
      const c = connect({ SOLANA_RPC_URL: `http://127.0.0.1:${failing.port}` })
      const e = await read(newWallet().address, 'native', c).catch((e: unknown) => e)
      expect(e).toBeInstanceOf(UnavailableError)
      expect((e as Error).message).not.toContain(String(failing.port)) // the URL (and any key in it) stays out
    } finally {
      await failing.stop(true)
    }
  })
})
