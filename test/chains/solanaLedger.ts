/**
 * What the facade remembers of each landed transaction, and how `getTransaction` shows it in each
 * encoding. Keeping the exact bytes lets later attribution checks read a deposit as a node would.
 */
import { SUPPORTED_MEMO_PROGRAM_ADDRESSES } from '@solana-program/memo'
import { getBase58Encoder, getCompiledTransactionMessageDecoder, getTransactionDecoder, type Address } from '@solana/kit'
import { base58, base64, RpcError, type UiTokenAmount } from './solanaCodecs.ts'

export interface TokenBalance {
  accountIndex: number
  mint: Address
  owner: Address
  programId: Address
  uiTokenAmount: UiTokenAmount
}

export interface LandedTransaction {
  signature: string
  slot: bigint
  blockTime: bigint
  err: unknown
  /** Absent for airdrops, which LiteSVM performs without a transaction we hold. */
  wire?: Uint8Array
  fee?: bigint
  preBalances?: bigint[]
  postBalances?: bigint[]
  preTokenBalances?: TokenBalance[]
  postTokenBalances?: TokenBalance[]
  logs?: string[]
  unitsConsumed?: bigint
  innerInstructions?: { index: number; instructions: { programIdIndex: number; accounts: number[]; data: string; stackHeight: number }[] }[]
}

const decodeMessage = (wire: Uint8Array) => getCompiledTransactionMessageDecoder().decode(getTransactionDecoder().decode(wire).messageBytes)

function transactionJson(wire: Uint8Array, encoding: string) {
  if (encoding === 'base64') return [base64(wire), 'base64']
  if (encoding === 'base58') return [base58(wire), 'base58']
  const tx = getTransactionDecoder().decode(wire)
  const m = decodeMessage(wire)
  if (m.version === 1) throw new RpcError(-32602, 'the LiteSVM facade encodes only legacy and v0 transactions as JSON')
  const signatures = Object.values(tx.signatures).map((s) => (s ? base58(s) : null))
  const lookups = m.version === 0 && m.addressTableLookups?.length
    ? { addressTableLookups: m.addressTableLookups.map((l) => ({ accountKey: l.lookupTableAddress, writableIndexes: l.writableIndexes, readonlyIndexes: l.readonlyIndexes })) }
    : {}
  const h = m.header
  const writable = (i: number) =>
    i < h.numSignerAccounts ? i < h.numSignerAccounts - h.numReadonlySignerAccounts : i < m.staticAccounts.length - h.numReadonlyNonSignerAccounts
  const instructions = m.instructions.map((ix) => ({
    programIdIndex: ix.programAddressIndex,
    accounts: ix.accountIndices ?? [],
    data: base58(new Uint8Array(ix.data ?? [])),
  }))
  if (encoding !== 'jsonParsed')
    return {
      signatures,
      message: {
        accountKeys: m.staticAccounts,
        header: { numRequiredSignatures: h.numSignerAccounts, numReadonlySignedAccounts: h.numReadonlySignerAccounts, numReadonlyUnsignedAccounts: h.numReadonlyNonSignerAccounts },
        recentBlockhash: m.lifetimeToken,
        instructions: instructions.map((ix) => ({ ...ix, stackHeight: null })),
        ...lookups,
      },
    }
  // Memos are parsed (attribution tags ride in them); other programs stay partially decoded, which
  // is what a node returns for programs it has no parser for.
  return {
    signatures,
    message: {
      accountKeys: m.staticAccounts.map((pubkey, i) => ({ pubkey, signer: i < h.numSignerAccounts, writable: writable(i), source: 'transaction' })),
      recentBlockhash: m.lifetimeToken,
      instructions: instructions.map((ix) => {
        const programId = m.staticAccounts[ix.programIdIndex]!
        if ((SUPPORTED_MEMO_PROGRAM_ADDRESSES as readonly string[]).includes(programId))
          return { program: 'spl-memo', programId, parsed: new TextDecoder().decode(getBase58Encoder().encode(ix.data)), stackHeight: null }
        return { programId, accounts: ix.accounts.map((a) => m.staticAccounts[a]), data: ix.data, stackHeight: null }
      }),
      ...lookups,
    },
  }
}

/** The `getTransaction` result for a recorded transaction, honouring `encoding` and the version gate. */
export function transactionResponse(entry: LandedTransaction & { wire: Uint8Array }, cfg: unknown) {
  const options = (typeof cfg === 'string' ? { encoding: cfg } : (cfg ?? {})) as { encoding?: string; maxSupportedTransactionVersion?: number }
  const version = decodeMessage(entry.wire).version
  if (version !== 'legacy' && options.maxSupportedTransactionVersion === undefined)
    throw new RpcError(-32015, `Transaction version (${version}) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0`)
  return {
    slot: entry.slot,
    blockTime: entry.blockTime,
    version,
    transaction: transactionJson(entry.wire, options.encoding ?? 'json'),
    meta: {
      err: entry.err,
      status: entry.err ? { Err: entry.err } : { Ok: null },
      fee: entry.fee,
      preBalances: entry.preBalances,
      postBalances: entry.postBalances,
      preTokenBalances: entry.preTokenBalances,
      postTokenBalances: entry.postTokenBalances,
      innerInstructions: entry.innerInstructions,
      logMessages: entry.logs,
      computeUnitsConsumed: entry.unitsConsumed,
      loadedAddresses: { writable: [], readonly: [] },
      rewards: [],
    },
  }
}
