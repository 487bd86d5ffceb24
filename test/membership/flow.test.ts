/**
 * The membership flow and every membership row of the spec's error table, through HTTP, with real
 * EVM key pairs (EOAs verify offline) and a clock the test moves.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createDistributor, createOrganization, manualClock } from '@earn/core'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { parseSiweMessage } from 'viem/siwe'
import { createHarness, expectEnvelope, type Harness } from '../harness.ts'

const clock = manualClock(Date.UTC(2026, 10, 21, 12, 0, 0))
let h: Harness
beforeAll(async () => {
  h = await createHarness({ clock, env: { NONCE_TTL_SECONDS: '120' } })
})
afterAll(() => h.close())

const newWallet = () => privateKeyToAccount(generatePrivateKey())

async function agreement(address: string, extra: Record<string, unknown> = {}) {
  const r = await h.post('/v2/membership/agreement', { address, walletEcosystem: 'evm', url: 'https://app.example.com/earn', ...extra })
  expect(r.status).toBe(200)
  return r.body as { nonce: string; message: string }
}

describe('membership flow', () => {
  test('check, agreement, create: an EOA becomes a member', async () => {
    const wallet = newWallet()
    expect((await h.get(`/v2/membership/?address=${wallet.address}`)).body).toEqual({ isMember: false })
    const { nonce, message } = await agreement(wallet.address)
    expect(nonce).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(message).toStartWith('app.example.com wants you to sign in with your Ethereum account:\n' + wallet.address + '\n')
    expect(message).toContain('URI: https://app.example.com/earn')
    expect(message).toContain('Chain ID: 1\n')
    expect(message).toContain(`Nonce: ${nonce.replaceAll('-', '')}`)
    expect(message).toContain(`Issued At: ${new Date(clock.now()).toISOString()}`)
    expect(message).toContain(`Expiration Time: ${new Date(clock.now() + 120_000).toISOString()}`)
    const signature = await wallet.signMessage({ message })
    const created = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature, nonce, distributorId: h.distributorId })
    expect(created.status).toBe(200)
    expect(created.body).toEqual({ isMember: true, error: '' })
    expect((await h.get(`/v2/membership/?address=${wallet.address}&walletEcosystem=evm`)).body).toEqual({ isMember: true })
    expect((await h.store.getMember('evm', wallet.address.toLowerCase()))?.distributorId).toBe(h.distributorId)
  })

  test('the url is signed as the URL parser writes it: an international name in punycode, in the domain and the URI alike', async () => {
    const wallet = newWallet()
    const { nonce, message } = await agreement(wallet.address, { url: 'https://exämple.com/earn?x=ü' })
    expect(message).toStartWith('xn--exmple-cua.com wants you to sign in with your Ethereum account:\n')
    expect(message).toContain('URI: https://xn--exmple-cua.com/earn?x=%C3%BC\n')
    const created = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature: await wallet.signMessage({ message }), nonce })
    expect(created.body).toEqual({ isMember: true, error: '' })
  })

  test('the same signed body sent several times at once: one 200, the others 409 (a member), not "sign a new agreement"', async () => {
    const wallet = newWallet()
    const { nonce, message } = await agreement(wallet.address)
    const body = { address: wallet.address, walletEcosystem: 'evm', signature: await wallet.signMessage({ message }), nonce }
    const answers = await Promise.all(Array.from({ length: 6 }, () => h.post('/v2/membership/', body)))
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409])
    for (const r of answers.filter((a) => a.status === 409)) expect(r.body.context).toEqual({ address: expect.any(String) })
  })

  test('the nonce is a UUID in either case: one sent back in capitals is the same nonce', async () => {
    const wallet = newWallet()
    const { nonce, message } = await agreement(wallet.address)
    const created = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature: await wallet.signMessage({ message }), nonce: nonce.toUpperCase() })
    expect(created.body).toEqual({ isMember: true, error: '' })
    expect((await h.store.getNonce(nonce))?.consumedAt).not.toBeNull()
  })

  test("the nonce as the signed message writes it (no dashes), read back with viem's parseSiweMessage, is the same nonce", async () => {
    const wallet = newWallet()
    const { nonce, message } = await agreement(wallet.address)
    const fromMessage = parseSiweMessage(message).nonce!
    expect(fromMessage).toBe(nonce.replaceAll('-', ''))
    const created = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature: await wallet.signMessage({ message }), nonce: fromMessage })
    expect(created.body).toEqual({ isMember: true, error: '' })
    expect((await h.store.getNonce(nonce))?.consumedAt).not.toBeNull()
  })

  test('a Solana or TON agreement names no chain unless asked, and records none', async () => {
    const solana = await h.post('/v2/membership/agreement', { address: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM', walletEcosystem: 'solana', url: 'https://app.example.com' })
    expect(solana.status, solana.text).toBe(200)
    expect((await h.store.getNonce(solana.body.nonce))?.chainId).toBeNull()
    const named = await h.post('/v2/membership/agreement', { address: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM', walletEcosystem: 'solana', url: 'https://app.example.com', chainId: 'mainnet' })
    expect((await h.store.getNonce(named.body.nonce))?.chainId).toBe('mainnet')
  })

  test('one wallet is one membership whatever the case of its address', async () => {
    const wallet = newWallet()
    const lower = wallet.address.toLowerCase()
    const upper = '0x' + wallet.address.slice(2).toUpperCase()
    const { nonce, message } = await agreement(lower)
    expect(message).toContain(wallet.address) // EIP-55 in the message
    await h.post('/v2/membership/', { address: lower, walletEcosystem: 'evm', signature: await wallet.signMessage({ message }), nonce })
    for (const form of [wallet.address, upper, lower]) expect((await h.get(`/v2/membership/?address=${form}`)).body.isMember).toBe(true)
    const again = await agreement(upper)
    const r = await h.post('/v2/membership/', { address: upper, walletEcosystem: 'evm', signature: await wallet.signMessage({ message: again.message }), nonce: again.nonce })
    expect(r.status).toBe(409)
    expectEnvelope(r.body, 409, 'CONFLICT')
  })

  test('agreement chainId defaults to 1 and is validated; url must be http(s)', async () => {
    const wallet = newWallet()
    expect((await agreement(wallet.address, { chainId: '8453' })).message).toContain('Chain ID: 8453\n')
    expect((await h.store.getNonce((await agreement(wallet.address)).nonce))?.chainId).toBe('1')
    for (const [field, body] of [
      ['chainId', { chainId: 'mainnet' }],
      ['url', { url: 'not a url' }],
      ['url', { url: 'ftp://app.example.com' }],
    ] as const) {
      const r = await h.post('/v2/membership/agreement', { address: wallet.address, walletEcosystem: 'evm', url: 'https://app.example.com', ...body })
      expect(r.status).toBe(400)
      expect(r.body.context).toHaveProperty(field)
      // How the ecosystem writes its chain ids.
      if (field === 'chainId') expect(r.body.error).toBe('chainId "mainnet" is not a chain of the evm ecosystem (write a decimal EIP-155 chain id, such as 1 or 8453)')
    }
    // The URL as signed and stored is percent-encoded: past 2,048 characters so, it is refused, whatever it was sent as.
    const long = await h.post('/v2/membership/agreement', { address: wallet.address, walletEcosystem: 'evm', url: `https://app.example.com/${'€'.repeat(2000)}` })
    expect(long.status).toBe(400)
    expect(long.body.context.url).toBe(`it is ${'https://app.example.com/'.length + 9 * 2000} characters once percent-encoded (as it is signed), more than 2048`)
    const ascii = await h.post('/v2/membership/agreement', { address: wallet.address, walletEcosystem: 'evm', url: `https://app.example.com/${'a'.repeat(2000)}` })
    expect(ascii.status, ascii.text).toBe(200)
    // A client's value is shown escaped: a line break or a bidi override would forge a log line or reverse the text.
    const odd = await h.post('/v2/membership/agreement', { address: wallet.address, walletEcosystem: 'evm', url: 'https://app.example.com', chainId: '\u202e1\n2' })
    expect(odd.status).toBe(400)
    expect(odd.body.error).toStartWith('chainId "\\u202e1\\u000a2" is not a chain of the evm ecosystem')
    const solana = await h.post('/v2/membership/agreement', { address: '11111111111111111111111111111111', walletEcosystem: 'solana', url: 'https://app.example.com', chainId: 'mainnet-beta' })
    expect(solana.status).toBe(400)
    expect(solana.body.error).toBe('chainId "mainnet-beta" is not a chain of the solana ecosystem (write mainnet, devnet, testnet, localnet, or solana: and the genesis hash (CAIP-2))')
  })
})

describe('membership errors, in the order DECISIONS.md rules', () => {
  test('400: missing required fields, named in context', async () => {
    const r = await h.post('/v2/membership/', { walletEcosystem: 'evm' })
    expect(r.status).toBe(400)
    expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
    expect(Object.keys(r.body.context).sort()).toEqual(['address', 'nonce', 'signature'])
  })

  test('400: an unsupported walletEcosystem', async () => {
    const r = await h.post('/v2/membership/', { address: newWallet().address, walletEcosystem: 'cosmos', signature: '0x', nonce: 'x' })
    expect(r.status).toBe(400)
    expect(r.body.context).toHaveProperty('walletEcosystem')
    const check = await h.get(`/v2/membership/?address=abc&walletEcosystem=cosmos`)
    expect(check.status).toBe(400)
  })

  test('400: a known ecosystem this deployment did not load is refused like an unknown one', async () => {
    const evmOnly = await createHarness({ env: { ECOSYSTEMS: 'evm' } })
    const r = await evmOnly.post('/v2/membership/agreement', { address: '11111111111111111111111111111111', walletEcosystem: 'solana', url: 'https://a.example' })
    expect(r.status).toBe(400)
    expect(r.body.error).toContain('unsupported walletEcosystem "solana"')
    await evmOnly.close()
  })

  test('400: an address invalid for the ecosystem', async () => {
    for (const address of ['0x123', 'vitalik.eth', '0x' + 'g'.repeat(40), '0xAbCdEf0000000000000000000000000000000000']) {
      const r = await h.post('/v2/membership/agreement', { address, walletEcosystem: 'evm', url: 'https://app.example.com' })
      expect(r.status).toBe(400)
      expect(r.body.context).toHaveProperty('address')
    }
  })

  test('409 comes before the distributor and nonce checks', async () => {
    const wallet = newWallet()
    const { nonce, message } = await agreement(wallet.address)
    await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature: await wallet.signMessage({ message }), nonce })
    const r = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature: '0x00', nonce: 'gone', distributorId: 'nope' })
    expect(r.status).toBe(409)
  })

  test("404: an unknown distributor, and another organization's distributor", async () => {
    const wallet = newWallet()
    const { nonce, message } = await agreement(wallet.address)
    const signature = await wallet.signMessage({ message })
    const unknown = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature, nonce, distributorId: '00000000-0000-4000-8000-000000000000' })
    expect(unknown.status).toBe(404)
    expectEnvelope(unknown.body, 404, 'NOT_FOUND')
    expect(unknown.body.context).toHaveProperty('distributorId')
    const other = await createOrganization(h.deps, { name: 'Other' })
    const { distributorId } = await createDistributor(h.deps, { orgId: other.orgId })
    const foreign = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature, nonce, distributorId })
    expect(foreign.status).toBe(404)
    // Neither attempt used the nonce.
    expect((await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature, nonce })).status).toBe(200)
  })

  test('400: an unknown nonce, and a nonce issued to another wallet', async () => {
    const wallet = newWallet()
    const unknown = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature: '0x00', nonce: crypto.randomUUID() })
    expect(unknown.status).toBe(400)
    expect(unknown.body.context).toEqual({ nonce: 'unknown' })
    const victim = newWallet()
    const issued = await agreement(victim.address)
    const stolen = await h.post('/v2/membership/', {
      address: wallet.address,
      walletEcosystem: 'evm',
      signature: await wallet.signMessage({ message: issued.message }),
      nonce: issued.nonce,
    })
    expect(stolen.status).toBe(400)
    expect(stolen.body.context).toEqual({ nonce: 'other_wallet' })
  })

  test("400: another organization's nonce is unknown to this one, and stays usable by its own", async () => {
    const wallet = newWallet()
    const { nonce, message } = await agreement(wallet.address)
    const signature = await wallet.signMessage({ message })
    const other = await createOrganization(h.deps, { name: 'Taker' })
    const taken = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature, nonce }, { key: other.secretKey })
    expect(taken.status).toBe(400)
    expectEnvelope(taken.body, 400, 'INVALID_ARGUMENT')
    expect(taken.body.context).toEqual({ nonce: 'unknown' })
    expect((await h.store.getMember('evm', wallet.address.toLowerCase()))).toBeUndefined()
    const own = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature, nonce, distributorId: h.distributorId })
    expect(own.body).toEqual({ isMember: true, error: '' })
    expect((await h.store.getMember('evm', wallet.address.toLowerCase()))?.orgId).toBe(h.org.orgId)
  })

  test('expired nonces are deleted by later agreements a day after they expire; until then they answer "expired"', async () => {
    const stale = await agreement(newWallet().address)
    clock.advance(120_000 + 24 * 3_600_000 - 1_000)
    const recent = await agreement(newWallet().address)
    expect(await h.store.getNonce(stale.nonce)).toBeDefined()
    clock.advance(2_000)
    await agreement(newWallet().address)
    expect(await h.store.getNonce(stale.nonce)).toBeUndefined()
    expect(await h.store.getNonce(recent.nonce)).toBeDefined()
  })

  test('400: an expired nonce, after NONCE_TTL_SECONDS', async () => {
    const wallet = newWallet()
    const { nonce, message } = await agreement(wallet.address)
    const signature = await wallet.signMessage({ message })
    clock.advance(120_000)
    const r = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature, nonce })
    expect(r.status).toBe(400)
    expect(r.body.context).toEqual({ nonce: 'expired' })
    expect(r.body.error).toContain('request a new agreement')
  })

  test('400: a bad signature leaves the nonce usable until it expires', async () => {
    const wallet = newWallet()
    const { nonce, message } = await agreement(wallet.address)
    const attempts = [
      await newWallet().signMessage({ message }), // another key
      await wallet.signMessage({ message: message.replace('Chain ID: 1', 'Chain ID: 2') }), // another message
      '0x1234', // garbage
      'not hex at all',
    ]
    for (const signature of attempts) {
      const r = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature, nonce })
      expect(r.status).toBe(400)
      expectEnvelope(r.body, 400, 'INVALID_ARGUMENT')
      expect(r.body.context).toHaveProperty('signature')
    }
    const ok = await h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature: await wallet.signMessage({ message }), nonce })
    expect(ok.body).toEqual({ isMember: true, error: '' })
  })

  test('concurrent creates with one nonce in one process: exactly one member', async () => {
    const wallet = newWallet()
    const { nonce, message } = await agreement(wallet.address)
    const signature = await wallet.signMessage({ message })
    const results = await Promise.all(
      Array.from({ length: 20 }, () => h.post('/v2/membership/', { address: wallet.address, walletEcosystem: 'evm', signature, nonce })),
    )
    expect(results.filter((r) => r.status === 200)).toHaveLength(1)
    for (const r of results.filter((r) => r.status !== 200)) expect([400, 409]).toContain(r.status)
  })
})
