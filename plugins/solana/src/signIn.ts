/**
 * Membership proof for Solana wallets: a Sign-In-With-Solana (SIWS) text, signed as UTF-8 bytes
 * with the wallet's ed25519 key. The address *is* the public key, so verification is offline.
 */
import {
  InvalidArgumentError,
  type SignInMessageParameters,
  type VerifySignInParameters,
  type VerifySignInResult,
} from '@earn/core'
import { ed25519 } from '@noble/curves/ed25519.js'
import { getBase58Encoder, getBase64Encoder } from '@solana/kit'
import { parseAddressBytes } from './address.ts'
import type { SolanaClient } from './client.ts'

export const SIGN_IN_STATEMENT =
  'Sign in to Earn to prove you own this wallet. Signing sends no transaction and costs no fee.'

const HEADER = ' wants you to sign in with your Solana account:'

/**
 * Phantom's SIWS grammar allows only letters and digits in a nonce (8 or more), and wallets that
 * validate the text would refuse a UUID's dashes; the dashless UUID keeps all 122 random bits.
 */
export const siwsNonce = (nonce: string): string => nonce.replaceAll('-', '')

/**
 * Byte-identical to wallet-standard's `createSignInMessageText` for the same fields, so wallets
 * that parse SIWS text (to show a sign-in prompt rather than raw text) recognise it.
 *
 * No `Chain ID` line: membership belongs to the key, which is the same wallet on every cluster, and
 * a cluster named here would be a binding the server never checks (and a warning in wallets set to
 * another cluster).
 */
export function signInMessage(p: SignInMessageParameters): string {
  // The text is line-oriented: a newline smuggled into a field could forge a later `Nonce:` line.
  for (const [field, value] of Object.entries({ address: p.address, domain: p.domain, uri: p.uri, nonce: p.nonce }))
    // `domain` and `uri` come from the request's `url`.
    if (/[\r\n]/.test(value))
      throw new InvalidArgumentError(`${field} must not contain line breaks`, { [field === 'domain' || field === 'uri' ? 'url' : field]: 'contains a line break' })
  const fields = [
    `URI: ${p.uri}`,
    'Version: 1',
    `Nonce: ${siwsNonce(p.nonce)}`,
    `Issued At: ${p.issuedAt.toISOString()}`,
    `Expiration Time: ${p.expiresAt.toISOString()}`,
  ]
  return `${p.domain}${HEADER}\n${p.address}\n\n${SIGN_IN_STATEMENT}\n\n${fields.join('\n')}`
}

type Decoded = { ok: true; bytes: Uint8Array } | { ok: false; reason: string }

const BASE58_SIGNATURE = /^[1-9A-HJ-NP-Za-km-z]{64,88}$/
const BASE64_SIGNATURE = /^[A-Za-z0-9+/]{86}==$/

/**
 * The alphabets tell the encodings apart: padded base64 of 64 bytes always ends in `==`, which
 * base58 never contains. Unpadded base64 is refused because 86 such characters can also be base58.
 */
export function decodeSignature(signature: string): Decoded {
  let bytes: Uint8Array
  if (BASE64_SIGNATURE.test(signature)) bytes = new Uint8Array(getBase64Encoder().encode(signature))
  else if (BASE58_SIGNATURE.test(signature)) bytes = new Uint8Array(getBase58Encoder().encode(signature))
  else return { ok: false, reason: 'signature must be a 64-byte ed25519 signature in base58, or in base64 with padding' }
  if (bytes.length !== 64)
    return { ok: false, reason: `signature decodes to ${bytes.length} bytes; an ed25519 signature is 64` }
  return { ok: true, bytes }
}

/** The lines the proof binds: which site asked, whose sign-in it is, which agreement it answers. */
function readMessage(text: string): { domain: string; address: string; nonce?: string } | undefined {
  const [first, address] = text.split('\n', 2)
  if (!first?.endsWith(HEADER) || address === undefined) return undefined
  const block = text.lastIndexOf('\n\n')
  const nonces = block < 0 ? [] : text.slice(block + 2).split('\n').filter((l) => l.startsWith('Nonce: '))
  return {
    domain: first.slice(0, -HEADER.length),
    address,
    nonce: nonces.length === 1 ? nonces[0]!.slice('Nonce: '.length) : undefined,
  }
}

const invalid = (reason: string): VerifySignInResult => ({ valid: false, reason })

function verify(p: VerifySignInParameters): VerifySignInResult {
  const key = parseAddressBytes(p.address)
  if (!key.ok) return invalid(`address is not a Solana address: ${key.reason}`)
  let weak: boolean
  try {
    weak = ed25519.Point.fromBytes(key.bytes).isSmallOrder()
  } catch {
    return invalid('address is not an ed25519 public key (an off-curve address such as a PDA cannot sign)')
  }
  // With a small-order key, R = identity and S = 0 "verify" any message under the lax ZIP-215
  // rules that tweetnacl and WebCrypto apply: anyone could claim such an address.
  if (weak) return invalid('address is a small-order ed25519 key, for which signatures can be forged')

  const text = readMessage(p.message)
  if (!text) return invalid('message is not a Sign-In-With-Solana message')
  if (text.domain !== p.domain) return invalid('message was issued for another domain')
  if (text.address !== p.address) return invalid('message was issued for another address')
  if (text.nonce !== siwsNonce(p.nonce)) return invalid('message does not carry this nonce')
  if (p.now.getTime() >= p.expiresAt.getTime()) return invalid('agreement has expired')

  const signature = decodeSignature(p.signature)
  if (!signature.ok) return invalid(signature.reason)
  // zip215: false is RFC 8032's strict rule: non-canonical points and S are refused.
  const ok = ed25519.verify(signature.bytes, new TextEncoder().encode(p.message), key.bytes, { zip215: false })
  return ok ? { valid: true } : invalid('signature was not made by this address over this message')
}

/** Offline; the client is unused because the address is the verifying key. Never rejects. */
export async function verifySignIn(_client: SolanaClient, p: VerifySignInParameters): Promise<VerifySignInResult> {
  try {
    if (typeof p.signature !== 'string' || typeof p.message !== 'string') return invalid('signature and message must be strings')
    return verify(p)
  } catch (e) {
    return invalid(`signature could not be checked: ${e instanceof Error ? e.message : String(e)}`)
  }
}
