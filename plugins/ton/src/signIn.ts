/**
 * Membership sign-in for TON wallets through TON Connect `ton_proof`. The agreement message is the
 * proof's payload; the proof itself binds that payload to the wallet address, the app's domain and
 * a timestamp. Expected failures come back as `{valid: false}`; only an unreachable chain throws.
 */
import {
  ApiError,
  type SignInMessageParameters,
  type VerifySignInParameters,
  type VerifySignInResult,
} from '@earn/core'
import { Cell, type Address, type StateInit } from '@ton/core'
import { ed25519 } from '@noble/curves/ed25519.js'
import { askChain, getMethodExitCode, type TonChainClient } from './client.ts'
import { checkTonAddress } from './address.ts'
import { decodeBase64, decodeTonProof, tonProofHash } from './tonProof.ts'
import { KNOWN_WALLET_VERSIONS, publicKeyFromStateInit } from './walletState.ts'

/** A wallet's clock may run a little ahead of ours, or the proof be made just before the agreement. */
export const CLOCK_SKEW_SECONDS = 60
/** Long enough to approve in a wallet app; short enough that a proof seen by someone else soon expires. */
export const MAX_PROOF_AGE_SECONDS = 15 * 60

/**
 * The payload rides inside the TON Connect connect request, which often travels as a QR code or a
 * universal link, so it stays a short tag plus the nonce. Issue and expiry times need not be in it:
 * the server stores them with the nonce, and the proof's own timestamp is checked against them below.
 */
export function tonSignInMessage(p: SignInMessageParameters): string {
  return `earn-membership:${p.nonce}`
}

const invalid = (reason: string): VerifySignInResult => ({ valid: false, reason })

export async function verifyTonSignIn(client: TonChainClient, p: VerifySignInParameters): Promise<VerifySignInResult> {
  const proof = decodeTonProof(p.signature)
  if (!proof.ok) return invalid(proof.reason)

  if (proof.payload !== p.message) return invalid('proof.payload is not the message issued by the agreement')
  if (proof.domain.value !== p.domain) return invalid(`proof.domain is "${proof.domain.value}", expected "${p.domain}"`)
  if (proof.domain.lengthBytes !== Buffer.byteLength(proof.domain.value, 'utf8'))
    return invalid('proof.domain.lengthBytes does not match the domain')

  const now = Math.floor(p.now.getTime() / 1000)
  const issuedAt = Math.floor(p.issuedAt.getTime() / 1000)
  if (proof.timestamp < issuedAt - CLOCK_SKEW_SECONDS) return invalid('proof.timestamp is before the agreement was issued')
  if (proof.timestamp > now + CLOCK_SKEW_SECONDS) return invalid('proof.timestamp is in the future')
  if (now - proof.timestamp > MAX_PROOF_AGE_SECONDS) return invalid('proof.timestamp is too old; sign a fresh proof')

  const parsed = checkTonAddress(p.address)
  if (!parsed.ok) return invalid(`address: ${parsed.reason}`)
  const address = parsed.address

  const key = await walletPublicKey(client, address, proof.stateInit, proof.publicKey)
  if (!key.ok) return invalid(key.reason)

  // Small-order keys let a forged (R = identity, S = 0) signature pass for any message under
  // lenient verifiers; ZIP-215 off keeps to RFC 8032's strict encoding rules.
  try {
    if (ed25519.Point.fromBytes(key.publicKey).isSmallOrder()) return invalid('the wallet key is a weak (small-order) key')
  } catch {
    return invalid('the wallet key is not a valid ed25519 point')
  }
  const hash = tonProofHash(address, proof.domain.value, proof.timestamp, proof.payload)
  let ok = false
  try {
    ok = ed25519.verify(proof.signature, hash, key.publicKey, { zip215: false })
  } catch {
    ok = false
  }
  return ok ? { valid: true } : invalid('the ton_proof signature does not match the wallet key')
}

type KeyResult = { ok: true; publicKey: Buffer } | { ok: false; reason: string }

/**
 * The key comes from the stateInit when it hashes to the address and is a wallet we know; otherwise
 * from the deployed wallet's `get_public_key`. A key the client claims is only ever compared, never used.
 */
async function walletPublicKey(
  client: TonChainClient,
  address: Address,
  stateInitBase64: string | undefined,
  claimed: Buffer | undefined,
): Promise<KeyResult> {
  let key: Buffer | null = null
  if (stateInitBase64 !== undefined) {
    const root = decodeBoc(stateInitBase64)
    const init = root && codeAndData(root)
    if (!root || !init) return { ok: false, reason: 'proof.stateInit is not a StateInit BoC' }
    // An address is the hash of its StateInit cell, compared as sent (not as @ton/core would write it again).
    if (!root.hash().equals(address.hash)) return { ok: false, reason: 'proof.stateInit does not hash to the address' }
    key = publicKeyFromStateInit(init)?.publicKey ?? null
  }
  if (!key) {
    const onChain = await publicKeyOnChain(client, address, stateInitBase64 !== undefined)
    if (!onChain.ok) return onChain
    key = onChain.publicKey
  }
  if (claimed && !claimed.equals(key)) return { ok: false, reason: "proof.publicKey is not the wallet's key" }
  return { ok: true, publicKey: key }
}

/** The one root cell of a BoC, or null. */
function decodeBoc(base64: string): Cell | null {
  const boc = decodeBase64(base64)
  if (!boc) return null
  try {
    const cells = Cell.fromBoc(boc)
    // A StateInit is an ordinary cell; an exotic one (a pruned branch) could carry another cell's hash.
    return cells.length === 1 && !cells[0]!.isExotic ? cells[0]! : null
  } catch {
    return null
  }
}

/**
 * A StateInit's code and data (TL-B: split_depth, special, code, data, library), read by hand. Not loadStateInit:
 * it parses the library dictionary whole, walking a cell once per path to it, and a few dozen cells whose forks
 * both point to one child made 2^depth entries (a 150-character stateInit held the thread for 20 s and took
 * gigabytes). No wallet this server reads a key from has libraries; nothing of them is needed.
 */
function codeAndData(root: Cell): StateInit | null {
  try {
    const s = root.beginParse()
    if (s.loadBit()) s.skip(5)
    if (s.loadBit()) s.skip(2)
    return { code: s.loadMaybeRef(), data: s.loadMaybeRef() }
  } catch {
    return null
  }
}

async function publicKeyOnChain(client: TonChainClient, address: Address, sentStateInit: boolean): Promise<KeyResult> {
  const provider = client.provider(address)
  const state = await askChain('the wallet state', () => provider.getState())
  if (state.state.type !== 'active')
    return {
      ok: false,
      // A stateInit sent but not read: telling its wallet to send it would not help.
      reason: sentStateInit
        ? `the wallet is not deployed and proof.stateInit is not a wallet contract this server reads a key from (${KNOWN_WALLET_VERSIONS.join(', ')}); deploy the wallet first`
        : 'the wallet is not deployed; send its stateInit with the proof',
    }
  try {
    const { stack } = await askChain('get_public_key', () => provider.get('get_public_key', []))
    const n = stack.readBigNumber()
    if (n < 0n || n >= 1n << 256n) return { ok: false, reason: 'get_public_key returned no 256-bit key' }
    return { ok: true, publicKey: Buffer.from(n.toString(16).padStart(64, '0'), 'hex') }
  } catch (e) {
    if (e instanceof ApiError) throw e
    if (getMethodExitCode(e) !== undefined)
      return { ok: false, reason: 'the contract at this address has no get_public_key; it is not a known wallet' }
    // A stack that is not one integer: the contract answered, but not like a wallet.
    return { ok: false, reason: 'get_public_key did not return a key' }
  }
}
