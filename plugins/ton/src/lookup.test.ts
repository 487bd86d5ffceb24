/**
 * Finding transactions by hash in production: `connectTon`'s lookup against a local Bun.serve stub
 * that speaks toncenter's documented shapes (v3 `GET /api/v3/transactions?hash=` and
 * `GET /api/v3/transactionsByMessage?msg_hash=&direction=in`, v2 JSON-RPC `getTransactions`). The stub stands in for toncenter, the only part of the path that cannot run
 * here; the transaction it serves is a real one, made on the sandbox.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type ApiError, NotFoundError, UnavailableError } from '@earn/core'
import { toNano, type Transaction } from '@ton/core'
import { keyPairFromSeed } from '@ton/crypto'
import { startTon } from '../../../test/chains/ton.ts'
import { connectTon } from './client.ts'
import { commentCell } from './comment.ts'
import { indexUrlFrom, messageCells, parseTxHash } from './lookup.ts'
import { tonConnectRequest } from './request.ts'
import { readTonTag } from './tag.ts'

const TAG = 'earn:v1:11111111-0000-4000-8000-000000000001:22222222-0000-4000-8000-000000000002:bWFjbWFjbWFjbWFj'
const FAILING = 'ee'.repeat(32)
const UNSERVED = 'dd'.repeat(32)
const BAD_ACCOUNT = 'cc'.repeat(32)

let tx: Transaction
let hash: string
let messageHash: string
let from: string
let server: ReturnType<typeof Bun.serve>
const seen: { path: string; apiKey: string | null; method?: string }[] = []

type Entry = { account: string; lt: string; tx?: Transaction }
// toncenter v3 TransactionsResponse (abridged to the fields a client reads; hash in base64, account raw uppercase).
const transactionsResponse = (txHash: string, entry: Entry | undefined) =>
  Response.json({
    transactions: entry ? [{ account: entry.account, hash: Buffer.from(txHash, 'hex').toString('base64'), lt: entry.lt, now: 1_700_000_000, description: {} }] : [],
    address_book: {},
  })

/** `known` by transaction hash; `received` maps a message hash to the transaction hash that received it. */
function toncenterStub(known: Map<string, Entry>, received: Map<string, string>) {
  return Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const url = new URL(req.url)
      if (req.method === 'GET' && /\/v3\/transactionsByMessage$/.test(url.pathname)) {
        seen.push({ path: url.pathname, apiKey: req.headers.get('x-api-key') })
        if (url.searchParams.get('direction') !== 'in') return new Response('direction must be in', { status: 422 })
        const txHash = received.get(Buffer.from(url.searchParams.get('msg_hash') ?? '', 'base64').toString('hex'))
        return transactionsResponse(txHash ?? '', txHash === undefined ? undefined : known.get(txHash))
      }
      if (req.method === 'GET' && /\/v3\/transactions$/.test(url.pathname)) {
        seen.push({ path: url.pathname, apiKey: req.headers.get('x-api-key') })
        const h = url.searchParams.get('hash') ?? ''
        if (h === FAILING) return new Response('upstream timeout', { status: 504 })
        return transactionsResponse(h, known.get(h))
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
  messageHash = messageCells(tx).inMessage!.hash().toString('hex')
  server = toncenterStub(
    new Map([
      [hash, { account, lt: tx.lt.toString(), tx }],
      [UNSERVED, { account, lt: '1' }],
      [BAD_ACCOUNT, { account: 'garbage', lt: '1' }],
    ]),
    new Map([[messageHash, hash]]),
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
      txHash: hash,
      tag: TAG,
      from,
    })
  })

  test('the hash of the external message TON Connect reports finds the same transaction, through transactionsByMessage', async () => {
    seen.length = 0
    expect(messageHash).not.toBe(hash)
    expect(await readTonTag(production(), { chainId: '-239', txHash: messageHash })).toEqual({ txHash: hash, tag: TAG, from })
    expect(seen.map((s) => [s.path, s.method])).toEqual([
      ['/api/v3/transactions', undefined],
      ['/api/v3/transactionsByMessage', undefined],
      ['/api/v2/jsonRPC', 'getTransactions'],
    ])
    // The lookup by message checks the node's transaction really received it.
    expect((await production().findTransactionByMessage(messageHash))?.hash().toString('hex')).toBe(hash)
    expect(await production().findTransactionByMessage('ab'.repeat(32))).toBeNull()
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
    // The context names the setting to check: the index's where the index failed, the API's where the node did.
    for (const [txHash, context] of [
      [FAILING, { TON_INDEX_URL: 'did not answer' }],
      [BAD_ACCOUNT, { TON_INDEX_URL: 'did not answer' }],
      [UNSERVED, { TON_API_URL: 'did not answer' }],
    ] as const) {
      const error = (await readTonTag(production(), { chainId: '-239', txHash }).catch((e: unknown) => e)) as ApiError
      expect(error).toBeInstanceOf(UnavailableError)
      expect(error.message).not.toContain(base())
      expect(error.context).toEqual(context)
    }
  })

  test('without TON_API_URL, or with a URL whose index cannot be derived, the missing variable is named', async () => {
    const none = (await connectTon({}).findTransaction(hash).catch((e: unknown) => e)) as ApiError
    expect(none).toBeInstanceOf(UnavailableError)
    expect(none.context).toHaveProperty('TON_API_URL')
    const custom = (await connectTon({ TON_API_URL: 'https://ton.example.com/rpc' }).findTransaction(hash).catch((e: unknown) => e)) as ApiError
    expect(custom).toBeInstanceOf(UnavailableError)
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
