/**
 * An SPL mint and its owners' associated token accounts, read in one `getMultipleAccounts` call.
 *
 * The associated account's address depends on the token program (Token or Token-2022), which only
 * the mint's owner tells. Rather than a second round trip after reading the mint, both candidates
 * are derived (a local hash, no I/O) and fetched with it; the mint's owner then picks the right one.
 */
import { InvalidArgumentError } from '@earn/core'
import { fetchEncodedAccounts, type Address, type MaybeEncodedAccount, type Rpc, type SolanaRpcApi } from '@solana/kit'
import { AccountState, findAssociatedTokenPda, getMintDecoder, getTokenDecoder, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { MalformedAnswerError } from './answers.ts'
import { COMMITMENT } from './rpc.ts'

/** Hard-coded: @solana-program/token-2022 peers kit 7 and cannot be installed beside kit 8. */
export const TOKEN_2022_PROGRAM_ADDRESS = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb' as Address
const TOKEN_PROGRAMS = [TOKEN_PROGRAM_ADDRESS, TOKEN_2022_PROGRAM_ADDRESS] as const

const SYSTEM_PROGRAM_ADDRESS = '11111111111111111111111111111111' as Address
const MINT_SIZE = 82
const TOKEN_ACCOUNT_SIZE = 165
/** Token-2022 writes the account kind after the base layout when extensions follow; 1 is a mint. */
const ACCOUNT_TYPE_MINT = 1

export interface TokenAccount {
  address: Address
  /** Undefined while the account does not exist. */
  amount: bigint | undefined
  /** Who the account's tokens belong to (the wallet may have handed its account to another); undefined with `amount`. */
  owner: Address | undefined
  /** Frozen by the mint's freeze authority: nothing moves in or out of it. */
  frozen: boolean
  /**
   * Lamports already at the address while the account does not exist: anyone may send SOL to an associated account's
   * address before it is created, and the creation then takes them as part of its rent.
   */
  lamports: bigint
}

export interface MintWithAccounts {
  mint: Address
  /** The request field that named the mint, for a 400 about it. */
  field: string
  tokenProgram: Address
  decimals: number
  /** Bytes of a new associated token account for this mint, whose rent its creator pays (see `newAccountSize`). */
  accountSize: number
  /** The associated token account of each owner, in the order asked. */
  accounts: TokenAccount[]
  /**
   * Why no transfer of this mint can land now, when none can: a Token-2022 mint that is non-transferable, paused, or
   * hooked to a transfer-hook program (whose extra accounts a transfer must carry, which this server does not add).
   */
  untransferable: string | undefined
  /** New accounts of this mint start frozen (Token-2022 DefaultAccountState): one a transfer creates cannot receive. */
  newAccountsFrozen: boolean
  /**
   * What a transfer of `amount` pays the mint's Token-2022 transfer fee at most, landing in `epoch` or later: the newer
   * fee from its epoch on, and before it the larger of the older and the newer (a transaction built now may land in
   * either epoch). 0 for a mint without a fee. `epoch` is asked of the chain only where it decides the answer.
   */
  transferFee(amount: bigint, epoch: () => Promise<bigint>): Promise<bigint>
  /**
   * The fee a transfer of `amount` pays landing in this epoch, and another one scheduled from a later epoch (the
   * newer fee, where it differs): a transaction built now may land in either.
   */
  transferFeeSchedule(amount: bigint, epoch: () => Promise<bigint>): Promise<{ now: bigint; later?: { epoch: bigint; fee: bigint } }>
}

export interface ReadMintParameters {
  mint: Address
  owners: readonly Address[]
  /** The request field that named the mint, for the 400 when it is none. */
  field: string
  abortSignal: AbortSignal
}

export async function readMintWithAccounts(rpc: Rpc<SolanaRpcApi>, p: ReadMintParameters): Promise<MintWithAccounts> {
  const candidates = await Promise.all(
    TOKEN_PROGRAMS.flatMap((tokenProgram) =>
      p.owners.map(async (owner) => (await findAssociatedTokenPda({ owner, mint: p.mint, tokenProgram }))[0]),
    ),
  )
  const [mintAccount, ...found] = await fetchEncodedAccounts(rpc, [p.mint, ...candidates], {
    abortSignal: p.abortSignal,
    commitment: COMMITMENT,
  })
  const { tokenProgram, decimals, extensions, fees, untransferable, newAccountsFrozen } = decodeMint(mintAccount!, p.field)
  const offset = TOKEN_PROGRAMS.indexOf(tokenProgram as (typeof TOKEN_PROGRAMS)[number]) * p.owners.length
  const accounts = p.owners.map((owner, i): TokenAccount => {
    const account = found[offset + i]!
    if (!account.exists) return { address: account.address, amount: undefined, owner: undefined, frozen: false, lamports: 0n }
    // SOL sent to the address before the account was made: still the System program's, empty.
    if (account.programAddress === SYSTEM_PROGRAM_ADDRESS && account.data.length === 0)
      return { address: account.address, amount: undefined, owner: undefined, frozen: false, lamports: account.lamports }
    // Only the associated token program can make an account at this address, and only a token account of this mint.
    if (account.programAddress !== tokenProgram || account.data.length < TOKEN_ACCOUNT_SIZE)
      throw new InvalidArgumentError(`the associated account ${account.address} of ${owner} for token ${p.mint} is held by ${account.programAddress}, not a token account`, {
        [p.field]: 'associated account is not a token account',
      })
    const decoded = decodeTokenAccount(account.data)
    return { address: account.address, amount: decoded.amount, owner: decoded.owner, frozen: decoded.state === AccountState.Frozen, lamports: account.lamports }
  })
  return {
    mint: p.mint,
    field: p.field,
    untransferable,
    newAccountsFrozen,
    tokenProgram,
    decimals,
    accountSize: newAccountSize(tokenProgram, extensions),
    accounts,
    async transferFee(amount, epoch) {
      if (!fees) return 0n
      const [older, newer] = [feeOf(fees.older, amount), feeOf(fees.newer, amount)]
      // The newer fee is in force from its epoch on: the older one matters only before it.
      if (older <= newer || (await epoch()) >= fees.newer.epoch) return newer
      return older
    },
    async transferFeeSchedule(amount, epoch) {
      if (!fees) return { now: 0n }
      const newer = feeOf(fees.newer, amount)
      if ((await epoch()) >= fees.newer.epoch) return { now: newer }
      const now = feeOf(fees.older, amount)
      return now === newer ? { now } : { now, later: { epoch: fees.newer.epoch, fee: newer } }
    },
  }
}

/** The node's bytes of a token account (a state byte past the enum's, say) that are none: the node's failure, a 503. */
function decodeTokenAccount(data: Uint8Array) {
  try {
    return getTokenDecoder().decode(data.subarray(0, TOKEN_ACCOUNT_SIZE))
  } catch (e) {
    throw new MalformedAnswerError(`the Solana RPC answered a token account that does not decode (${e instanceof Error ? e.message.split('\n')[0] : 'undecodable'})`)
  }
}

/** One of a TransferFeeConfig's two fees (older: in force until the newer's epoch). */
interface TransferFee {
  epoch: bigint
  maximumFee: bigint
  basisPoints: bigint
}

/** spl-token-2022's `calculate_fee`: the rate rounded up, capped at the maximum. */
function feeOf(fee: TransferFee, amount: bigint): bigint {
  if (fee.basisPoints === 0n || amount === 0n) return 0n
  const raw = (amount * fee.basisPoints + 9_999n) / 10_000n
  return raw < fee.maximumFee ? raw : fee.maximumFee
}

/** TransferFeeConfig (108 bytes): two authorities (32 each) and the withheld amount (8), then the older and the newer fee (epoch u64, maximum u64, bps u16). */
const TRANSFER_FEE_CONFIG = 1
const TRANSFER_FEE_CONFIG_LENGTH = 108

function transferFees(view: DataView, at: number): TransferFees {
  const fee = (from: number): TransferFee => ({
    epoch: view.getBigUint64(from, true),
    maximumFee: view.getBigUint64(from + 8, true),
    basisPoints: BigInt(view.getUint16(from + 16, true)),
  })
  return { older: fee(at + 72), newer: fee(at + 90) }
}

type TransferFees = { older: TransferFee; newer: TransferFee }

/**
 * The account extension each mint extension makes every new account of the mint carry (spl-token-2022's required
 * account extensions), in bytes with its 4-byte type and length header: TransferFeeConfig (1) gives
 * TransferFeeAmount, NonTransferable (9) NonTransferableAccount, TransferHook (14) TransferHookAccount, Pausable (26)
 * PausableAccount. Other mint extensions (metadata, pointers, interest, confidential transfers, whose account parts
 * come when the owner configures them) add nothing to a new account; checked against the program for types 1-28.
 */
const ACCOUNT_BYTES_FOR_MINT_EXTENSION: Readonly<Record<number, number>> = { 1: 4 + 8, 9: 4, 14: 4 + 1, 26: 4 }

/**
 * A new associated account's size, whose rent its creator pays: Token's are 165 bytes; Token-2022's carry the account
 * type byte and ImmutableOwner (170), and what the mint's extensions require (exact: Solana refuses a transaction
 * that leaves its payer's lamports short of, or stranded just above, what the rent really was).
 */
export function newAccountSize(tokenProgram: Address, mintExtensions: readonly number[]): number {
  if (tokenProgram !== TOKEN_2022_PROGRAM_ADDRESS) return TOKEN_ACCOUNT_SIZE
  return TOKEN_ACCOUNT_SIZE + 1 + 4 + [...new Set(mintExtensions)].reduce((sum, type) => sum + (ACCOUNT_BYTES_FOR_MINT_EXTENSION[type] ?? 0), 0)
}

/** Token-2022 mint extensions that decide whether a transfer can land (spl-token-2022's ExtensionType numbers). */
const DEFAULT_ACCOUNT_STATE = 6
const NON_TRANSFERABLE = 9
/** TransferHook: authority, then the hook program (32 bytes each; all zero: none). */
const TRANSFER_HOOK = 14
/** Pausable: authority (32 bytes), then `paused` (1 byte). */
const PAUSABLE = 26

interface Extensions {
  types: number[]
  fees: TransferFees | undefined
  untransferable: string | undefined
  newAccountsFrozen: boolean
}

/** The extension types a Token-2022 mint's data lists (type-length-value entries after the account type byte), and what they decide. */
function readExtensions(data: Uint8Array): Extensions {
  const found: Extensions = { types: [], fees: undefined, untransferable: undefined, newAccountsFrozen: false }
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength)
  for (let at = TOKEN_ACCOUNT_SIZE + 1; at + 4 <= data.length; ) {
    const type = view.getUint16(at, true)
    const length = view.getUint16(at + 2, true)
    // Type 0 is the unused space after the last entry.
    if (type === 0) break
    found.types.push(type)
    const value = at + 4
    const fits = (bytes: number) => length >= bytes && value + bytes <= data.length
    if (type === TRANSFER_FEE_CONFIG && length === TRANSFER_FEE_CONFIG_LENGTH && fits(length)) found.fees = transferFees(view, value)
    else if (type === NON_TRANSFERABLE) found.untransferable ??= 'is non-transferable'
    else if (type === PAUSABLE && fits(33) && data[value + 32] !== 0) found.untransferable ??= 'is paused'
    else if (type === TRANSFER_HOOK && fits(64) && data.subarray(value + 32, value + 64).some((b) => b !== 0))
      found.untransferable ??= 'has a transfer hook program, whose accounts this server does not add'
    else if (type === DEFAULT_ACCOUNT_STATE && fits(1)) found.newAccountsFrozen = data[value] === AccountState.Frozen
    at += 4 + length
  }
  return found
}

function decodeMint(account: MaybeEncodedAccount, field: string): Omit<Extensions, 'types'> & { tokenProgram: Address; decimals: number; extensions: number[] } {
  const notAMint = () =>
    new InvalidArgumentError(`${field} ${account.address} is not an SPL token mint on this Solana cluster`, {
      [field]: 'not a token mint on this cluster',
    })
  if (!account.exists || !(TOKEN_PROGRAMS as readonly string[]).includes(account.programAddress)) throw notAMint()
  const { data } = account
  const isMint = data.length === MINT_SIZE || (data.length > TOKEN_ACCOUNT_SIZE && data[TOKEN_ACCOUNT_SIZE] === ACCOUNT_TYPE_MINT)
  if (!isMint) throw notAMint()
  const mint = getMintDecoder().decode(data.subarray(0, MINT_SIZE))
  if (!mint.isInitialized) throw notAMint()
  const { types, ...decided } = data.length > MINT_SIZE ? readExtensions(data) : { types: [], fees: undefined, untransferable: undefined, newAccountsFrozen: false }
  return { tokenProgram: account.programAddress, decimals: mint.decimals, extensions: types, ...decided }
}
