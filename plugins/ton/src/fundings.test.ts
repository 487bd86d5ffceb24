/**
 * Finding stream fundings on TON: on the sandbox (its client lists an account's transactions and finds the one that
 * sent a message, as the index does), and in production through `connectTon` against a local stub speaking toncenter's
 * shapes (v3 `transactions?account=`, `transactionsByMessage?direction=out`, v2 `getTransactions`), serving the
 * sandbox's real transactions: what the watch is given is the creator's wallet transaction, which readTransfers reads.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type ApiError, NATIVE_TOKEN, UnavailableError } from '@earn/core'
import { Address, toNano, type Transaction } from '@ton/core'
import { transferSandbox } from '../../../test/chains/ton.ts'
import { TonClient } from '@ton/ton'
import { connectTon, createTonClient } from './client.ts'
import { commentCell } from './comment.ts'
import { buildTonTransfer } from './fundingTransfer.ts'
import { findTonFundings, MAX_FOLLOWED } from './fundings.ts'
import { MAX_LISTED_TRANSACTIONS, toncenterLookups } from './lookup.ts'
import { readTonTransfers } from './readTransfers.ts'
import type { TonConnectRequest } from './request.ts'

const CHAIN = '-239'
const TAG = 'earn:v1:stream:5b0c1f2e-3d4a-4b5c-8d6e-7f8091a2b3c4:0123456789abcdef0123456789abcdef'

const { chain, sender, treasury, jetton } = await transferSandbox({ seed: 61, version: 'v5r1', ton: toNano('20') })

const raw = (a: Address) => a.toRawString()
const send = async (request: TonConnectRequest) => (await chain.sendTonConnect(sender.wallet, sender.keyPair, request)).hash
const built = async (token: string, amount: bigint, tag = TAG) =>
  (await buildTonTransfer(chain.client, { chainId: CHAIN, from: raw(sender.wallet.address), to: raw(treasury.address), token, amount, tag }))[0]!.transaction as TonConnectRequest
const find = (token: string, cursor?: string, client = chain.client) => findTonFundings(client, { chainId: CHAIN, treasury: raw(treasury.address), token, cursor })
/** The cursor past everything the account has received so far (a first look may stop short, at MAX_FOLLOWED). */
async function caughtUp(token: string): Promise<string> {
  for (let cursor = (await find(token)).cursor; ; ) {
    const next = (await find(token, cursor)).cursor
    if (next === cursor) return cursor
    cursor = next
  }
}

describe('findTonFundings on the sandbox', () => {
  test("TON: a tagged transfer's wallet transaction is found, an untagged one is not; the cursor goes on past both", async () => {
    const first = await find(NATIVE_TOKEN)
    const tagged = await send(await built(NATIVE_TOKEN, toNano('1')))
    const request = await built(NATIVE_TOKEN, toNano('1'))
    await send({ ...request, messages: [{ address: request.messages[0]!.address, amount: toNano('1').toString() }] })
    const found = await find(NATIVE_TOKEN, first.cursor)
    expect(found.txHashes).toEqual([tagged])
    expect(BigInt(found.cursor)).toBeGreaterThan(BigInt(first.cursor))
    // What the watch then reads: the creator's transfer to the treasury.
    const read = await readTonTransfers(chain.client, { chainId: CHAIN, txHash: found.txHashes[0]! })
    expect(read.transfers).toContainEqual({ token: NATIVE_TOKEN, from: raw(sender.wallet.address), to: raw(treasury.address), amount: toNano('1'), tag: TAG })
    expect(await find(NATIVE_TOKEN, found.cursor)).toEqual({ txHashes: [], cursor: found.cursor })
    // A first look (no cursor, or the '' of one that found nothing) covers the last day's again.
    expect((await find(NATIVE_TOKEN)).txHashes).toContain(tagged)
    expect((await find(NATIVE_TOKEN, '')).cursor).toBe(found.cursor)
  })

  test("a cursor past the account's latest transaction (a network started over, the cursor kept) starts a first look, not a wait for good", async () => {
    const tagged = await send(await built(NATIVE_TOKEN, toNano('1')))
    const past = (await find(NATIVE_TOKEN, '90000000000000'))
    expect(past.txHashes).toContain(tagged)
    expect(BigInt(past.cursor)).toBeLessThan(90000000000000n)
    // At the latest transaction itself: nothing new, and the cursor stays.
    const latest = await caughtUp(NATIVE_TOKEN)
    expect(await find(NATIVE_TOKEN, latest)).toEqual({ txHashes: [], cursor: latest })
  })

  test("a jetton: found two hops back from the treasury's jetton wallet; a TON transfer to the treasury is not the jetton's", async () => {
    const none = await find(raw(jetton))
    const tagged = await send(await built(raw(jetton), 1_015_002n))
    await send(await built(NATIVE_TOKEN, toNano('1')))
    const found = await find(raw(jetton), none.cursor)
    expect(found.txHashes).toEqual([tagged])
    const read = await readTonTransfers(chain.client, { chainId: CHAIN, txHash: tagged })
    expect(read.transfers).toContainEqual({ token: raw(jetton), from: raw(sender.wallet.address), to: raw(treasury.address), amount: 1_015_002n, tag: TAG })
    expect(await find(raw(jetton), found.cursor)).toEqual({ txHashes: [], cursor: found.cursor })
  })

  test(`at most ${MAX_FOLLOWED} tagged messages are followed a call; the next goes on from the first left`, async () => {
    const start = await caughtUp(NATIVE_TOKEN)
    const request = await built(NATIVE_TOKEN, toNano('0.01'))
    const message = request.messages[0]!
    // One wallet transaction sending more tagged messages than a call follows (a v5 wallet sends up to 255).
    const many = Array.from({ length: MAX_FOLLOWED + 4 }, (_, i) => ({ ...message, payload: commentCell(`${TAG}:${i}`).toBoc().toString('base64') }))
    const hash = await send({ ...request, messages: many })
    const first = await find(NATIVE_TOKEN, start)
    expect(first.txHashes).toEqual([hash])
    const rest = await find(NATIVE_TOKEN, first.cursor)
    expect(rest.txHashes).toEqual([hash])
    expect(BigInt(rest.cursor)).toBeGreaterThan(BigInt(first.cursor))
    expect((await find(NATIVE_TOKEN, rest.cursor)).txHashes).toEqual([])
  })
})

describe('findTonFundings through toncenter', () => {
  const seen: string[] = []
  let server: ReturnType<typeof Bun.serve>
  const fail = { index: false, node: false }
  const hex = (b64: string) => Buffer.from(b64, 'base64').toString('hex')
  const indexEntry = (tx: Transaction, account: Address) => ({ account: account.toRawString().toUpperCase(), hash: tx.hash().toString('base64'), lt: tx.lt.toString(), now: tx.now, description: {} })
  const nodeEntry = (tx: Transaction) => ({
    '@type': 'raw.transaction',
    data: tx.raw.toBoc().toString('base64'),
    utime: tx.now,
    transaction_id: { '@type': 'internal.transactionId', lt: tx.lt.toString(), hash: tx.hash().toString('base64') },
    fee: '0',
    storage_fee: '0',
    other_fee: '0',
    out_msgs: [],
  })
  const accountOf = (tx: Transaction) => Address.parseRaw(`0:${tx.address.toString(16).padStart(64, '0')}`)

  beforeAll(() => {
    // The sandbox client answers what toncenter's index and node would.
    server = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(req) {
        const url = new URL(req.url)
        const q = url.searchParams
        if (req.method === 'GET' && url.pathname.endsWith('/v3/transactions')) {
          seen.push(`index transactions ${q.get('sort')}`)
          if (fail.index) return new Response('upstream timeout', { status: 504 })
          const account = Address.parse(q.get('account')!)
          const limit = Number(q.get('limit'))
          const window = q.has('start_lt') ? { afterLt: BigInt(q.get('start_lt')!) - 1n, limit } : { since: Number(q.get('start_utime')), limit }
          const txs = await chain.client.listTransactions(account, window)
          return Response.json({ transactions: (q.get('sort') === 'desc' ? txs.reverse() : txs).map((tx) => indexEntry(tx, account)), address_book: {} })
        }
        if (req.method === 'GET' && url.pathname.endsWith('/v3/transactionsByMessage')) {
          seen.push(`index transactionsByMessage ${q.get('direction')}`)
          const tx = q.get('direction') === 'out' ? await chain.client.findSendingTransaction(hex(q.get('msg_hash')!)) : null
          return Response.json({ transactions: tx ? [indexEntry(tx, accountOf(tx))] : [], address_book: {} })
        }
        if (req.method === 'POST' && url.pathname === '/api/v2/jsonRPC') {
          const call = (await req.json()) as { method: string; params: { address: string; lt: string; hash: string; limit: number } }
          seen.push(`node ${call.method} ${call.params.limit}`)
          if (call.method !== 'getTransactions') return new Response('not found', { status: 404 })
          const account = Address.parse(call.params.address)
          // Newest first, back from the one named (TonClient sends its hash as hex).
          const all = (await chain.client.listTransactions(account, { afterLt: 0n, limit: MAX_LISTED_TRANSACTIONS })).reverse()
          const from = all.findIndex((tx) => tx.hash().toString('hex') === call.params.hash && tx.lt.toString() === call.params.lt)
          const served = from < 0 ? [] : all.slice(from, from + call.params.limit - (fail.node ? 1 : 0))
          return Response.json({ ok: true, result: served.map(nodeEntry) })
        }
        return new Response('not found', { status: 404 })
      },
    })
  })
  afterAll(() => server.stop(true))
  const production = () => connectTon({ TON_API_URL: `http://127.0.0.1:${server.port}/api/v2/jsonRPC` })

  test('TON: lists the treasury once (the index, then one node call for them all) and goes back one hop from each tagged message', async () => {
    const start = await caughtUp(NATIVE_TOKEN)
    const tagged = [await send(await built(NATIVE_TOKEN, toNano('1'))), await send(await built(NATIVE_TOKEN, toNano('1')))]
    seen.length = 0
    const found = await find(NATIVE_TOKEN, start, production())
    expect(found).toEqual(await find(NATIVE_TOKEN, start))
    expect(found.txHashes).toEqual(tagged)
    // The hops go together: their calls in any order.
    expect(seen.slice(0, 2)).toEqual(['index transactions asc', 'node getTransactions 2'])
    expect(seen.slice(2).sort()).toEqual(['index transactionsByMessage out', 'index transactionsByMessage out', 'node getTransactions 1', 'node getTransactions 1'])
    // A first look asks the index for the latest, newest first.
    seen.length = 0
    expect((await find(NATIVE_TOKEN, undefined, production())).txHashes).toEqual((await find(NATIVE_TOKEN)).txHashes)
    expect(seen[0]).toBe('index transactions desc')
  })

  test("a jetton: the treasury's jetton wallet listed through the index, and two hops back", async () => {
    // The node's get-methods from the sandbox; the listing and the hops through toncenter's shapes.
    const node = new TonClient({ endpoint: `http://127.0.0.1:${server.port}/api/v2/jsonRPC` })
    const lookups = toncenterLookups({
      indexUrl: `http://127.0.0.1:${server.port}/api/v3`,
      getTransaction: (account, lt, hash) => node.getTransaction(account, lt, hash),
      getTransactions: (account, opts) => node.getTransactions(account, opts),
    })
    const client = createTonClient(chain.client.provider, { listTransactions: lookups.recent, findSendingTransaction: lookups.byOutMessage, now: chain.client.now })
    const start = await caughtUp(raw(jetton))
    const tagged = await send(await built(raw(jetton), 1_000_000n))
    seen.length = 0
    expect(await find(raw(jetton), start, client)).toEqual({ txHashes: [tagged], cursor: (await find(raw(jetton), start)).cursor })
    expect(seen).toEqual(['index transactions asc', 'node getTransactions 1', ...Array(2).fill(['index transactionsByMessage out', 'node getTransactions 1']).flat()])
  })

  test('an index that fails, or a node that does not serve what the index listed, is the 503: the watch looks again', async () => {
    for (const [which, context] of [
      ['index', { TON_INDEX_URL: 'did not answer' }],
      ['node', { TON_API_URL: 'did not answer' }],
    ] as const) {
      fail[which] = true
      try {
        const error = (await find(NATIVE_TOKEN, undefined, production()).catch((e: unknown) => e)) as ApiError
        expect(error).toBeInstanceOf(UnavailableError)
        expect(error.context).toEqual(context)
      } finally {
        fail[which] = false
      }
    }
  })
})
