/**
 * Idempotency-Key on the builds, end to end on anvil: a build sent again with its key is answered as the first time
 * (no second action; the replayed transactions mine), another request under the same key is refused, a refusal keeps
 * nothing, two at once have one run, keys are the organization's, and a bad key is the envelope.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { createDistributor, createOrganization, importCatalog, issueKey } from '@earn/core'
import { randomUUID } from 'node:crypto'
import { erc20Abi, type Address } from 'viem'
import type { PrivateKeyAccount } from 'viem/accounts'
import { mintToken, sendUnsigned } from '../chains/evm.ts'
import { createHarness, expectEnvelope, type Harness, type Json } from '../harness.ts'
import { localCatalog, startLocalChain, type LocalChain } from './localChain.ts'
import { fundedMember } from './members.ts'
import { fileStore } from './records.ts'

setDefaultTimeout(60_000)

let chain: LocalChain
let h: Harness
let wallet: PrivateKeyAccount
const db = fileStore()

beforeAll(async () => {
  chain = await startLocalChain()
  h = await createHarness({ store: db.store, clients: { evm: chain.evmClient() } })
  const imported = await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, localCatalog())
  expect(imported.opportunities.map((o) => o.chainFacts)).toEqual(['read', 'read'])
  wallet = await fundedMember(h, chain, 1_000n * 10n ** 6n)
})
afterAll(async () => {
  await h.close()
  await chain.anvil.stop()
  db.cleanup()
})

const body = (amount: bigint, over: Json = {}) => ({ userAddress: wallet.address, tokenIn: chain.token, amount: amount.toString(), distributorId: h.distributorId, ...over })
const deposit = (key: string | undefined, b: Json, init: { key?: string } = {}) =>
  h.post(`/v2/actions/deposit/${chain.directId}`, b, { ...init, headers: key === undefined ? {} : { 'idempotency-key': key } })
const actionsOf = (address: Address) => db.actions('wallet = ?', address.toLowerCase())
const shares = (owner: Address) => chain.anvil.publicClient.readContract({ address: chain.vault, abi: erc20Abi, functionName: 'balanceOf', args: [owner] })

describe('a build sent again with its Idempotency-Key', () => {
  test('is answered as the first time, marked replayed, one action recorded; the replayed transactions mine', async () => {
    const key = randomUUID()
    const before = actionsOf(wallet.address).length
    const first = await deposit(key, body(10n * 10n ** 6n))
    expect(first.status, first.text).toBe(200)
    expect(first.headers.get('idempotent-replayed')).toBeNull()
    // Fields in another order: the same request.
    const again = await deposit(key, { amount: '10000000', distributorId: h.distributorId, tokenIn: chain.token, userAddress: wallet.address })
    expect(again.status, again.text).toBe(200)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(again.body).toEqual(first.body)
    // Metered like any request.
    expect(Number(again.headers.get('x-ratelimit-used'))).toBeGreaterThan(Number(first.headers.get('x-ratelimit-used')))
    expect(actionsOf(wallet.address).length).toBe(before + 1)
    expect(actionsOf(wallet.address).some((a) => a.id === first.body.actionId)).toBe(true)

    const held = await shares(wallet.address)
    for (const t of again.body.transactions as Json[]) expect((await sendUnsigned(chain.anvil, wallet, t.transaction)).status).toBe('success')
    expect(await shares(wallet.address)).toBeGreaterThan(held)
    // Without a key, the same body builds anew.
    const plain = await deposit(undefined, body(10n * 10n ** 6n))
    expect(plain.status).toBe(200)
    expect(plain.body.actionId).not.toBe(first.body.actionId)
  })

  test('with another amount, or for another operation, is refused with the envelope; nothing is recorded', async () => {
    const key = randomUUID()
    expect((await deposit(key, body(1n * 10n ** 6n))).status).toBe(200)
    const before = actionsOf(wallet.address).length
    const other = await deposit(key, body(2n * 10n ** 6n))
    expect(other.status, other.text).toBe(400)
    expectEnvelope(other.body, 400, 'INVALID_ARGUMENT')
    expect(other.body.error).toMatch(/Idempotency-Key was used .* for another request/)
    expect(other.body.context).toEqual({ 'Idempotency-Key': 'used for another request' })
    const withdraw = await h.post(`/v2/actions/withdraw/${chain.directId}`, { userAddress: wallet.address, amount: '1', distributorId: h.distributorId }, { headers: { 'idempotency-key': key } })
    expect(withdraw.status, withdraw.text).toBe(400)
    expect(withdraw.body.context).toEqual({ 'Idempotency-Key': 'used for another request' })
    const swap = await h.post(`/v2/actions/deposit/${chain.swapId}`, body(1n * 10n ** 6n, { mode: 'swap' }), { headers: { 'idempotency-key': key } })
    expect(swap.status, swap.text).toBe(400)
    expect(actionsOf(wallet.address).length).toBe(before)
  })

  test('after a refusal the key is free: the request sent again, once the wallet holds enough, builds', async () => {
    const poor = await fundedMember(h, chain, 0n)
    const key = randomUUID()
    const b = { userAddress: poor.address, tokenIn: chain.token, amount: '5000000', distributorId: h.distributorId }
    const short = await deposit(key, b)
    expect(short.status, short.text).toBe(400)
    expect(short.body.error).toBe('insufficient token balance')
    await mintToken(chain.anvil, chain.token, poor.address, 5_000_000n)
    const built = await deposit(key, b)
    expect(built.status, built.text).toBe(200)
    expect(built.headers.get('idempotent-replayed')).toBeNull()
    expect(actionsOf(poor.address).map((a) => a.id)).toEqual([built.body.actionId])
  })

  test('two at once: one runs, the other is 409 with Retry-After, and sent again gets the first answer', async () => {
    const key = randomUUID()
    const before = actionsOf(wallet.address).length
    const [a, b] = await Promise.all([deposit(key, body(3n * 10n ** 6n)), deposit(key, body(3n * 10n ** 6n))])
    const answers = [a!, b!].sort((x, y) => x.status - y.status)
    expect(answers.map((r) => r.status)).toEqual([200, 409])
    const [ok, busy] = answers as [typeof a, typeof a]
    expectEnvelope(busy.body, 409, 'CONFLICT')
    expect(busy.body.context).toEqual({ 'Idempotency-Key': 'in use by a request under way' })
    // A second, not the minute the key may be held: the answer is there well before.
    expect(busy.headers.get('retry-after')).toBe('1')
    expect(busy.body.error).toMatch(/still being answered; send it again in 1 s for its answer \(the key is held at most \d+ s more\)/)
    const later = await deposit(key, body(3n * 10n ** 6n))
    expect(later.headers.get('idempotent-replayed')).toBe('true')
    expect(later.body.actionId).toBe(ok.body.actionId)
    expect(actionsOf(wallet.address).length).toBe(before + 1)
  })

  test("keys are the organization's: any of its API keys replays; another organization's same key is its own", async () => {
    const key = randomUUID()
    const first = await deposit(key, body(10n ** 6n))
    expect(first.status).toBe(200)
    const second = await issueKey({ store: h.store, clock: h.deps.clock }, h.org.orgId, 'secret')
    const replayed = await deposit(key, body(10n ** 6n), { key: second.key })
    expect(replayed.status, replayed.text).toBe(200)
    expect(replayed.headers.get('idempotent-replayed')).toBe('true')
    expect(replayed.body.actionId).toBe(first.body.actionId)

    const other = await createOrganization({ store: h.store, clock: h.deps.clock }, { name: 'Idempotent neighbour' })
    const { distributorId } = await createDistributor({ store: h.store, clock: h.deps.clock }, { orgId: other.orgId, name: 'Neighbour' })
    const theirs = await deposit(key, body(10n ** 6n, { distributorId }), { key: other.secretKey })
    expect(theirs.status, theirs.text).toBe(200)
    expect(theirs.headers.get('idempotent-replayed')).toBeNull()
    expect(theirs.body.actionId).not.toBe(first.body.actionId)
  })

  test('a key that is empty, too long, not visible ASCII or sent twice is refused with the envelope, before anything is built', async () => {
    const before = actionsOf(wallet.address).length
    for (const [key, problem] of [
      ['', 'is empty'],
      ['k'.repeat(256), 'is 256 characters'],
      ['caf\u00e9', 'has a character other than visible ASCII'],
      // The header sent twice arrives as its values joined (Fetch's Headers): not one key.
      ['k-a, k-b', 'has a comma (or the header was sent twice)'],
      ['k-a, k-a', 'has a comma (or the header was sent twice)'],
    ] as const) {
      const r = await deposit(key, body(10n ** 6n))
      expect(r.status, `${JSON.stringify(key.slice(0, 8))}: ${r.text}`).toBe(400)
      expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
      expect(r.body.context).toEqual({ 'Idempotency-Key': problem })
      expect(r.body.error).toContain('Idempotency-Key must be one value of 1 to 255 visible ASCII characters but the comma, spaces inside allowed')
    }
    // The longest, with spaces inside, is a key.
    expect((await deposit(`a ${'k'.repeat(251)} z`, body(10n ** 6n))).status).toBe(200)
    expect(actionsOf(wallet.address).length).toBe(before + 1)
  })
})
