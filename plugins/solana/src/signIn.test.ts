import { describe, expect, test } from 'bun:test'
import { InvalidArgumentError, type SignInMessageParameters, type VerifySignInParameters } from '@earn/core'
import { ed25519 } from '@noble/curves/ed25519.js'
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { address, generateKeyPairSigner, signBytes } from '@solana/kit'
import { connect } from './client.ts'
import { IDENTITY_FORGERY, IDENTITY_KEY, newWallet, toBase58, toBase64 } from './fixtures.ts'
import { decodeSignature, SIGN_IN_STATEMENT, signInMessage, verifySignIn } from './signIn.ts'

const client = connect({})
const NONCE = '8f0c2a4e-3b1d-4c5e-9a7f-0123456789ab'
const ISSUED = new Date('2025-03-01T12:00:00.000Z')

function agreement(addr: string, nonce = NONCE): SignInMessageParameters {
  return {
    address: addr,
    domain: 'app.example.com:8443',
    uri: 'https://app.example.com:8443/earn?ref=1',
    chainId: '1',
    nonce,
    issuedAt: ISSUED,
    expiresAt: new Date(ISSUED.getTime() + 300_000),
  }
}

const now = new Date(ISSUED.getTime() + 60_000)
const verify = (p: SignInMessageParameters, message: string, signature: string, at = now) =>
  verifySignIn(client, { ...p, message, signature, now: at } satisfies VerifySignInParameters)

describe('signIn.message', () => {
  test('is the Sign-In-With-Solana layout, byte for byte', () => {
    const addr = 'HVWqRCoCZqn9DojSyGaJBrpnzbJkrLjdZRd4SP8Djw8'
    // The text wallet-standard's createSignInMessageText gives for {domain, address, statement,
    // uri, version: '1', nonce, issuedAt, expirationTime}.
    expect(signInMessage(agreement(addr))).toBe(
      'app.example.com:8443 wants you to sign in with your Solana account:\n' +
        'HVWqRCoCZqn9DojSyGaJBrpnzbJkrLjdZRd4SP8Djw8\n' +
        '\n' +
        `${SIGN_IN_STATEMENT}\n` +
        '\n' +
        'URI: https://app.example.com:8443/earn?ref=1\n' +
        'Version: 1\n' +
        'Nonce: 8f0c2a4e3b1d4c5e9a7f0123456789ab\n' +
        'Issued At: 2025-03-01T12:00:00.000Z\n' +
        'Expiration Time: 2025-03-01T12:05:00.000Z',
    )
  })

  test('writes the nonce as letters and digits only, as the SIWS grammar requires', () => {
    const nonceLine = signInMessage(agreement(newWallet().address)).split('\n').find((l) => l.startsWith('Nonce: '))
    expect(nonceLine).toMatch(/^Nonce: [A-Za-z0-9]{8,}$/)
  })

  test('refuses a line break in any field, which could forge a later line', () => {
    const p = agreement(newWallet().address)
    expect(() => signInMessage({ ...p, uri: 'https://a.example\nNonce: attacker' })).toThrow(InvalidArgumentError)
    expect(() => signInMessage({ ...p, domain: 'a.example\r' })).toThrow('domain must not contain line breaks')
  })
})

describe('signIn.verify', () => {
  test('accepts a base58 signature from the address owner', async () => {
    const w = newWallet()
    const p = agreement(w.address)
    const message = signInMessage(p)
    const signature = w.sign(message)
    expect(signature.length).toBeGreaterThanOrEqual(86)
    expect(await verify(p, message, signature)).toEqual({ valid: true })
  })

  test('accepts the same signature in padded base64', async () => {
    const w = newWallet()
    const p = agreement(w.address)
    const message = signInMessage(p)
    const signature = w.signBase64(message)
    expect(signature).toMatch(/^[A-Za-z0-9+/]{86}==$/)
    expect(await verify(p, message, signature)).toEqual({ valid: true })
  })

  test("accepts a signature made by kit's WebCrypto signer (what browser wallets use)", async () => {
    const signer = await generateKeyPairSigner()
    const p = agreement(signer.address)
    const message = signInMessage(p)
    const signature = await signBytes(signer.keyPair.privateKey, new TextEncoder().encode(message))
    expect(await verify(p, message, toBase58(signature))).toEqual({ valid: true })
  })

  test('rejects a message carrying another nonce, even when validly signed', async () => {
    const w = newWallet()
    const p = agreement(w.address)
    const other = signInMessage(agreement(w.address, 'aaaaaaaa-0000-4000-8000-000000000000'))
    expect(await verify(p, other, w.sign(other))).toEqual({ valid: false, reason: 'message does not carry this nonce' })
  })

  test('rejects a message issued for another address or another domain', async () => {
    const w = newWallet()
    const p = agreement(w.address)
    const forOther = signInMessage(agreement(newWallet().address))
    expect(await verify(p, forOther, w.sign(forOther))).toEqual({ valid: false, reason: 'message was issued for another address' })
    const otherSite = signInMessage({ ...p, domain: 'evil.example' })
    expect(await verify(p, otherSite, w.sign(otherSite))).toEqual({ valid: false, reason: 'message was issued for another domain' })
  })

  test('rejects a signature over a tampered message', async () => {
    const w = newWallet()
    const p = agreement(w.address)
    const message = signInMessage(p)
    const signature = w.sign(message)
    const tampered = message.replace('Version: 1', 'Version: 2')
    expect(await verify(p, tampered, signature)).toEqual({
      valid: false,
      reason: 'signature was not made by this address over this message',
    })
  })

  test("rejects another key's signature for this address", async () => {
    const victim = newWallet()
    const p = agreement(victim.address)
    const message = signInMessage(p)
    const r = await verify(p, message, newWallet().sign(message))
    expect(r).toEqual({ valid: false, reason: 'signature was not made by this address over this message' })
  })

  test('rejects after the agreement expires', async () => {
    const w = newWallet()
    const p = agreement(w.address)
    const message = signInMessage(p)
    expect(await verify(p, message, w.sign(message), p.expiresAt)).toEqual({ valid: false, reason: 'agreement has expired' })
  })

  test('turns garbage into {valid: false} without throwing', async () => {
    const w = newWallet()
    const p = agreement(w.address)
    const message = signInMessage(p)
    const garbage = [
      '',
      'not a signature',
      '0'.repeat(88),
      'A'.repeat(86), // unpadded base64 is refused: it is ambiguous with base58
      toBase58(crypto.getRandomValues(new Uint8Array(63))),
      toBase64(crypto.getRandomValues(new Uint8Array(65))),
      toBase58(new Uint8Array(64)),
      'z'.repeat(10_000),
      `${w.sign(message)}\n`,
    ]
    for (const signature of garbage) {
      const r = await verify(p, message, signature)
      expect(r.valid).toBe(false)
      if (!r.valid) expect(r.reason.length).toBeGreaterThan(0)
    }
    for (const bad of [null, 42, {}] as unknown as string[]) expect((await verify(p, message, bad)).valid).toBe(false)
    expect((await verify(p, 'hello', w.sign('hello'))).valid).toBe(false)
    expect((await verify({ ...p, address: 'not-an-address' }, message, w.sign(message))).valid).toBe(false)
  })

  test('rejects a small-order public key, whose forged signature verifies under lax rules', async () => {
    const weak = toBase58(IDENTITY_KEY)
    expect(weak).toBe('4uQeVj5tqViQh7yWWGStvkEG1Zmhx6uasJtWCJziofM')
    const p = agreement(weak)
    const message = signInMessage(p)
    // The forgery is real: ZIP-215 verification (noble's default, tweetnacl, WebCrypto) accepts it.
    expect(ed25519.verify(IDENTITY_FORGERY, new TextEncoder().encode(message), IDENTITY_KEY)).toBe(true)
    expect(await verify(p, message, toBase58(IDENTITY_FORGERY))).toEqual({
      valid: false,
      reason: 'address is a small-order ed25519 key, for which signatures can be forged',
    })
    // The all-zero key (the System Program's address) is a point of order 4.
    const zero = '11111111111111111111111111111111'
    const z = agreement(zero)
    expect((await verify(z, signInMessage(z), toBase58(IDENTITY_FORGERY))).valid).toBe(false)
  })

  test('rejects an off-curve address, which has no private key', async () => {
    const [pda] = await findAssociatedTokenPda({
      owner: address(newWallet().address),
      mint: address(newWallet().address),
      tokenProgram: TOKEN_PROGRAM_ADDRESS,
    })
    const p = agreement(pda)
    const message = signInMessage(p)
    const r = await verify(p, message, newWallet().sign(message))
    expect(r).toEqual({ valid: false, reason: expect.stringContaining('not an ed25519 public key') })
  })
})

describe('decodeSignature', () => {
  test('reads base58 and padded base64 of the same 64 bytes alike', () => {
    const bytes = crypto.getRandomValues(new Uint8Array(64))
    const a = decodeSignature(toBase58(bytes))
    const b = decodeSignature(toBase64(bytes))
    expect(a).toEqual({ ok: true, bytes })
    expect(b).toEqual({ ok: true, bytes })
  })
})
