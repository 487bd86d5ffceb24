/** GET /v2/wallets/activity: an organization's actions for a list of wallets, newest first, paged; and its rejections. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { createOrganization, type NewAction } from '@earn/core'
import { Address as TonAddress } from '@ton/core'
import { getAddress } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createHarness, expectEnvelope, type Harness } from '../harness.ts'

const T0 = Date.UTC(2025, 0, 2, 3, 4, 5)
const OPPORTUNITY = '36c2d744-8ad8-4079-93d2-13c31baa189f'
const TOKEN = '0x5fbdb2315678afecb367f032d93f642f64180aa3'
// Solana: base58 of 32 bytes (the system program's key); TON: the raw form of a basechain account.
const SOLANA_WALLET = '11111111111111111111111111111111'
const TON_WALLET = `0:${'ab'.repeat(32)}`

let h: Harness
const walletA = privateKeyToAccount(generatePrivateKey()).address
const walletB = privateKeyToAccount(generatePrivateKey()).address
let actions: NewAction[]

const action = (over: Partial<NewAction> & Pick<NewAction, 'wallet' | 'createdAt'>): NewAction => ({
  id: randomUUID(),
  orgId: h.org.orgId,
  distributorId: h.distributorId,
  kind: 'deposit',
  ecosystem: 'evm',
  chainId: '31337',
  opportunityId: OPPORTUNITY,
  token: TOKEN,
  amount: '250000000',
  referralCode: null,
  txHash: null,
  ...over,
})

beforeAll(async () => {
  h = await createHarness()
  const a = walletA.toLowerCase()
  actions = [
    action({ wallet: a, createdAt: T0 }),
    action({ wallet: a, createdAt: T0 + 1000, kind: 'verify', txHash: '0x' + 'cd'.repeat(32) }),
    action({ wallet: walletB.toLowerCase(), createdAt: T0 + 2000, kind: 'withdraw', token: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512', amount: '5' }),
    action({ wallet: a, createdAt: T0 + 3000, token: 'native', amount: '1' }),
    action({ wallet: a, createdAt: T0 + 4000 }),
    action({ wallet: SOLANA_WALLET, ecosystem: 'solana', chainId: 'localnet', token: 'native', createdAt: T0 + 5000 }),
    action({ wallet: TON_WALLET, ecosystem: 'ton', chainId: '-239', token: `0:${'cd'.repeat(32)}`, createdAt: T0 + 6000 }),
  ]
  await h.store.insertActions(actions)
})
afterAll(() => h.close())

/** A random TON wallet whose standard-base64 form (with '+' and '/') meets `wanted`, and its raw form. */
function tonAddressWhose(wanted: (standard: string) => boolean): { raw: string; standard: string } {
  for (;;) {
    const raw = `0:${randomUUID().replaceAll('-', '')}${randomUUID().replaceAll('-', '')}`
    const standard = TonAddress.parseRaw(raw).toString({ urlSafe: false, bounceable: true })
    if (wanted(standard)) return { raw, standard }
  }
}

const activity = (query: string, key?: string | null) => h.get(`/v2/wallets/activity?${query}`, key === undefined ? {} : { key })

describe('GET /v2/wallets/activity', () => {
  test('built and verified actions of the listed wallets, newest first, with display forms and ISO times', async () => {
    // Any case on input; a publishable key suffices.
    const r = await activity(`addresses=${walletA.toLowerCase()},${walletB}`, h.org.publishableKey)
    expect(r.status, r.text).toBe(200)
    expect(r.body.pagination).toEqual({ page: 1, limit: 20, total: 5, totalPages: 1, hasNext: false, hasPrevious: false })
    expect(r.body.activities.map((a: { id: string }) => a.id)).toEqual([4, 3, 2, 1, 0].map((i) => actions[i]!.id))
    expect(r.body.activities[0]).toEqual({
      id: actions[4]!.id,
      type: 'deposit',
      walletAddress: walletA,
      walletEcosystem: 'evm',
      distributorId: h.distributorId,
      chainId: '31337',
      opportunityId: OPPORTUNITY,
      token: getAddress(TOKEN),
      amount: '250000000',
      txHash: null,
      createdAt: new Date(T0 + 4000).toISOString(),
    })
    expect(r.body.activities[1]).toMatchObject({ token: 'native', amount: '1' })
    expect(r.body.activities[2]).toMatchObject({ type: 'withdraw', walletAddress: walletB, token: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512' })
    expect(r.body.activities[3]).toMatchObject({ type: 'verify', txHash: '0x' + 'cd'.repeat(32) })
  })

  test('pages: page 2 of 3 has both neighbours, the last has no next', async () => {
    const q = `addresses=${walletA},${walletB}&limit=2`
    const first = await activity(`${q}&page=1`)
    expect(first.body.pagination).toEqual({ page: 1, limit: 2, total: 5, totalPages: 3, hasNext: true, hasPrevious: false })
    const second = await activity(`${q}&page=2`)
    expect(second.body.pagination).toEqual({ page: 2, limit: 2, total: 5, totalPages: 3, hasNext: true, hasPrevious: true })
    expect(second.body.activities.map((a: { id: string }) => a.id)).toEqual([actions[2]!.id, actions[1]!.id])
    const last = await activity(`${q}&page=3`)
    expect(last.body.pagination).toMatchObject({ page: 3, hasNext: false, hasPrevious: true })
    expect(last.body.activities.map((a: { id: string }) => a.id)).toEqual([actions[0]!.id])
    const beyond = await activity(`${q}&page=9`)
    expect(beyond.body).toEqual({ activities: [], pagination: { page: 9, limit: 2, total: 5, totalPages: 3, hasNext: false, hasPrevious: true } })
  })

  test('each address is read by the ecosystem its form belongs to', async () => {
    const r = await activity(`addresses=${SOLANA_WALLET}, ${TON_WALLET.toUpperCase()}`)
    expect(r.status, r.text).toBe(200)
    expect(r.body.activities.map((a: { walletEcosystem: string; chainId: string }) => [a.walletEcosystem, a.chainId])).toEqual([
      ['ton', '-239'],
      ['solana', 'localnet'],
    ])
    expect(r.body.activities[1].walletAddress).toBe(SOLANA_WALLET)
    // TON wallets are shown in their user-friendly form; any form finds them.
    const friendly = TonAddress.parseRaw(TON_WALLET).toString({ bounceable: false })
    expect(r.body.activities[0].walletAddress).toBe(friendly)
    expect(r.body.activities[0].token).toBe(TonAddress.parseRaw(`0:${'cd'.repeat(32)}`).toString({ bounceable: true, urlSafe: true }))
    const byFriendly = await activity(`addresses=${TonAddress.parseRaw(TON_WALLET).toString({ bounceable: true })}`)
    expect(byFriendly.body.activities.map((a: { id: string }) => a.id)).toEqual([actions[6]!.id])
  })

  test("a standard-base64 TON address's '+', sent unencoded (a query string reads it as a space), is read back", async () => {
    const { raw, standard } = tonAddressWhose((a) => a.includes('+'))
    const row = action({ wallet: raw, ecosystem: 'ton', chainId: '-239', token: 'native', createdAt: T0 + 7000 })
    await h.store.insertActions([row])
    const r = await activity(`addresses=${standard}`)
    expect(r.status, r.text).toBe(200)
    expect(r.body.activities.map((a: { id: string }) => a.id)).toEqual([row.id])
    // Its last character a '+' (a re-audit: taken for white space and trimmed), first in a list and alone.
    const { raw: last, standard: lastStandard } = tonAddressWhose((a) => a.endsWith('+'))
    const lastRow = action({ wallet: last, ecosystem: 'ton', chainId: '-239', token: 'native', createdAt: T0 + 8000 })
    await h.store.insertActions([lastRow])
    for (const query of [`addresses=${lastStandard}`, `addresses=${lastStandard},${walletB}`]) {
      const found = await activity(query)
      expect(found.status, found.text).toBe(200)
      expect(found.body.activities.map((a: { id: string }) => a.id)).toContain(lastRow.id)
    }
  })

  test("another organization sees none of this organization's activity", async () => {
    const other = await createOrganization({ store: h.store, clock: h.deps.clock }, { name: 'Other org' })
    const r = await activity(`addresses=${walletA},${walletB}`, other.publishableKey)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ activities: [], pagination: { page: 1, limit: 20, total: 0, totalPages: 0, hasNext: false, hasPrevious: false } })
  })
})

describe('GET /v2/wallets/activity rejections', () => {
  test('no key is 401', async () => {
    const r = await activity(`addresses=${walletA}`, null)
    expect(r.status).toBe(401)
    expectEnvelope(r.body, 401, 'UNAUTHORIZED')
  })

  test('addresses missing or empty is 400 naming it', async () => {
    for (const q of ['', 'addresses=']) {
      const r = await activity(q)
      expect(r.status, q).toBe(400)
      expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
      expect(Object.keys(r.body.context)).toContain('addresses')
    }
  })

  test('an address no ecosystem accepts is 400 naming its index', async () => {
    for (const [q, field] of [
      [`addresses=${walletA},0x1234`, 'addresses[1]'],
      [`addresses=${walletA},,${walletB}`, 'addresses[1]'],
      ['addresses=not-an-address', 'addresses[0]'],
    ] as const) {
      const r = await activity(q)
      expect(r.status, q).toBe(400)
      expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
      expect(r.body.context).toEqual({ [field]: expect.stringContaining('not an address') })
      expect(r.body.error).toContain(field)
    }
  })

  test('an EIP-55 checksum typo is named as one, in activity and the portfolio alike', async () => {
    const good = getAddress('0x' + 'ab'.repeat(20))
    // Flip the case of one letter: still mixed case, so the checksum must hold, and it does not.
    const at = good.search(/[a-fA-F]/)
    const typo = good.slice(0, at) + (good[at] === good[at]!.toLowerCase() ? good[at]!.toUpperCase() : good[at]!.toLowerCase()) + good.slice(at + 1)
    const r = await activity(`addresses=${typo}`)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(r.body.context['addresses[0]']).toMatch(/^not an address of evm \(.*checksum.*\)/i)
    const p = await h.get(`/v2/wallet/${typo}/portfolio`)
    expectEnvelope(p.body, 400, 'INVALID_ARGUMENT')
    expect(JSON.stringify(p.body.context)).toMatch(/checksum/i)
  })

  test('more than 1000 addresses is 400; exactly 1000 is fine', async () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => `0x${i.toString(16).padStart(40, '0')}`).join(',')
    const ok = await activity(`addresses=${many(1000)}`)
    expect(ok.status, ok.text).toBe(200)
    const r = await activity(`addresses=${many(1001)}`)
    expect(r.status).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(r.body.context).toEqual({ addresses: 'at most 1000 addresses' })
  })

  test('limit outside 1..100, and page below 1 or not a number, are 400 naming the parameter', async () => {
    for (const [q, field] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=-5', 'limit'],
      ['page=0', 'page'],
      ['page=1.5', 'page'],
    ] as const) {
      const r = await activity(`addresses=${walletA}&${q}`)
      expect(r.status, q).toBe(400)
      expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
      expect(Object.keys(r.body.context)).toEqual([field])
    }
    expect((await activity(`addresses=${walletA}&limit=100`)).status).toBe(200)
  })
})
