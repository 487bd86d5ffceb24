/** TON wallets register through the HTTP flow with real key pairs and the TVM sandbox. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { keyPairFromSeed } from '@ton/crypto'
import { randomBytes } from 'node:crypto'
import { createHarness, expectEnvelope, type Harness } from '../harness.ts'
import { signTonProof, startTon, type TonSandbox, tonWallet } from '../chains/ton.ts'

let chain: TonSandbox
let h: Harness
beforeAll(async () => {
  chain = await startTon()
  h = await createHarness({ clients: { ton: chain.client } })
})
afterAll(() => h.close())

const newKeyPair = () => keyPairFromSeed(randomBytes(32))

async function agreement(address: string) {
  const r = await h.post('/v2/membership/agreement', { address, walletEcosystem: 'ton', url: 'https://app.example.com/earn' }, { key: h.org.publishableKey })
  expect(r.status).toBe(200)
  return r.body as { nonce: string; message: string }
}

describe('TON membership over HTTP', () => {
  for (const version of ['v4r2', 'v5r1'] as const) {
    test(`a ${version} wallet registers with its stateInit, in any address form`, async () => {
      const keyPair = newKeyPair()
      const wallet = tonWallet(version, keyPair.publicKey)
      const friendly = wallet.address.toString({ bounceable: true })
      const raw = wallet.address.toRawString()
      expect((await h.get(`/v2/membership/?address=${encodeURIComponent(friendly)}&walletEcosystem=ton`)).body).toEqual({ isMember: false })

      const { nonce, message } = await agreement(friendly)
      const signature = signTonProof({ keyPair, address: wallet.address, domain: 'app.example.com', payload: message, stateInit: wallet.init })
      const created = await h.post('/v2/membership/', { address: friendly, walletEcosystem: 'ton', signature, nonce, distributorId: h.distributorId })
      expect(created.status).toBe(200)
      expect(created.body).toEqual({ isMember: true, error: '' })

      // One wallet, one membership: the raw and non-bounceable forms are the same member.
      const nonBounceable = wallet.address.toString({ bounceable: false })
      for (const form of [raw, raw.toUpperCase().replace('0X', '0x'), nonBounceable])
        expect((await h.get(`/v2/membership/?address=${encodeURIComponent(form)}&walletEcosystem=ton`)).body).toEqual({ isMember: true })
      const member = await h.store.getMember('ton', raw)
      expect(member?.distributorId).toBe(h.distributorId)
      const again = await agreement(nonBounceable)
      const dup = await h.post('/v2/membership/', {
        address: nonBounceable,
        walletEcosystem: 'ton',
        signature: signTonProof({ keyPair, address: wallet.address, domain: 'app.example.com', payload: again.message, stateInit: wallet.init }),
        nonce: again.nonce,
      })
      expect(dup.status).toBe(409)
      expectEnvelope(dup.body, 409, 'CONFLICT')
    })
  }

  test("the agreement takes TON's own chain ids, not another ecosystem's", async () => {
    const address = tonWallet('v5r1', newKeyPair().publicKey).address.toString()
    const ask = (chainId: string) => h.post('/v2/membership/agreement', { address, walletEcosystem: 'ton', url: 'https://app.example.com', chainId }, { key: h.org.publishableKey })
    for (const chainId of ['-239', '-3']) expect((await ask(chainId)).status).toBe(200)
    const refused = await ask('1')
    expect(refused.status).toBe(400)
    expectEnvelope(refused.body, 400, 'INVALID_ARGUMENT')
    expect(refused.body.context).toEqual({ chainId: 'not a ton chain id' })
    // No EVM example in a TON refusal: the plugin has no default chain to show.
    expect(refused.body.error).toBe('chainId "1" is not a chain of the ton ecosystem (write -239 (mainnet) or -3 (testnet))')
  })

  test('a deployed wallet registers without stateInit, its key read with get_public_key', async () => {
    const keyPair = newKeyPair()
    const wallet = await chain.deployWallet('v4r2', keyPair)
    const address = wallet.address.toString()
    const { nonce, message } = await agreement(address)
    const signature = signTonProof({ keyPair, address: wallet.address, domain: 'app.example.com', payload: message, publicKey: keyPair.publicKey })
    const created = await h.post('/v2/membership/', { address, walletEcosystem: 'ton', signature, nonce })
    expect(created.body).toEqual({ isMember: true, error: '' })
  })

  test("a proof for another domain, or by another key, is 400 and leaves the nonce usable", async () => {
    const keyPair = newKeyPair()
    const wallet = tonWallet('v5r1', keyPair.publicKey)
    const address = wallet.address.toString()
    const { nonce, message } = await agreement(address)
    const wrongDomain = signTonProof({ keyPair, address: wallet.address, domain: 'evil.example.com', payload: message, stateInit: wallet.init })
    const r1 = await h.post('/v2/membership/', { address, walletEcosystem: 'ton', signature: wrongDomain, nonce })
    expect(r1.status).toBe(400)
    expectEnvelope(r1.body, 400, 'INVALID_ARGUMENT')
    expect(r1.body.context).toHaveProperty('signature')
    const other = newKeyPair()
    const wrongKey = signTonProof({ keyPair: other, address: wallet.address, domain: 'app.example.com', payload: message, stateInit: wallet.init })
    expect((await h.post('/v2/membership/', { address, walletEcosystem: 'ton', signature: wrongKey, nonce })).status).toBe(400)
    const good = signTonProof({ keyPair, address: wallet.address, domain: 'app.example.com', payload: message, stateInit: wallet.init })
    expect((await h.post('/v2/membership/', { address, walletEcosystem: 'ton', signature: good, nonce })).body).toEqual({ isMember: true, error: '' })
  })
})
