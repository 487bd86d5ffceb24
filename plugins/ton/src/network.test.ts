/**
 * The network check on a toncenter-style endpoint. No TON network can run here behind HTTP (the sandbox is in-process),
 * so a stand-in answers `getMasterchainInfo` as toncenter does, with a public network's zero state, and counts calls.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { InvalidArgumentError, UnavailableError } from '@earn/core'
import { connectTon } from './client.ts'
import { ton } from './index.ts'
import { networkOfZeroState } from './network.ts'
import { toncenterStandIn } from './standIn.ts'

const MAINNET = 'F6OpKZKqvqeFp6CQmFomXNMfMj2EnaUSOXN+Mh+wVWk='
const TESTNET = 'gj+B8wb/AmlPk1z1AhVI484rhrUpgSr2oSFIh56VoSg='

let zeroState: string | undefined = MAINNET
let failing: false | 'http' | 'not ok' = false
/** The account balance getAddressInformation answers, as the endpoint writes it. */
let balance: unknown = '1000'
let padding = ''
const seen: { method: string; key: string | null }[] = []
let node: ReturnType<typeof toncenterStandIn>
beforeAll(() => {
  node = toncenterStandIn((call, request) => {
    seen.push({ method: call.method, key: request.headers.get('x-api-key') })
    if (failing === 'http') return new Response('busy', { status: 502 })
    if (failing === 'not ok') return Response.json({ ok: false, error: 'LITE_SERVER_UNKNOWN', code: 500 })
    const block = { '@type': 'ton.blockIdExt', workchain: -1, shard: '-9223372036854775808', seqno: 1, root_hash: 'x', file_hash: 'x' }
    if (call.method === 'getAddressInformation')
      return Response.json({
        ok: true,
        id: call.id,
        jsonrpc: '2.0',
        result: { balance, padding, state: 'uninitialized', data: '', code: '', last_transaction_id: { '@type': 'internal.transactionId', lt: '0', hash: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' }, block_id: block, sync_utime: 1 },
      })
    const init = zeroState === undefined ? undefined : { '@type': 'ton.blockIdExt', workchain: -1, shard: '-9223372036854775808', seqno: 0, root_hash: zeroState, file_hash: 'x' }
    return Response.json({ ok: true, id: call.id, jsonrpc: '2.0', result: { '@type': 'blocks.masterchainInfo', init } })
  })
})
afterAll(() => node.stop())

const url = () => node.url
const owner = 'UQBVTf3dl8R3xyG9wsG7OQpL6wPnbKFIfDEj3Ws0lO-5SeOR'

test('a zero state names its public network; any other names none', () => {
  expect([MAINNET, TESTNET, 'AAAA'].map(networkOfZeroState)).toEqual(['-239', '-3', undefined])
})

test('an endpoint on mainnet refuses a testnet read with a 503 naming chainId, before reading; it is asked once, with the key', async () => {
  zeroState = MAINNET
  seen.length = 0
  const client = connectTon({ TON_API_URL: url(), TON_API_KEY: 'k3y' })
  for (let i = 0; i < 2; i++) {
    const e = await ton.balance.read(client, { chainId: '-3', owner, token: 'native' }).catch((x: unknown) => x)
    expect(e).toBeInstanceOf(UnavailableError)
    expect(e).toMatchObject({ status: 503, message: 'the TON_API_URL configured serves TON mainnet (-239), not -3', context: { chainId: '-3' } })
  }
  expect(seen).toEqual([{ method: 'getMasterchainInfo', key: 'k3y' }])
  expect(await client.network!()).toBe('-239')
})

test('an endpoint whose zero state is no public network is not refused; one that reports none answers malformed, a 503', async () => {
  zeroState = 'AAAA'
  expect(await connectTon({ TON_API_URL: url() }).network!()).toBeUndefined()
  zeroState = undefined
  const e = await ton.balance.read(connectTon({ TON_API_URL: url() }), { chainId: '-239', owner, token: 'native' }).catch((x: unknown) => x)
  expect(e).toBeInstanceOf(UnavailableError)
  zeroState = MAINNET
})

test('a balance written otherwise than in decimal digits, or an answer past 10 MiB, is the endpoint failing (503), not an amount: BigInt reads "" as 0', async () => {
  zeroState = MAINNET
  const read = () => ton.balance.read(connectTon({ TON_API_URL: url() }), { chainId: '-239', owner: `0:${'55'.repeat(32)}`, token: 'native' })
  for (const written of ['1000', 1000]) {
    balance = written
    expect(await read()).toBe(1000n)
  }
  for (const written of ['', '0x10', ' 5', '1e3', 1.5, -1, '-5']) {
    balance = written
    expect(await read().catch((x: unknown) => x), JSON.stringify(written).slice(0, 20)).toBeInstanceOf(UnavailableError)
  }
  // A whole balance in an answer over 10 MiB: not read to its end.
  balance = '1000'
  padding = 'x'.repeat(11 * 1024 * 1024)
  expect(await read().catch((x: unknown) => x)).toBeInstanceOf(UnavailableError)
  padding = ''
})

test('an endpoint that fails the ask (an HTTP error, or 200 without ok) is a 503, and the next read asks again', async () => {
  for (const failure of ['http', 'not ok'] as const) {
    zeroState = TESTNET
    failing = failure
    seen.length = 0
    const client = connectTon({ TON_API_URL: url() })
    const e = await ton.balance.read(client, { chainId: '-239', owner, token: 'native' }).catch((x: unknown) => x)
    expect(e, failure).toBeInstanceOf(UnavailableError)
    expect((e as Error).message).not.toContain('127.0.0.1')
    failing = false
    expect(await client.network!()).toBe('-3')
    expect(seen.map((s) => s.method)).toEqual(['getMasterchainInfo', 'getMasterchainInfo'])
  }
})

test("a client's mistake is a 400 even while the endpoint cannot be asked: refusals that need no chain come first", async () => {
  failing = 'http'
  seen.length = 0
  try {
    const client = connectTon({ TON_API_URL: url() })
    const hash = await ton.transactions.readTransfers(client, { chainId: '-239', txHash: 'nothash' }).catch((x: unknown) => x)
    expect(hash).toBeInstanceOf(InvalidArgumentError)
    expect(Object.keys((hash as InvalidArgumentError).context)).toEqual(['txHash'])
    const opportunity = { id: 'o', chainId: '-239', vaultAddress: owner, baseToken: 'native', receiptToken: owner }
    const build = { kind: 'deposit' as const, chainId: '-239', owner, opportunity, amount: 1n, tag: 'earn:v1:d:a:' + '0'.repeat(32), slippageBps: 0, tokenIn: 'native', mode: 'swap' as const }
    const swap = await ton.transactions.build(client, build).catch((x: unknown) => x)
    expect(swap).toBeInstanceOf(InvalidArgumentError)
    expect(Object.keys((swap as InvalidArgumentError).context)).toEqual(['mode'])
    expect(seen).toEqual([])
  } finally {
    failing = false
  }
})
