/**
 * Balances in smallest units: lamports for SOL, base units for SPL tokens.
 */
import { InvalidArgumentError, type BalanceParameters } from '@earn/core'
import { address, getAddressEncoder, isSolanaError, SOLANA_ERROR__JSON_RPC__INVALID_PARAMS, type Address, type Rpc, type SolanaRpcApi } from '@solana/kit'
import { TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { parseAddress } from './address.ts'
import { AnswerTooLargeError } from './answers.ts'
import type { SolanaClient } from './client.ts'
import { clusterRpc } from './cluster.ts'
import { COMMITMENT, deadline, rpcFailure } from './rpc.ts'
import { TOKEN_2022_PROGRAM_ADDRESS } from './token.ts'

/** A token account's amount: a little-endian u64 after the mint and the owner (32 bytes each). */
export const TOKEN_AMOUNT_SLICE = { offset: 64, length: 8 }
/** A token account's mint, owner and amount: its first 72 bytes, in Token's layout and Token-2022's. */
export const TOKEN_HEAD_SLICE = { offset: 0, length: 72 }

/**
 * From this many mints of one owner asked in bulk in one turn of the event loop (a portfolio's balances, `inBulk`),
 * the owner's token accounts are read once per token program, two requests, rather than once per mint: a catalog of
 * 200 mints made 200 requests a portfolio, a round trip per 128 of them (the client's cap), each a call a provider
 * bills. Fewer keep to their mint (an owner's accounts of every mint may be many more bytes), as a build's or a
 * stream's preflight always does: its 400 for a mint that is none must not turn into "insufficient token balance"
 * because a portfolio of the same wallet was read meanwhile (an audit).
 */
export const PROGRAM_WIDE_FROM = 4

const u64 = (bytes: Buffer, offset: number): bigint => bytes.readBigUInt64LE(offset)

/** `chainId` must be the cluster the RPC serves (cluster.ts). */
export async function readBalance(client: SolanaClient, p: BalanceParameters): Promise<bigint> {
  const owner = address(parseAddress(p.owner, 'owner'))
  const mint = p.token === 'native' ? undefined : address(parseAddress(p.token, 'token'))
  const rpc = await clusterRpc(client, p.chainId, 'Solana balances')
  if (mint) return p.inBulk ? tokenBalance(rpc, owner, mint) : mintBalance(rpc, owner, mint)
  try {
    return (await rpc.getBalance(owner, { commitment: COMMITMENT }).send({ abortSignal: deadline() })).value
  } catch (e) {
    throw rpcFailure(e)
  }
}

interface Asked {
  mint: Address
  resolve(amount: bigint): void
  reject(error: unknown): void
}

// Per RPC handle: the token balances asked in this turn of the event loop, by owner.
const asking = new WeakMap<object, Map<Address, Asked[]>>()

function tokenBalance(rpc: Rpc<SolanaRpcApi>, owner: Address, mint: Address): Promise<bigint> {
  return new Promise((resolve, reject) => {
    let tick = asking.get(rpc)
    if (!tick) {
      const asked = (tick = new Map())
      asking.set(rpc, asked)
      // setImmediate, not a microtask: a portfolio's reads each await the cluster check first, in microtasks of their own.
      setImmediate(() => {
        asking.delete(rpc)
        for (const [owner, reads] of asked) answer(rpc, owner, reads)
      })
    }
    const reads = tick.get(owner)
    if (reads) reads.push({ mint, resolve, reject })
    else tick.set(owner, [{ mint, resolve, reject }])
  })
}

function answer(rpc: Rpc<SolanaRpcApi>, owner: Address, reads: readonly Asked[]): void {
  const eachAlone = () => {
    for (const r of reads) mintBalance(rpc, owner, r.mint).then(r.resolve, r.reject)
  }
  if (new Set(reads.map((r) => r.mint)).size < PROGRAM_WIDE_FROM) return eachAlone()
  programWide(rpc, owner).then(
    (amounts) => {
      const encode = getAddressEncoder()
      for (const r of reads) r.resolve(amounts.get(Buffer.from(encode.encode(r.mint)).toString('hex')) ?? 0n)
    },
    (e: unknown) => {
      // Every account of the owner is more than an answer may carry (anyone may open token accounts for anyone):
      // the mints asked, each on its own, may still fit.
      if (e instanceof AnswerTooLargeError) return eachAlone()
      const failure = rpcFailure(e)
      for (const r of reads) r.reject(failure)
    },
  )
}

/**
 * Every token account of the owner for the mint, not only the associated one: tokens in a second account are still
 * the wallet's. The mint filter also covers Token-2022 mints. Only each account's amount is asked for (8 bytes at
 * offset 64, in Token's layout and Token-2022's): anyone may open token accounts for any owner, and thousands of them
 * whole (~510 bytes each, parsed) would pass the answer limit.
 */
async function mintBalance(rpc: Rpc<SolanaRpcApi>, owner: Address, mint: Address): Promise<bigint> {
  try {
    const { value } = await rpc
      .getTokenAccountsByOwner(owner, { mint }, { encoding: 'base64', dataSlice: TOKEN_AMOUNT_SLICE, commitment: COMMITMENT })
      .send({ abortSignal: deadline() })
    return value.reduce((sum, { account }) => sum + u64(Buffer.from(account.data[0], 'base64'), 0), 0n)
  } catch (e) {
    // Our parameters are well-formed, so the node refusing them means it knows no such mint.
    if (isSolanaError(e, SOLANA_ERROR__JSON_RPC__INVALID_PARAMS))
      throw new InvalidArgumentError(`token ${mint} is not an SPL token mint on this Solana cluster`, {
        token: 'not a token mint on this cluster',
      })
    throw rpcFailure(e)
  }
}

/**
 * The owner's amounts per mint (hex of the mint's 32 bytes) over all its accounts of both token programs. A mint
 * asked for that the owner holds no account of reads 0, as a mint that is none does here (asked alone, the node
 * refuses that one: a 400).
 */
async function programWide(rpc: Rpc<SolanaRpcApi>, owner: Address): Promise<Map<string, bigint>> {
  const abortSignal = deadline()
  const answers = await Promise.all(
    [TOKEN_PROGRAM_ADDRESS, TOKEN_2022_PROGRAM_ADDRESS].map((programId) =>
      rpc.getTokenAccountsByOwner(owner, { programId }, { encoding: 'base64', dataSlice: TOKEN_HEAD_SLICE, commitment: COMMITMENT }).send({ abortSignal }),
    ),
  )
  const amounts = new Map<string, bigint>()
  for (const { value } of answers)
    for (const { account } of value) {
      const head = Buffer.from(account.data[0], 'base64')
      const mint = head.subarray(0, 32).toString('hex')
      amounts.set(mint, (amounts.get(mint) ?? 0n) + u64(head, 64))
    }
  return amounts
}
