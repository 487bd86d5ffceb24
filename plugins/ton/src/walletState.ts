/**
 * A wallet's public key from its stateInit. The key sits at a fixed offset in the data cell of each
 * standard wallet, and the code cell says which wallet it is; because the stateInit hashes to the
 * address, a key read here is bound to that address without asking the chain.
 */
import type { Cell, StateInit } from '@ton/core'
import {
  WalletContractV3R1,
  WalletContractV3R2,
  WalletContractV4,
  WalletContractV5Beta,
  WalletContractV5R1,
} from '@ton/ton'

export type WalletVersion = 'v3r1' | 'v3r2' | 'v4r2' | 'v5beta' | 'v5r1'

interface KnownWallet {
  version: WalletVersion
  codeHash: string
  /** Bits in front of the 256-bit key in the data cell. */
  keyOffsetBits: number
}

// The library builds each wallet's code from a constant BOC; a throwaway key only gets us the code cell.
const ZERO_KEY = Buffer.alloc(32)
const codeHash = (code: Cell) => code.hash().toString('hex')

const KNOWN_WALLETS: readonly KnownWallet[] = [
  // seqno:32 subwallet:32 pubkey:256
  { version: 'v3r1', codeHash: codeHash(WalletContractV3R1.create({ workchain: 0, publicKey: ZERO_KEY }).init.code), keyOffsetBits: 64 },
  { version: 'v3r2', codeHash: codeHash(WalletContractV3R2.create({ workchain: 0, publicKey: ZERO_KEY }).init.code), keyOffsetBits: 64 },
  // seqno:32 subwallet:32 pubkey:256 plugins:dict
  { version: 'v4r2', codeHash: codeHash(WalletContractV4.create({ workchain: 0, publicKey: ZERO_KEY }).init.code), keyOffsetBits: 64 },
  // sig_allowed:1 seqno:32 wallet_id:80 pubkey:256 extensions:dict (a library cell as code)
  { version: 'v5beta', codeHash: codeHash(WalletContractV5Beta.create({ publicKey: ZERO_KEY }).init.code), keyOffsetBits: 1 + 32 + 80 },
  // sig_allowed:1 seqno:32 wallet_id:32 pubkey:256 extensions:dict
  { version: 'v5r1', codeHash: codeHash(WalletContractV5R1.create({ publicKey: ZERO_KEY }).init.code), keyOffsetBits: 1 + 32 + 32 },
]

/** The wallet versions whose stateInit gives their key. */
export const KNOWN_WALLET_VERSIONS: readonly WalletVersion[] = KNOWN_WALLETS.map((w) => w.version)

export type WalletKey = { version: WalletVersion; publicKey: Buffer }

/**
 * The key of a known standard wallet, or null when the code is not one we know (or its data is too
 * short to hold a key); the caller then asks the deployed wallet instead. Never throws.
 */
export function publicKeyFromStateInit(init: StateInit): WalletKey | null {
  if (!init.code || !init.data) return null
  const hash = codeHash(init.code)
  const known = KNOWN_WALLETS.find((w) => w.codeHash === hash)
  if (!known) return null
  try {
    const data = init.data.beginParse()
    data.skip(known.keyOffsetBits)
    return { version: known.version, publicKey: data.loadBuffer(32) }
  } catch {
    return null
  }
}
