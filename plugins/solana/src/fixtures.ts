/**
 * Test wallets: real ed25519 key pairs that sign the way Solana wallets' `signMessage` does
 * (a detached ed25519 signature over the message's UTF-8 bytes).
 */
import { ed25519 } from '@noble/curves/ed25519.js'
import { getBase58Decoder, getBase64Decoder } from '@solana/kit'

export interface TestWallet {
  address: string
  publicKey: Uint8Array
  signBytes(message: string): Uint8Array
  /** The `signature` field as most wallets' apps send it. */
  sign(message: string): string
  signBase64(message: string): string
}

export const toBase58 = (bytes: Uint8Array): string => getBase58Decoder().decode(bytes)
export const toBase64 = (bytes: Uint8Array): string => getBase64Decoder().decode(bytes)

export function newWallet(): TestWallet {
  const secretKey = ed25519.utils.randomSecretKey()
  const publicKey = ed25519.getPublicKey(secretKey)
  const signBytes = (message: string) => ed25519.sign(new TextEncoder().encode(message), secretKey)
  return {
    address: toBase58(publicKey),
    publicKey,
    signBytes,
    sign: (message) => toBase58(signBytes(message)),
    signBase64: (message) => toBase64(signBytes(message)),
  }
}

/** The identity point: a small-order key for which R = identity, S = 0 "signs" any message. */
export const IDENTITY_KEY = new Uint8Array(32).fill(0).with(0, 1)
export const IDENTITY_FORGERY = new Uint8Array(64).fill(0).with(0, 1)
