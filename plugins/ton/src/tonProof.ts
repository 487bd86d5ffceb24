/**
 * The TON Connect `ton_proof` wire format: the proof object a wallet returns, as carried in the
 * membership `signature` field (base64 of its JSON), and the bytes its ed25519 signature covers.
 */
import type { Address } from '@ton/core'
import { sha256_sync } from '@ton/crypto'

/** What a TON Connect wallet returns for `ton_proof`, plus what it reports beside it in `account`. */
export interface TonProof {
  /** Unix seconds. The spec types it as a string, the SDK as a number; both arrive in practice. */
  timestamp: number | string
  domain: { lengthBytes: number; value: string }
  /** base64 of the 64-byte ed25519 signature. */
  signature: string
  payload: string
  /** base64 BoC of the wallet's StateInit (`account.walletStateInit`). */
  stateInit?: string
  /** hex of the wallet's public key, when no stateInit is sent. */
  publicKey?: string
}

export type DecodedProof =
  | {
      ok: true
      timestamp: number
      domain: { lengthBytes: number; value: string }
      signature: Buffer
      payload: string
      stateInit?: string
      publicKey?: Buffer
    }
  | { ok: false; reason: string }

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
const BASE64URL = /^[A-Za-z0-9_-]*$/

/** Strict base64 (or unpadded base64url); Buffer's own decoder skips bad characters silently. */
export function decodeBase64(s: string): Buffer | null {
  if (BASE64.test(s)) return Buffer.from(s, 'base64')
  if (BASE64URL.test(s) && s.length % 4 !== 1) return Buffer.from(s, 'base64url')
  return null
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Parses the `signature` field; every malformed input is a reason, never a throw. */
export function decodeTonProof(field: string): DecodedProof {
  const fail = (reason: string) => ({ ok: false as const, reason })
  const bytes = typeof field === 'string' ? decodeBase64(field) : null
  if (!bytes || bytes.length === 0) return fail('signature is not base64 of a ton_proof JSON object')
  let json: unknown
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch {
    return fail('signature does not decode to JSON; send base64 of the ton_proof object')
  }
  if (!isRecord(json)) return fail('signature does not decode to a ton_proof object')
  const { timestamp, domain, signature, payload, stateInit, publicKey } = json
  const ts = typeof timestamp === 'string' && /^\d{1,15}$/.test(timestamp) ? Number(timestamp) : timestamp
  if (typeof ts !== 'number' || !Number.isSafeInteger(ts) || ts < 0)
    return fail('proof.timestamp must be unix seconds')
  if (!isRecord(domain) || typeof domain.value !== 'string' || typeof domain.lengthBytes !== 'number')
    return fail('proof.domain must be {lengthBytes, value}')
  if (typeof payload !== 'string') return fail('proof.payload must be a string')
  const sig = typeof signature === 'string' ? decodeBase64(signature) : null
  if (!sig || sig.length !== 64) return fail('proof.signature must be base64 of 64 bytes')
  if (stateInit !== undefined && (typeof stateInit !== 'string' || stateInit.length === 0))
    return fail('proof.stateInit must be a base64 BoC')
  let key: Buffer | undefined
  if (publicKey !== undefined) {
    if (typeof publicKey !== 'string' || !/^[0-9a-fA-F]{64}$/.test(publicKey))
      return fail('proof.publicKey must be 64 hex digits')
    key = Buffer.from(publicKey, 'hex')
  }
  return {
    ok: true,
    timestamp: ts,
    domain: { lengthBytes: domain.lengthBytes, value: domain.value },
    signature: sig,
    payload,
    ...(stateInit === undefined ? {} : { stateInit }),
    ...(key === undefined ? {} : { publicKey: key }),
  }
}

/**
 * The 32 bytes a wallet signs for `ton_proof`:
 *   sha256(0xffff ++ "ton-connect" ++ sha256("ton-proof-item-v2/" ++ wc:int32 BE ++ hash:32
 *          ++ domainLen:uint32 LE ++ domain ++ timestamp:uint64 LE ++ payload))
 * The mixed endianness is the spec's, not a slip; wallets sign exactly this.
 */
export function tonProofHash(address: Address, domain: string, timestamp: number, payload: string): Buffer {
  const wc = Buffer.alloc(4)
  wc.writeInt32BE(address.workChain)
  const domainBytes = Buffer.from(domain, 'utf8')
  const domainLen = Buffer.alloc(4)
  domainLen.writeUInt32LE(domainBytes.length)
  const ts = Buffer.alloc(8)
  ts.writeBigUInt64LE(BigInt(timestamp))
  const message = Buffer.concat([
    Buffer.from('ton-proof-item-v2/', 'utf8'),
    wc,
    address.hash,
    domainLen,
    domainBytes,
    ts,
    Buffer.from(payload, 'utf8'),
  ])
  return sha256_sync(Buffer.concat([Buffer.from([0xff, 0xff]), Buffer.from('ton-connect', 'utf8'), sha256_sync(message)]))
}
