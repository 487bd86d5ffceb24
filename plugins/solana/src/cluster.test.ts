import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { UnavailableError } from '@earn/core'
import { generateKeyPairSigner } from '@solana/kit'
import { startSolana, type SolanaChain } from '../../../test/chains/solana.ts'
import { readBalance } from './balance.ts'
import { connect } from './client.ts'
import { clusterOf, servesChain } from './cluster.ts'

const DEVNET = 'EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG'
const MAINNET = '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d'

test('a genesis hash names its cluster; a CAIP-2 id matches by prefix', () => {
  expect([MAINNET, DEVNET, '4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY', '11111111111111111111111111111111'].map(clusterOf)).toEqual([
    'mainnet',
    'devnet',
    'testnet',
    'localnet',
  ])
  expect(servesChain('mainnet', MAINNET)).toBe(true)
  expect(servesChain('solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', MAINNET)).toBe(true)
  expect(servesChain('devnet', MAINNET)).toBe(false)
  expect(servesChain('localnet', MAINNET)).toBe(false)
  expect(servesChain('solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1', MAINNET)).toBe(false)
})

describe('reads check the cluster the RPC serves (LiteSVM behind a proxy that can answer another genesis)', () => {
  let chain: SolanaChain
  let genesis: string | undefined
  let asked = 0
  let proxy: ReturnType<typeof Bun.serve>
  beforeAll(async () => {
    chain = await startSolana()
    proxy = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(request) {
        const body = await request.text()
        const call = JSON.parse(body) as { id: number; method: string }
        if (call.method === 'getGenesisHash') {
          asked++
          if (genesis) return Response.json({ jsonrpc: '2.0', id: call.id, result: genesis })
        }
        return fetch(chain.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      },
    })
  })
  afterAll(() => proxy?.stop(true))

  test('the local cluster is served; the node is asked once per client', async () => {
    genesis = undefined
    asked = 0
    const client = connect({ SOLANA_RPC_URL: `http://127.0.0.1:${proxy.port}` })
    const owner = (await generateKeyPairSigner()).address
    await chain.airdrop(owner, 1_000_000_000n)
    expect(await readBalance(client, { chainId: 'localnet', owner, token: 'native' })).toBe(1_000_000_000n)
    expect(await readBalance(client, { chainId: 'localnet', owner, token: 'native' })).toBe(1_000_000_000n)
    expect(asked).toBe(1)
  })

  test('an RPC on devnet refuses a mainnet read with a 503 naming both, and reads nothing', async () => {
    genesis = DEVNET
    asked = 0
    const client = connect({ SOLANA_RPC_URL: `http://127.0.0.1:${proxy.port}` })
    const owner = (await generateKeyPairSigner()).address
    const e = await readBalance(client, { chainId: 'mainnet', owner, token: 'native' }).catch((x: unknown) => x)
    expect(e).toBeInstanceOf(UnavailableError)
    expect(e).toMatchObject({ status: 503, message: `the SOLANA_RPC_URL configured serves Solana devnet (genesis ${DEVNET}), not mainnet`, context: { chainId: 'mainnet' } })
    expect(await readBalance(client, { chainId: 'devnet', owner, token: 'native' })).toBe(0n)
    expect(asked).toBe(1)
  })
})

test("a public cluster's CAIP-2 id, or a prefix of it, is served only by that cluster's genesis", () => {
  for (const id of ['solana:5eykt4', 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', 'mainnet']) expect(servesChain(id, MAINNET), id).toBe(true)
  // A local validator whose genesis happens to start as mainnet's does not serve mainnet by any spelling.
  const lookalike = '5eykt4AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'
  for (const id of ['solana:5', 'solana:5eykt4', 'mainnet']) expect(servesChain(id, lookalike), id).toBe(false)
  expect(servesChain('localnet', lookalike)).toBe(true)
})
