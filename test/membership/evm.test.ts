/**
 * EVM smart-contract wallets register through the HTTP flow: an ERC-1271 wallet compiled offline with
 * solc-js and deployed on anvil is checked through the RPC of the agreement's chain.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { evmClientFromPublicClients } from '@earn/plugin-evm'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { createPublicClient, http } from 'viem'
import { closedPortUrl, deploySmartWallet, startAnvil, type Anvil } from '../chains/evm.ts'
import { createHarness, expectEnvelope, type Harness } from '../harness.ts'

let anvil: Anvil
let h: Harness
beforeAll(async () => {
  anvil = await startAnvil()
  h = await createHarness({ clients: { evm: evmClientFromPublicClients({ [anvil.chainId]: anvil.publicClient }) } })
})
afterAll(async () => {
  await h.close()
  await anvil.stop()
})

async function agreement(harness: Harness, address: string, chainId: string) {
  const r = await harness.post('/v2/membership/agreement', { address, walletEcosystem: 'evm', url: 'https://app.example.com', chainId })
  expect(r.status).toBe(200)
  return r.body as { nonce: string; message: string }
}

describe('EVM smart-contract wallet membership', () => {
  test("an ERC-1271 wallet registers with its owner's signature; a stranger's does not", async () => {
    const owner = privateKeyToAccount(generatePrivateKey())
    const wallet = await deploySmartWallet(anvil, owner.address)
    const { nonce, message } = await agreement(h, wallet, anvil.chainId)

    const stranger = privateKeyToAccount(generatePrivateKey())
    const refused = await h.post('/v2/membership/', { address: wallet, walletEcosystem: 'evm', signature: await stranger.signMessage({ message }), nonce })
    expect(refused.status).toBe(400)
    expectEnvelope(refused.body, 400, 'INVALID_ARGUMENT')
    expect(refused.body.context).toHaveProperty('signature')

    const created = await h.post('/v2/membership/', { address: wallet, walletEcosystem: 'evm', signature: await owner.signMessage({ message }), nonce })
    expect(created.status).toBe(200)
    expect(created.body).toEqual({ isMember: true, error: '' })
    expect((await h.get(`/v2/membership/?address=${wallet}`)).body).toEqual({ isMember: true })
  })

  test('an RPC that is down during the check is a retryable 503, and the nonce stays usable', async () => {
    const owner = privateKeyToAccount(generatePrivateKey())
    const wallet = await deploySmartWallet(anvil, owner.address)
    const down = createPublicClient({ transport: http(await closedPortUrl(), { retryCount: 0 }) })
    const broken = await createHarness({ store: h.store, clients: { evm: evmClientFromPublicClients({ [anvil.chainId]: down }) } })
    const { nonce, message } = await agreement(broken, wallet, anvil.chainId)
    const signature = await owner.signMessage({ message })
    const r = await broken.post('/v2/membership/', { address: wallet, walletEcosystem: 'evm', signature, nonce })
    expect(r.status).toBe(503)
    expectEnvelope(r.body, 503, 'UNAVAILABLE')
    expect(r.text).not.toContain('127.0.0.1')
    // The same nonce works for the same organization once the chain answers.
    const ok = await h.post('/v2/membership/', { address: wallet, walletEcosystem: 'evm', signature, nonce }, { key: broken.org.secretKey })
    expect(ok.body).toEqual({ isMember: true, error: '' })
  })
})
