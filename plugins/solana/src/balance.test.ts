import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ChainNotConfiguredError, InvalidAddressError, InvalidArgumentError, UnavailableError } from '@earn/core'
import type { Address } from '@solana/kit'
import { interceptingEndpoint, startSolana, type SolanaChain } from '../../../test/chains/solana.ts'
import { PROGRAM_WIDE_FROM, readBalance } from './balance.ts'
import { connect, type SolanaClient } from './client.ts'
import { newWallet } from './fixtures.ts'
import { TOKEN_2022_PROGRAM_ADDRESS } from './token.ts'

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

describe("a portfolio's many balances of one owner", () => {
  /** The chain behind an endpoint that records each call's method and filter, and may answer a call itself. */
  function recorded(answer?: (call: { method: string; params: unknown[] }) => Response | undefined) {
    const calls: string[] = []
    const node = interceptingEndpoint(chain.url, (call) => {
      const { method, params } = call as unknown as { method: string; params: unknown[] }
      const filter = method === 'getTokenAccountsByOwner' ? (params[1] as { mint?: string; programId?: string }) : undefined
      calls.push(filter ? `${method} ${filter.programId ? `program ${filter.programId}` : 'mint'}` : method)
      return answer?.({ method, params })
    })
    return { client: connect({ SOLANA_RPC_URL: `http://127.0.0.1:${node.port}` }), calls, stop: () => node.stop(true) }
  }

  /** A wallet holding 100 * (i + 1) of each of `count` mints, the last two Token-2022's, the first in two accounts. */
  async function holder(count: number) {
    const mints = [] as string[]
    for (let i = 0; i < count; i++) mints.push(await chain.createMint(i >= count - 2 ? { tokenProgram: TOKEN_2022_PROGRAM_ADDRESS } : {}))
    const w = newWallet()
    for (const [i, mint] of mints.entries()) await chain.mintTo({ mint, owner: w.address, amount: BigInt(100 * (i + 1)) })
    const second = await chain.createTokenAccount({ mint: mints[0]!, owner: w.address })
    await chain.mintTo({ mint: mints[0]!, owner: w.address, amount: 7n, account: second })
    // Another owner's account of the same mint is not the wallet's.
    await chain.mintTo({ mint: mints.at(-1)!, owner: newWallet().address, amount: 9n })
    const expected = mints.map((_, i) => BigInt(100 * (i + 1)) + (i === 0 ? 7n : 0n))
    return { owner: w.address, mints, expected }
  }

  test(`from ${PROGRAM_WIDE_FROM} mints asked at once: one request per token program, each mint's sum as asked alone`, async () => {
    const { owner, mints, expected } = await holder(6)
    const unheld = await chain.createMint()
    const node = recorded()
    try {
      const read = (token: string) => readBalance(node.client, { chainId: 'localnet', owner, token, inBulk: true })
      expect(await Promise.all([...mints, unheld].map(read))).toEqual([...expected, 0n])
      const reads = node.calls.filter((c) => c !== 'getGenesisHash')
      expect(reads.sort()).toEqual(['getTokenAccountsByOwner program TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA', `getTokenAccountsByOwner program ${TOKEN_2022_PROGRAM_ADDRESS}`])
      // The same answers, each mint asked on its own.
      for (const [i, mint] of mints.entries()) expect(await read(mint)).toBe(expected[i]!)
    } finally {
      node.stop()
    }
  })

  test('a build\'s or a stream\'s reads (not in bulk) are each read alone, however many: a mint that is none stays a 400 beside a portfolio\'s reads', async () => {
    const { owner, mints, expected } = await holder(PROGRAM_WIDE_FROM)
    const node = recorded()
    try {
      const notAMint = newWallet().address
      const [alone, ...inBulk] = await Promise.allSettled([
        readBalance(node.client, { chainId: 'localnet', owner, token: notAMint }),
        ...mints.map((token) => readBalance(node.client, { chainId: 'localnet', owner, token, inBulk: true })),
      ])
      expect((alone as PromiseRejectedResult).reason).toBeInstanceOf(InvalidArgumentError)
      expect(inBulk.map((r) => (r as PromiseFulfilledResult<bigint>).value)).toEqual(expected)
      node.calls.length = 0
      expect(await Promise.all(mints.map((token) => readBalance(node.client, { chainId: 'localnet', owner, token })))).toEqual(expected)
      expect(node.calls.filter((c) => c !== 'getGenesisHash')).toEqual(mints.map(() => 'getTokenAccountsByOwner mint'))
    } finally {
      node.stop()
    }
  })

  test('fewer mints in bulk are each read alone', async () => {
    const { owner, mints, expected } = await holder(PROGRAM_WIDE_FROM - 1)
    const node = recorded()
    try {
      expect(await Promise.all(mints.map((token) => readBalance(node.client, { chainId: 'localnet', owner, token, inBulk: true })))).toEqual(expected)
      expect(node.calls.filter((c) => c !== 'getGenesisHash')).toEqual(mints.map(() => 'getTokenAccountsByOwner mint'))
    } finally {
      node.stop()
    }
  })

  test("an owner's accounts of every mint past the answer's bound: the mints asked are each read alone", async () => {
    const { owner, mints, expected } = await holder(5)
    // Past 4 MiB, as a wallet others opened thousands of accounts for would be.
    const node = recorded(({ method, params }) =>
      method === 'getTokenAccountsByOwner' && (params[1] as { programId?: string }).programId ? new Response(`{"jsonrpc":"2.0","id":1,"result":"${'x'.repeat(5 << 20)}"}`) : undefined,
    )
    try {
      expect(await Promise.all(mints.map((token) => readBalance(node.client, { chainId: 'localnet', owner, token, inBulk: true })))).toEqual(expected)
      expect(node.calls.filter((c) => c.endsWith('mint'))).toHaveLength(5)
    } finally {
      node.stop()
    }
  })

  test('a node failing the program-wide read fails each balance as a 503, none answered 0', async () => {
    const { owner, mints } = await holder(4)
    const node = recorded(({ method }) => (method === 'getTokenAccountsByOwner' ? new Response('overloaded', { status: 502 }) : undefined))
    try {
      const answers = await Promise.allSettled(mints.map((token) => readBalance(node.client, { chainId: 'localnet', owner, token, inBulk: true })))
      for (const a of answers) {
        expect(a.status).toBe('rejected')
        expect((a as PromiseRejectedResult).reason).toBeInstanceOf(UnavailableError)
      }
    } finally {
      node.stop()
    }
  })
})
