/**
 * A toncenter-style endpoint answering an account balance no account can hold. No TON network runs behind HTTP here
 * (the sandbox is in-process), so a stand-in answers `getAddressInformation` as toncenter does, with the balance given.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { UnavailableError } from '@earn/core'
import { Address } from '@ton/core'
import { readTonBalance } from './balance.ts'
import { connectTon } from './client.ts'

let balance = '1000'
let node: ReturnType<typeof Bun.serve>
beforeAll(() => {
  node = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const call = (await request.json()) as { id: number; method: string }
      if (call.method !== 'getAddressInformation') return Response.json({ ok: false, error: `not here: ${call.method}`, code: 500 })
      return Response.json({
        ok: true,
        id: call.id,
        jsonrpc: '2.0',
        result: { '@type': 'raw.fullAccountState', balance, code: '', data: '', last_transaction_id: { '@type': 'internal.transactionId', lt: '0', hash: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' }, block_id: { '@type': 'ton.blockIdExt', workchain: -1, shard: '-9223372036854775808', seqno: 1, root_hash: 'x', file_hash: 'x' }, frozen_hash: '', sync_utime: 0, state: 'uninitialized' },
      })
    },
  })
})
afterAll(() => node.stop(true))

const owner = new Address(0, Buffer.alloc(32, 7)).toString({ bounceable: false })

test('a balance below zero or past what a coin amount holds is the endpoint failing (503); a real one is read', async () => {
  const client = connectTon({ TON_API_URL: `http://127.0.0.1:${node.port}/api/v2/jsonRPC` })
  for (const wrong of ['-5', (2n ** 120n).toString()]) {
    balance = wrong
    expect(await readTonBalance(client, { chainId: '-239', owner, token: 'native' }).catch((e: unknown) => e), wrong).toBeInstanceOf(UnavailableError)
  }
  balance = (2n ** 120n - 1n).toString()
  expect(await readTonBalance(client, { chainId: '-239', owner, token: 'native' })).toBe(2n ** 120n - 1n)
})
