/**
 * Turns LiteSVM's native values into the JSON a Solana RPC node returns: accounts in each encoding,
 * SPL token state as `jsonParsed`, transaction errors by name. Used by the facade in solanaRpc.ts.
 */
import { FailedTransactionMetadata, type TransactionMetadata } from 'litesvm'
import { getBase58Decoder, getBase64Decoder, type Address, type EncodedAccount, type MaybeEncodedAccount } from '@solana/kit'
import { getMintDecoder, getTokenDecoder, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'

/** Hard-coded: @solana-program/token-2022 peers kit 7 and cannot be installed beside kit 8. */
export const TOKEN_2022_PROGRAM_ADDRESS = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb' as Address
export const TOKEN_PROGRAMS: readonly string[] = [TOKEN_PROGRAM_ADDRESS, TOKEN_2022_PROGRAM_ADDRESS]
const U64_MAX = 2n ** 64n - 1n

export const base58 = (bytes: Uint8Array): string => getBase58Decoder().decode(bytes)
export const base64 = (bytes: Uint8Array): string => getBase64Decoder().decode(bytes)

/** JSON with bigints as bare integers: kit parses RPC responses bigint-safely and expects them so. */
export const stringify = (value: unknown): string =>
  JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `__bigint__${v}` : v)).replace(/"__bigint__(-?\d+)"/g, '$1')

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message)
  }
}

export interface UiTokenAmount {
  amount: string
  decimals: number
  uiAmount: number
  uiAmountString: string
}

export function uiTokenAmount(amount: bigint, decimals: number): UiTokenAmount {
  const digits = amount.toString().padStart(decimals + 1, '0')
  const text = decimals ? `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`.replace(/\.?0+$/, '') : digits
  return { amount: amount.toString(), decimals, uiAmount: Number(text), uiAmountString: text }
}

type Lookup = (a: Address) => MaybeEncodedAccount
export type ParsedTokenState =
  | { type: 'mint'; info: Record<string, unknown> & { decimals: number } }
  | { type: 'account'; info: { mint: Address; owner: Address; tokenAmount: UiTokenAmount } & Record<string, unknown> }

/** SPL token state; Token-2022 accounts longer than the base layout carry their kind at byte 165. */
export function parseTokenState(data: Uint8Array, lookup: Lookup): ParsedTokenState | null {
  const kind = data.length === 82 ? 'mint' : data.length === 165 ? 'account' : data[165] === 1 ? 'mint' : data[165] === 2 ? 'account' : null
  if (kind === 'mint') {
    const m = getMintDecoder().decode(data.subarray(0, 82))
    const some = <T>(o: { __option: 'Some'; value: T } | { __option: 'None' }) => (o.__option === 'Some' ? o.value : null)
    return {
      type: 'mint',
      info: {
        decimals: m.decimals,
        freezeAuthority: some(m.freezeAuthority),
        isInitialized: m.isInitialized,
        mintAuthority: some(m.mintAuthority),
        supply: m.supply.toString(),
      },
    }
  }
  if (kind === 'account') {
    const t = getTokenDecoder().decode(data.subarray(0, 165))
    const mint = lookup(t.mint)
    const decimals = mint.exists ? getMintDecoder().decode(mint.data.subarray(0, 82)).decimals : 0
    return {
      type: 'account',
      info: {
        isNative: t.isNative.__option === 'Some',
        mint: t.mint,
        owner: t.owner,
        state: ['uninitialized', 'initialized', 'frozen'][t.state] ?? 'uninitialized',
        tokenAmount: uiTokenAmount(t.amount, decimals),
      },
    }
  }
  return null
}

/** An account as the RPC shows it; `null` for one that does not exist. */
export function encodeAccount(account: MaybeEncodedAccount | EncodedAccount, encoding: string | undefined, lookup: Lookup, dataSlice?: { offset: number; length: number }) {
  if ('exists' in account && !account.exists) return null
  const whole = new Uint8Array(account.data)
  // As a node slices: the data only (space stays the account's), never parsed.
  const data = dataSlice ? whole.slice(dataSlice.offset, dataSlice.offset + dataSlice.length) : whole
  const base = {
    executable: account.executable,
    lamports: account.lamports,
    owner: account.programAddress,
    rentEpoch: U64_MAX,
    space: BigInt(whole.length),
  }
  if (encoding === 'jsonParsed' && !dataSlice && TOKEN_PROGRAMS.includes(account.programAddress)) {
    const parsed = parseTokenState(data, lookup)
    const program = account.programAddress === TOKEN_PROGRAM_ADDRESS ? 'spl-token' : 'spl-token-2022'
    if (parsed) return { ...base, data: { program, parsed, space: BigInt(data.length) } }
  }
  if (encoding === 'base58') return { ...base, data: [base58(data), 'base58'] }
  // Like a real node, jsonParsed falls back to base64 for accounts it cannot parse.
  return { ...base, data: [base64(data), 'base64'] }
}

// litesvm reports errors as napi const-enum numbers; the RPC reports their Rust variant names.
const INSTRUCTION_ERRORS = `GenericError InvalidArgument InvalidInstructionData InvalidAccountData AccountDataTooSmall
  InsufficientFunds IncorrectProgramId MissingRequiredSignature AccountAlreadyInitialized UninitializedAccount
  UnbalancedInstruction ModifiedProgramId ExternalAccountLamportSpend ExternalAccountDataModified ReadonlyLamportChange
  ReadonlyDataModified DuplicateAccountIndex ExecutableModified RentEpochModified NotEnoughAccountKeys
  AccountDataSizeChanged AccountNotExecutable AccountBorrowFailed AccountBorrowOutstanding DuplicateAccountOutOfSync
  InvalidError ExecutableDataModified ExecutableLamportChange ExecutableAccountNotRentExempt UnsupportedProgramId
  CallDepth MissingAccount ReentrancyNotAllowed MaxSeedLengthExceeded InvalidSeeds InvalidRealloc
  ComputationalBudgetExceeded PrivilegeEscalation ProgramEnvironmentSetupFailure ProgramFailedToComplete
  ProgramFailedToCompile Immutable IncorrectAuthority AccountNotRentExempt InvalidAccountOwner ArithmeticOverflow
  UnsupportedSysvar IllegalOwner MaxAccountsDataAllocationsExceeded MaxAccountsExceeded
  MaxInstructionTraceLengthExceeded BuiltinProgramsMustConsumeComputeUnits BorshIoError`.split(/\s+/)
const TRANSACTION_ERRORS = `AccountInUse AccountLoadedTwice AccountNotFound ProgramAccountNotFound InsufficientFundsForFee
  InvalidAccountForFee AlreadyProcessed BlockhashNotFound CallChainTooDeep MissingSignatureForFee InvalidAccountIndex
  SignatureFailure InvalidProgramForExecution SanitizeFailure ClusterMaintenance AccountBorrowOutstanding
  WouldExceedMaxBlockCostLimit UnsupportedVersion InvalidWritableAccount WouldExceedMaxAccountCostLimit
  WouldExceedAccountDataBlockLimit TooManyAccountLocks AddressLookupTableNotFound InvalidAddressLookupTableOwner
  InvalidAddressLookupTableData InvalidAddressLookupTableIndex InvalidRentPayingAccount WouldExceedMaxVoteCostLimit
  WouldExceedAccountDataTotalLimit MaxLoadedAccountsDataSizeExceeded ResanitizationNeeded
  InvalidLoadedAccountsDataSizeLimit UnbalancedTransaction ProgramCacheHitMaxLimit CommitCancelled`.split(/\s+/)

export function transactionErrorJson(e: unknown): unknown {
  if (typeof e === 'number') return TRANSACTION_ERRORS[e] ?? `Unknown(${e})`
  const err = e as { index?: number; accountIndex?: number; err?: () => unknown; constructor: { name: string } }
  if (typeof err.err === 'function') {
    const inner = err.err() as number | { code?: number; msg?: string }
    const json =
      typeof inner === 'number'
        ? (INSTRUCTION_ERRORS[inner] ?? `Unknown(${inner})`)
        : inner.code !== undefined
          ? { Custom: inner.code }
          : { BorshIoError: inner.msg }
    return { InstructionError: [err.index, json] }
  }
  if (err.accountIndex !== undefined)
    return { [err.constructor.name.replace(/^TransactionError/, '')]: { account_index: err.accountIndex } }
  if (err.index !== undefined) return { DuplicateInstruction: err.index }
  return String(e)
}

/** Errors a node raises before execution: such a transaction never lands, so it has no status. */
export const landsOnChain = (err: unknown): boolean => err === null || typeof err === 'object'

/** The `simulateTransaction` / preflight value: error, logs, compute units, return data. */
export function executionResult(result: TransactionMetadata | FailedTransactionMetadata) {
  const failed = result instanceof FailedTransactionMetadata
  const meta = failed ? result.meta() : result
  const returned = meta.returnData()
  return {
    err: failed ? transactionErrorJson(result.err()) : null,
    logs: meta.logs(),
    unitsConsumed: meta.computeUnitsConsumed(),
    accounts: null,
    returnData: returned.data().length
      ? { programId: base58(returned.programId()), data: [base64(returned.data()), 'base64'] }
      : null,
  }
}
