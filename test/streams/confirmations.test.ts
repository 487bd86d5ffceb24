/**
 * With `EVM_CONFIRMATIONS`, a stream's funding counts only once its block is that deep: a reorganisation can drop
 * a block the moment after it is mined, and a stream confirmed on it would run unpaid. Until then confirm is the
 * 400 of a transaction not mined yet, saying how far it is; verify likewise answers 404.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { expectEnvelope } from '../harness.ts'
import { startStreamsEnv, type StreamsEnv } from './setup.ts'

setDefaultTimeout(60_000)

let env: StreamsEnv
beforeAll(async () => {
  env = await startStreamsEnv({ confirmations: 3 })
})
afterAll(() => env.stop())

test('a funding transfer one block deep is 400 retry, saying how many blocks are left; three deep, it confirms', async () => {
  const creator = await env.creator(10_000_000n)
  const created = await env.h.post('/v2/streams', env.tokenBody(creator))
  expect(created.status, created.text).toBe(200)
  const id = created.body.stream.id
  const hash = await env.send(creator, created.body.transactions[0].transaction)
  const block = (await env.chain.anvil.publicClient.getTransactionReceipt({ hash: hash as `0x${string}` })).blockNumber

  const early = await env.h.post(`/v2/streams/${id}/confirm`, { txHash: hash })
  expectEnvelope(early.body, 400, 'INVALID_ARGUMENT')
  expect(early.body.context).toEqual({ txHash: `mined in block ${block}, 1 of 3 confirmations so far; retry after 2 more block(s)` })
  expect((await env.h.get(`/v2/streams/${id}`)).body.stream.state).toBe('pending')
  const verify = await env.h.get(`/v2/actions/verify?chainId=${env.chain.anvil.chainId}&txHash=${hash}`)
  expectEnvelope(verify.body, 404, 'NOT_FOUND')

  await env.chain.anvil.testClient.mine({ blocks: 2 })
  const later = await env.h.post(`/v2/streams/${id}/confirm`, { txHash: hash })
  expect(later.status, later.text).toBe(200)
  expect(later.body.stream.state).toBe('active')
})
