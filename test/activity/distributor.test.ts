/**
 * GET /v2/distributors/{distributorId}/activity: the distributor's actions and the wallets that signed up through it
 * (registered with the HTTP membership flow), merged newest first and paged; other organizations' distributors are 404.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { createDistributor, createOrganization, manualClock, type NewAction } from '@earn/core'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { createHarness, expectEnvelope, type Harness } from '../harness.ts'

const T0 = Date.UTC(2025, 5, 1)
const OPPORTUNITY = '36c2d744-8ad8-4079-93d2-13c31baa189f'
const OTHER_OPPORTUNITY = 'a52e01aa-6e64-4a8a-8a85-4191c2a9de27'

const clock = manualClock(T0)
let h: Harness
const [alice, bob, carol] = [generatePrivateKey(), generatePrivateKey(), generatePrivateKey()].map((key) => privateKeyToAccount(key)) as [
  PrivateKeyAccount,
  PrivateKeyAccount,
  PrivateKeyAccount,
]
let actions: NewAction[]

async function signUp(wallet: PrivateKeyAccount, distributorId?: string) {
  const agreement = await h.post('/v2/membership/agreement', { address: wallet.address, walletEcosystem: 'evm', url: 'https://wallet.example.com' })
  expect(agreement.status).toBe(200)
  const signature = await wallet.signMessage({ message: agreement.body.message })
  const created = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature, nonce: agreement.body.nonce, distributorId })
  expect(created.body).toEqual({ isMember: true, error: '' })
}

const action = (over: Partial<NewAction> & Pick<NewAction, 'wallet' | 'createdAt'>): NewAction => ({
  id: randomUUID(),
  orgId: h.org.orgId,
  distributorId: h.distributorId,
  kind: 'deposit',
  ecosystem: 'evm',
  chainId: '31337',
  opportunityId: OPPORTUNITY,
  token: '0x5fbdb2315678afecb367f032d93f642f64180aa3',
  amount: '1000000',
  referralCode: null,
  txHash: null,
  ...over,
})

beforeAll(async () => {
  h = await createHarness({ clock })
  // t+1s alice signs up, t+2s she deposits, t+3s bob signs up, t+4s bob deposits elsewhere, t+5s alice's deposit verifies.
  clock.set(T0 + 1000)
  await signUp(alice, h.distributorId)
  clock.set(T0 + 3000)
  // A UUID reads the same in either case: bob's signup, naming the distributor in capitals, is still its own.
  await signUp(bob, h.distributorId.toUpperCase())
  // A signup without a distributor is nobody's.
  await signUp(carol)
  actions = [
    action({ wallet: alice.address.toLowerCase(), createdAt: T0 + 2000 }),
    action({ wallet: bob.address.toLowerCase(), createdAt: T0 + 4000, opportunityId: OTHER_OPPORTUNITY }),
    action({ wallet: alice.address.toLowerCase(), createdAt: T0 + 5000, kind: 'verify', txHash: '0x' + 'ef'.repeat(32) }),
  ]
  await h.store.insertActions(actions)
})
afterAll(() => h.close())

const activity = (distributorId: string, query = '', key?: string | null) =>
  h.get(`/v2/distributors/${distributorId}/activity${query ? `?${query}` : ''}`, key === undefined ? {} : { key })

describe('GET /v2/distributors/{distributorId}/activity', () => {
  test('actions and signups merged, newest first (publishable key)', async () => {
    const r = await activity(h.distributorId, '', h.org.publishableKey)
    expect(r.status, r.text).toBe(200)
    expect((await activity(h.distributorId.toUpperCase(), '', h.org.publishableKey)).body).toEqual(r.body)
    expect(r.body.pagination).toEqual({ page: 1, limit: 20, total: 5, totalPages: 1, hasNext: false, hasPrevious: false })
    expect(r.body.activities.map((a: { type: string; walletAddress: string }) => [a.type, a.walletAddress])).toEqual([
      ['verify', alice.address],
      ['deposit', bob.address],
      ['signup', bob.address],
      ['deposit', alice.address],
      ['signup', alice.address],
    ])
    expect(r.body.activities[2]).toEqual({
      id: `signup:evm:${bob.address.toLowerCase()}`,
      type: 'signup',
      walletAddress: bob.address,
      walletEcosystem: 'evm',
      distributorId: h.distributorId,
      chainId: '1',
      createdAt: new Date(T0 + 3000).toISOString(),
    })
    expect(r.body.activities[0]).toMatchObject({ id: actions[2]!.id, opportunityId: OPPORTUNITY, txHash: '0x' + 'ef'.repeat(32) })
  })

  test('pages cut across both sources', async () => {
    const second = await activity(h.distributorId, 'page=2&limit=2')
    expect(second.status).toBe(200)
    expect(second.body.pagination).toEqual({ page: 2, limit: 2, total: 5, totalPages: 3, hasNext: true, hasPrevious: true })
    expect(second.body.activities.map((a: { type: string }) => a.type)).toEqual(['signup', 'deposit'])
    const third = await activity(h.distributorId, 'page=3&limit=2')
    expect(third.body.pagination).toMatchObject({ hasNext: false, hasPrevious: true })
    expect(third.body.activities.map((a: { type: string; walletAddress: string }) => [a.type, a.walletAddress])).toEqual([['signup', alice.address]])
  })

  test("opportunityId keeps that opportunity's actions, without signups; an unknown one is an empty page", async () => {
    const r = await activity(h.distributorId, `opportunityId=${OPPORTUNITY.toUpperCase()}`)
    expect(r.status, r.text).toBe(200)
    expect(r.body.activities.map((a: { id: string }) => a.id)).toEqual([actions[2]!.id, actions[0]!.id])
    expect(r.body.pagination.total).toBe(2)
    const none = await activity(h.distributorId, `opportunityId=${randomUUID()}`)
    expect(none.body).toEqual({ activities: [], pagination: { page: 1, limit: 20, total: 0, totalPages: 0, hasNext: false, hasPrevious: false } })
  })

  test("another distributor of the same organization has its own (empty) activity", async () => {
    const { distributorId } = await createDistributor({ store: h.store, clock }, { orgId: h.org.orgId, name: 'Second' })
    const r = await activity(distributorId)
    expect(r.status).toBe(200)
    expect(r.body.pagination.total).toBe(0)
  })
})

describe('GET /v2/distributors/{distributorId}/activity rejections', () => {
  test("another organization's distributor is 404, as is an unknown one, and the owner's is 404 to the other organization", async () => {
    const other = await createOrganization({ store: h.store, clock }, { name: 'Other org' })
    const { distributorId: theirs } = await createDistributor({ store: h.store, clock }, { orgId: other.orgId, name: 'Theirs' })
    for (const [id, key] of [
      [theirs, h.org.secretKey],
      [randomUUID(), h.org.secretKey],
      [h.distributorId, other.publishableKey],
    ] as const) {
      const r = await activity(id, '', key)
      expect(r.status).toBe(404)
      expectEnvelope(r.body, 404, 'NOT_FOUND')
      expect(r.body.context).toEqual({ distributorId: 'unknown distributor' })
    }
    expect((await activity(theirs, '', other.publishableKey)).status).toBe(200)
  })

  test('no key is 401; bad limit, page or opportunityId is 400 naming it', async () => {
    const none = await activity(h.distributorId, '', null)
    expect(none.status).toBe(401)
    expectEnvelope(none.body, 401, 'UNAUTHORIZED')
    for (const [q, field] of [
      ['limit=0', 'limit'],
      ['limit=1000', 'limit'],
      ['page=x', 'page'],
      ['opportunityId=not-a-uuid', 'opportunityId'],
    ] as const) {
      const r = await activity(h.distributorId, q)
      expect(r.status, q).toBe(400)
      expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
      expect(Object.keys(r.body.context)).toEqual([field])
    }
  })
})
