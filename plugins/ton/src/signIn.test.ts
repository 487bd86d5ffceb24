import { beforeAll, describe, expect, test } from 'bun:test'
import { ApiError, UnavailableError, type VerifySignInParameters } from '@earn/core'
import { Address, beginCell, type ContractProvider } from '@ton/core'
import { WalletContractV2R2 } from '@ton/ton'
import { keyPairFromSeed, mnemonicNew, mnemonicToPrivateKey, type KeyPair } from '@ton/crypto'
import {
  signTonProof,
  startTon,
  stateInitBase64,
  tonWallet,
  type TonSandbox,
  type TonWalletVersion,
} from '../../../test/chains/ton.ts'
import { connectTon, createTonClient } from './client.ts'
import { tonSignInMessage, verifyTonSignIn } from './signIn.ts'

const DOMAIN = 'app.example.com'
const NOW = new Date('2025-06-01T12:00:00Z')
const NOW_S = NOW.getTime() / 1000

/** A client that fails the test if anything reaches for the chain: stateInit proofs are offline. */
const offline = createTonClient(() => {
  throw new Error('this verification must not touch the chain')
})

const newKeyPair = async (): Promise<KeyPair> => mnemonicToPrivateKey(await mnemonicNew(24))

function agreement(address: string, nonce = crypto.randomUUID()): Omit<VerifySignInParameters, 'signature'> {
  const base = {
    address,
    domain: DOMAIN,
    uri: `https://${DOMAIN}/earn`,
    chainId: '-239',
    nonce,
    issuedAt: new Date(NOW.getTime() - 30_000),
    expiresAt: new Date(NOW.getTime() + 270_000),
  }
  return { ...base, message: tonSignInMessage(base), now: NOW }
}

async function signedAgreement(version: TonWalletVersion = 'v4r2') {
  const keyPair = await newKeyPair()
  const wallet = tonWallet(version, keyPair.publicKey)
  const p = agreement(wallet.address.toRawString())
  const proof = (over: Partial<Parameters<typeof signTonProof>[0]> = {}) =>
    signTonProof({
      keyPair,
      address: wallet.address,
      domain: DOMAIN,
      timestamp: NOW_S - 10,
      payload: p.message,
      stateInit: wallet.init,
      ...over,
    })
  return { keyPair, wallet, p, proof }
}

const rejected = async (client: Parameters<typeof verifyTonSignIn>[0], p: VerifySignInParameters) => {
  const r = await verifyTonSignIn(client, p)
  expect(r.valid).toBe(false)
  return r.valid ? '' : r.reason
}

describe('TON sign-in message', () => {
  test('is the short ton_proof payload carrying the nonce', () => {
    const p = agreement('0:' + '1'.repeat(64), 'c0ffee00-0000-4000-8000-000000000001')
    expect(p.message).toBe('earn-membership:c0ffee00-0000-4000-8000-000000000001')
    expect(Buffer.byteLength(p.message)).toBeLessThan(128)
  })
})

describe('ton_proof with stateInit (offline)', () => {
  for (const version of ['v3r2', 'v4r2', 'v5r1'] as const) {
    test(`accepts a ${version} wallet's proof`, async () => {
      const { p, proof } = await signedAgreement(version)
      expect(await verifyTonSignIn(offline, { ...p, signature: proof() })).toEqual({ valid: true })
    })
  }

  test('accepts a friendly address, a string timestamp and a matching publicKey', async () => {
    const { keyPair, wallet, p, proof } = await signedAgreement('v5r1')
    const friendly = wallet.address.toString({ bounceable: false })
    const json = JSON.parse(Buffer.from(proof({ publicKey: keyPair.publicKey }), 'base64').toString())
    json.timestamp = String(json.timestamp)
    const signature = Buffer.from(JSON.stringify(json)).toString('base64')
    expect(await verifyTonSignIn(offline, { ...p, address: friendly, signature })).toEqual({ valid: true })
  })

  test('rejects a proof for another domain', async () => {
    const { p, proof } = await signedAgreement()
    const reason = await rejected(offline, { ...p, signature: proof({ domain: 'evil.example.com' }) })
    expect(reason).toBe('proof.domain is "evil.example.com", expected "app.example.com"')
  })

  test('rejects a proof whose domain length does not match', async () => {
    const { p, proof } = await signedAgreement()
    const json = JSON.parse(Buffer.from(proof(), 'base64').toString())
    json.domain.lengthBytes += 1
    const reason = await rejected(offline, { ...p, signature: Buffer.from(JSON.stringify(json)).toString('base64') })
    expect(reason).toBe('proof.domain.lengthBytes does not match the domain')
  })

  test('rejects a proof over another payload', async () => {
    const { p, proof } = await signedAgreement()
    const reason = await rejected(offline, { ...p, signature: proof({ payload: tonSignInMessage({ ...p, nonce: 'other' }) }) })
    expect(reason).toBe('proof.payload is not the message issued by the agreement')
  })

  test('rejects a payload that was edited after signing', async () => {
    const { p, proof } = await signedAgreement()
    const json = JSON.parse(Buffer.from(proof({ payload: 'earn-membership:old-nonce' }), 'base64').toString())
    json.payload = p.message
    const reason = await rejected(offline, { ...p, signature: Buffer.from(JSON.stringify(json)).toString('base64') })
    expect(reason).toBe('the ton_proof signature does not match the wallet key')
  })

  test('rejects a stale proof (older than 15 minutes)', async () => {
    const { p, proof } = await signedAgreement()
    const old = { ...p, issuedAt: new Date(NOW.getTime() - 3_600_000) }
    expect(await verifyTonSignIn(offline, { ...old, signature: proof({ timestamp: NOW_S - 15 * 60 }) })).toEqual({
      valid: true,
    })
    const reason = await rejected(offline, { ...old, signature: proof({ timestamp: NOW_S - 15 * 60 - 1 }) })
    expect(reason).toBe('proof.timestamp is too old; sign a fresh proof')
  })

  test('rejects a proof made before the agreement was issued', async () => {
    const { p, proof } = await signedAgreement()
    const issued = p.issuedAt.getTime() / 1000
    expect((await verifyTonSignIn(offline, { ...p, signature: proof({ timestamp: issued - 60 }) })).valid).toBe(true)
    const reason = await rejected(offline, { ...p, signature: proof({ timestamp: issued - 61 }) })
    expect(reason).toBe('proof.timestamp is before the agreement was issued')
  })

  test('rejects a proof from the future', async () => {
    const { p, proof } = await signedAgreement()
    expect((await verifyTonSignIn(offline, { ...p, signature: proof({ timestamp: NOW_S + 60 }) })).valid).toBe(true)
    const reason = await rejected(offline, { ...p, signature: proof({ timestamp: NOW_S + 61 }) })
    expect(reason).toBe('proof.timestamp is in the future')
  })

  test("rejects a stateInit that does not hash to the address (another wallet's)", async () => {
    const { p, proof } = await signedAgreement()
    const other = tonWallet('v4r2', (await newKeyPair()).publicKey)
    const reason = await rejected(offline, { ...p, signature: proof({ stateInit: other.init }) })
    expect(reason).toBe('proof.stateInit does not hash to the address')
  })

  test('rejects the same key under another wallet version (stateInit of v5r1 for a v4r2 address)', async () => {
    const { keyPair, p, proof } = await signedAgreement('v4r2')
    const reason = await rejected(offline, { ...p, signature: proof({ stateInit: tonWallet('v5r1', keyPair.publicKey).init }) })
    expect(reason).toBe('proof.stateInit does not hash to the address')
  })

  test('rejects a proof signed by another key', async () => {
    const { p, proof } = await signedAgreement()
    const reason = await rejected(offline, { ...p, signature: proof({ keyPair: await newKeyPair() }) })
    expect(reason).toBe('the ton_proof signature does not match the wallet key')
  })

  test('rejects a proof signed for another address', async () => {
    const { p, proof } = await signedAgreement()
    const reason = await rejected(offline, { ...p, signature: proof({ address: tonWallet('v5r1', Buffer.alloc(32, 7)).address }) })
    expect(reason).toBe('the ton_proof signature does not match the wallet key')
  })

  test('rejects a claimed publicKey that is not the stateInit key', async () => {
    const { p, proof } = await signedAgreement()
    const reason = await rejected(offline, { ...p, signature: proof({ publicKey: (await newKeyPair()).publicKey }) })
    expect(reason).toBe("proof.publicKey is not the wallet's key")
  })

  test('rejects a tampered signature, bit by bit', async () => {
    const { p, proof } = await signedAgreement()
    const json = JSON.parse(Buffer.from(proof(), 'base64').toString())
    const sig = Buffer.from(json.signature, 'base64')
    for (const bit of [0, 100, 255, 256, 400, 511]) {
      const flipped = Buffer.from(sig)
      flipped[bit >> 3]! ^= 1 << (bit & 7)
      const signature = Buffer.from(JSON.stringify({ ...json, signature: flipped.toString('base64') })).toString('base64')
      expect((await verifyTonSignIn(offline, { ...p, signature })).valid).toBe(false)
    }
  })

  test('rejects a small-order key with the universal forgery (R = identity, S = 0)', async () => {
    // The identity point: lenient ed25519 verifiers accept this signature for any message.
    const weakKey = Buffer.concat([Buffer.from([1]), Buffer.alloc(31)])
    const wallet = tonWallet('v4r2', weakKey)
    const p = agreement(wallet.address.toRawString())
    const forged = Buffer.concat([weakKey, Buffer.alloc(32)]).toString('base64')
    const json = {
      timestamp: NOW_S,
      domain: { lengthBytes: DOMAIN.length, value: DOMAIN },
      signature: forged,
      payload: p.message,
      stateInit: stateInitBase64(wallet.init),
    }
    const reason = await rejected(offline, { ...p, signature: Buffer.from(JSON.stringify(json)).toString('base64') })
    expect(reason).toBe('the wallet key is a weak (small-order) key')
  })

  test('garbage never throws', async () => {
    const { p, proof } = await signedAgreement()
    const good = JSON.parse(Buffer.from(proof(), 'base64').toString())
    const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64')
    const cases: Record<string, string> = {
      empty: '',
      'not base64': 'this is not base64!',
      'base64 of non-JSON': b64('{"timestamp":'),
      'base64 of invalid UTF-8': Buffer.from([0xff, 0xfe, 0x7b]).toString('base64'),
      'JSON array': b64([1, 2, 3]),
      'JSON null': b64('null'),
      'missing signature': b64({ ...good, signature: undefined }),
      'short signature': b64({ ...good, signature: Buffer.alloc(63).toString('base64') }),
      'signature not base64': b64({ ...good, signature: '%%%' }),
      'negative timestamp': b64({ ...good, timestamp: -1 }),
      'fractional timestamp': b64({ ...good, timestamp: 1.5 }),
      'huge timestamp': b64({ ...good, timestamp: 1e300 }),
      'domain is a string': b64({ ...good, domain: DOMAIN }),
      'stateInit not a BoC': b64({ ...good, stateInit: 'AAAA' }),
      'stateInit not base64': b64({ ...good, stateInit: '***' }),
      'stateInit a number': b64({ ...good, stateInit: 7 }),
      'publicKey not hex': b64({ ...good, publicKey: 'zz' }),
      'a raw signature': Buffer.alloc(64, 1).toString('base64'),
    }
    for (const [name, signature] of Object.entries(cases)) {
      const r = await verifyTonSignIn(offline, { ...p, signature })
      expect({ name, valid: r.valid }).toEqual({ name, valid: false })
      expect(r.valid ? '' : r.reason).not.toBe('')
    }
  })
})

describe('ton_proof without stateInit (get_public_key on the sandbox)', () => {
  let chain: TonSandbox
  let keyPair: KeyPair
  let deployed: Awaited<ReturnType<TonSandbox['deployWallet']>>

  beforeAll(async () => {
    chain = await startTon()
    keyPair = keyPairFromSeed(Buffer.alloc(32, 42))
    deployed = await chain.deployWallet('v4r2', keyPair)
  })

  const proofFor = (p: VerifySignInParameters | Omit<VerifySignInParameters, 'signature'>, over = {}) =>
    signTonProof({ keyPair, address: deployed.address, domain: DOMAIN, timestamp: NOW_S, payload: p.message, ...over })

  test('accepts a deployed wallet, reading its key from the chain', async () => {
    const p = agreement(deployed.address.toRawString())
    expect(await verifyTonSignIn(chain.client, { ...p, signature: proofFor(p) })).toEqual({ valid: true })
    expect(await verifyTonSignIn(chain.client, { ...p, signature: proofFor(p, { publicKey: keyPair.publicKey }) })).toEqual({
      valid: true,
    })
  })

  test('rejects a claimed publicKey the chain does not hold', async () => {
    const p = agreement(deployed.address.toRawString())
    const other = await newKeyPair()
    const reason = await rejected(chain.client, { ...p, signature: proofFor(p, { keyPair: other, publicKey: other.publicKey }) })
    expect(reason).toBe("proof.publicKey is not the wallet's key")
  })

  test('rejects a proof by another key for the deployed wallet', async () => {
    const p = agreement(deployed.address.toRawString())
    const reason = await rejected(chain.client, { ...p, signature: proofFor(p, { keyPair: await newKeyPair() }) })
    expect(reason).toBe('the ton_proof signature does not match the wallet key')
  })

  test('rejects a wallet that is not deployed when no stateInit is sent', async () => {
    const kp = await newKeyPair()
    const wallet = tonWallet('v5r1', kp.publicKey)
    const p = agreement(wallet.address.toRawString())
    const signature = signTonProof({ keyPair: kp, address: wallet.address, domain: DOMAIN, timestamp: NOW_S, payload: p.message })
    expect(await rejected(chain.client, { ...p, signature })).toBe('the wallet is not deployed; send its stateInit with the proof')
  })

  test("a stateInit of a wallet this server does not read (v2r2), not deployed: says so rather than to send the stateInit it sent", async () => {
    const kp = await newKeyPair()
    const wallet = WalletContractV2R2.create({ workchain: 0, publicKey: kp.publicKey })
    const p = agreement(wallet.address.toRawString())
    const signature = signTonProof({ keyPair: kp, address: wallet.address, domain: DOMAIN, timestamp: NOW_S, payload: p.message, stateInit: wallet.init })
    expect(await rejected(chain.client, { ...p, signature })).toBe(
      'the wallet is not deployed and proof.stateInit is not a wallet contract this server reads a key from (v3r1, v3r2, v4r2, v5beta, v5r1); deploy the wallet first',
    )
  })

  test('a stateInit whose library dictionary shares its cells is answered at once, its libraries never walked', async () => {
    // Forks whose two branches are one cell, 16 deep: a few dozen cells that @ton/core's dictionary parser walked as
    // a tree of 2^16 entries (~5 s of the one thread; 18 deep, 20 s and gigabytes), before any signature check.
    const depth = 16
    const rest = 256 - depth
    let node = beginCell().storeBit(1).storeBit(1).storeBit(0).storeUint(rest, Math.ceil(Math.log2(rest + 1))).storeBit(0).storeRef(beginCell().endCell()).endCell()
    for (let i = 0; i < depth; i++) node = beginCell().storeBit(0).storeBit(0).storeRef(node).storeRef(node).endCell()
    const stateInit = beginCell().storeBit(0).storeBit(0).storeMaybeRef(null).storeMaybeRef(null).storeBit(1).storeRef(node).endCell()
    const address = new Address(0, stateInit.hash())
    const p = agreement(address.toRawString())
    const signature = signTonProof({ keyPair, address, domain: DOMAIN, timestamp: NOW_S, payload: p.message, stateInit: stateInit.toBoc().toString('base64') })
    const started = performance.now()
    expect(await rejected(chain.client, { ...p, signature })).toStartWith('the wallet is not deployed and proof.stateInit is not a wallet contract this server reads a key from')
    expect(performance.now() - started).toBeLessThan(1_000)
  })

  test('rejects a contract with no get_public_key (a jetton minter)', async () => {
    const master = await chain.deployJetton()
    const p = agreement(master.toRawString())
    const signature = signTonProof({ keyPair, address: master, domain: DOMAIN, timestamp: NOW_S, payload: p.message })
    expect(await rejected(chain.client, { ...p, signature })).toBe(
      'the contract at this address has no get_public_key; it is not a known wallet',
    )
  })

  test('an unreachable TON API rejects with UnavailableError (503), not a verdict', async () => {
    // Stands in for an unreachable TON API: the account state answers, the get-method call fails
    // the way an HTTP client does when the connection is refused.
    const flaky = createTonClient((address, init) => {
      const real = chain.blockchain.provider(address, init)
      const unreachable: ContractProvider = {
        getState: () => real.getState(),
        get: () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' })),
        external: (message) => real.external(message),
        internal: (via, args) => real.internal(via, args),
        open: (contract) => real.open(contract),
        getTransactions: (a, lt, hash, limit) => real.getTransactions(a, lt, hash, limit),
      }
      return unreachable
    })
    const p = agreement(deployed.address.toRawString())
    const error = await verifyTonSignIn(flaky, { ...p, signature: proofFor(p) }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UnavailableError)
    expect((error as ApiError).status).toBe(503)
    expect((error as ApiError).message).toBe('the TON API did not answer while reading get_public_key; retry later')
  })

  test('a TonClient whose endpoint refuses connections rejects with UnavailableError', async () => {
    // Port 1 on loopback: nothing listens, so the real HTTP transport fails fast.
    const client = connectTon({ TON_API_URL: 'http://127.0.0.1:1/jsonRPC' })
    const p = agreement(deployed.address.toRawString())
    const error = await verifyTonSignIn(client, { ...p, signature: proofFor(p) }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UnavailableError)
    expect((error as ApiError).status).toBe(503)
  })

  test('an unconfigured client names TON_API_URL, and stateInit proofs still need no chain', async () => {
    const client = connectTon({})
    const p = agreement(deployed.address.toRawString())
    const error = await verifyTonSignIn(client, { ...p, signature: proofFor(p) }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UnavailableError)
    expect((error as ApiError).context).toHaveProperty('TON_API_URL')
    expect(await verifyTonSignIn(client, { ...p, signature: proofFor(p, { stateInit: deployed.init }) })).toEqual({ valid: true })
  })
})
