/**
 * Finding transactions by hash in production: `connectTon`'s lookup against a local Bun.serve stub
 * that speaks toncenter's documented shapes (v3 `GET /api/v3/transactions?hash=`, v2 JSON-RPC
 * `getTransactions`). The stub stands in for toncenter, the only part of the path that cannot run
 * here; the transaction it serves is a real one, made on the sandbox.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type ApiError, InvalidArgumentError, NotFoundError, UnavailableError } from '@earn/core'
import { toNano, type Transaction } from '@ton/core'
import { keyPairFromSeed } from '@ton/crypto'
import { startTon } from '../../../test/chains/ton.ts'
import { connectTon } from './client.ts'
import { commentCell } from './comment.ts'
import { indexUrlFrom, parseTxHash } from './lookup.ts'
import { tonConnectRequest } from './request.ts'
import { readTonTag } from './tag.ts'

const TAG = 'earn:v1:11111111-0000-4000-8000-000000000001:22222222-0000-4000-8000-000000000002:bWFjbWFjbWFjbWFj'
const FAILING = 'ee'.repeat(32)
const UNSERVED = 'dd'.repeat(32)

let tx: Transaction
let hash: string
let from: string
let server: ReturnType<typeof Bun.serve>
const seen: { path: string; apiKey: string | null; method?: string }[] = []

function toncenterStub(known: Map<string, { account: string; lt: string; tx?: Transaction }>) {
  return Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const url = new URL(req.url)
      if (req.method === 'GET' && /\/v3\/transactions$/.test(url.pathname)) {
        seen.push({ path: url.pathname, apiKey: req.headers.get('x-api-key') })
        const h = url.searchParams.get('hash') ?? ''
        if (h === FAILING) return new Response('upstream timeout', { status: 504 })
        const entry = known.get(h)
        // toncenter v3 TransactionsResponse (abridged to the fields a client reads; hash in base64, account raw uppercase).
        return Response.json({
          transactions: entry
            ? [{ account: entry.account, hash: Buffer.from(h, 'hex').toString('base64'), lt: entry.lt, now: 1_700_000_000, description: {} }]
            : [],
          address_book: {},
        })
      }
      if (req.method === 'POST' && url.pathname === '/api/v2/jsonRPC') {
        const call = (await req.json()) as { method: string; params: { address: string; lt: string; hash: string } }
        seen.push({ path: url.pathname, apiKey: req.headers.get('x-api-key'), method: call.method })
        const entry = known.get(call.params.hash) // TonClient sends the hash as hex
        const result =
          call.method === 'getTransactions' && entry?.tx && entry.lt === call.params.lt
            ? [
                {
                  '@type': 'raw.transaction',
                  data: entry.tx.raw.toBoc().toString('base64'),
                  utime: entry.tx.now,
                  transaction_id: { '@type': 'internal.transactionId', lt: entry.lt, hash: Buffer.from(call.params.hash, 'hex').toString('base64') },
                  fee: '0',
                  storage_fee: '0',
                  other_fee: '0',
                  out_msgs: [],
                },
              ]
            : []
        return Response.json({ ok: true, result })
      }
      return new Response('not found', { status: 404 })
    },
  })
}

beforeAll(async () => {
  const chain = await startTon()
  const keyPair = keyPairFromSeed(Buffer.alloc(32, 71))
  const user = await chain.deployWallet('v5r1', keyPair, toNano('3'))
  const vault = await chain.deployWallet('v4r2', keyPairFromSeed(Buffer.alloc(32, 72)), toNano('1'))
  const request = tonConnectRequest({
    nowMs: chain.client.now(),
    network: '-239',
    from: user.address,
    messages: [{ to: vault.address, amount: toNano('0.5'), body: commentCell(TAG) }],
  })
  const sent = await chain.sendTonConnect(user, keyPair, request)
  tx = sent.transaction
  hash = sent.hash
  from = user.address.toRawString()
  const account = user.address.toRawString().toUpperCase().replace('0X', '0x')
  server = toncenterStub(
    new Map([
      [hash, { account, lt: tx.lt.toString(), tx }],
      [UNSERVED, { account, lt: '1' }],
    ]),
  )
})
afterAll(() => server.stop(true))

const base = () => `http://127.0.0.1:${server.port}`
const production = (env: Record<string, string> = {}) =>
  connectTon({ TON_API_URL: `${base()}/api/v2/jsonRPC`, TON_API_KEY: 'test-key', ...env })

describe('toncenter lookup', () => {
  test('finds the transaction through the index and the node, and reads its tag', async () => {
    seen.length = 0
    const found = await production().findTransaction(hash)
    expect(found?.hash().toString('hex')).toBe(hash)
    expect(seen.map((s) => [s.path, s.method])).toEqual([
      ['/api/v3/transactions', undefined],
      ['/api/v2/jsonRPC', 'getTransactions'],
    ])
    expect(seen.every((s) => s.apiKey === 'test-key')).toBe(true)
    const base64 = Buffer.from(hash, 'hex').toString('base64')
    expect(await readTonTag(production(), { chainId: '-239', txHash: base64 })).toEqual({
      tag: TAG,
      from,
    })
  })

  test('TON_INDEX_URL overrides the index derived from TON_API_URL', async () => {
    seen.length = 0
    const client = connectTon({ TON_API_URL: `${base()}/api/v2/jsonRPC`, TON_INDEX_URL: `${base()}/elsewhere/v3/` })
    expect((await client.findTransaction(hash))?.hash().toString('hex')).toBe(hash)
    expect(seen[0]?.path).toBe('/elsewhere/v3/transactions')
  })

  test('a hash the index does not know is 404', async () => {
    const error = await readTonTag(production(), { chainId: '-239', txHash: 'ab'.repeat(32) }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(NotFoundError)
  })

  test('an index that fails, or a node that cannot serve what the index knows, is 503 (retry), not 404', async () => {
    for (const txHash of [FAILING, UNSERVED]) {
      const error = (await readTonTag(production(), { chainId: '-239', txHash }).catch((e: unknown) => e)) as ApiError
      expect(error).toBeInstanceOf(UnavailableError)
      expect(error.message).not.toContain(base())
    }
  })

  test('without TON_API_URL, or with a URL whose index cannot be derived, the missing variable is named', async () => {
    const none = (await connectTon({}).findTransaction(hash).catch((e: unknown) => e)) as ApiError
    expect(none).toBeInstanceOf(InvalidArgumentError)
    expect(none.context).toHaveProperty('TON_API_URL')
    const custom = (await connectTon({ TON_API_URL: 'https://ton.example.com/rpc' }).findTransaction(hash).catch((e: unknown) => e)) as ApiError
    expect(custom).toBeInstanceOf(InvalidArgumentError)
    expect(custom.context).toHaveProperty('TON_INDEX_URL')
  })
})

describe('indexUrlFrom', () => {
  test('toncenter-style URLs map to their v3 root; others to nothing', () => {
    expect(indexUrlFrom('https://toncenter.com/api/v2/jsonRPC')).toBe('https://toncenter.com/api/v3')
    expect(indexUrlFrom('https://testnet.toncenter.com/api/v2/jsonRPC/')).toBe('https://testnet.toncenter.com/api/v3')
    expect(indexUrlFrom('https://ton.example.com/rpc')).toBeUndefined()
  })
})

describe('parseTxHash', () => {
  test('hex in any case, base64 and base64url give the lowercase hex', () => {
    const bytes = Buffer.from('00ff'.repeat(16), 'hex')
    for (const form of [bytes.toString('hex'), bytes.toString('hex').toUpperCase(), bytes.toString('base64'), bytes.toString('base64url')])
      expect(parseTxHash(form)).toBe(bytes.toString('hex'))
  })
})
