/**
 * Balances in smallest units: lamports for SOL, base units for SPL tokens.
 */
import { InvalidArgumentError, type BalanceParameters } from '@earn/core'
import { address, isSolanaError, SOLANA_ERROR__JSON_RPC__INVALID_PARAMS } from '@solana/kit'
import { parseAddress } from './address.ts'
import type { SolanaClient } from './client.ts'
import { clusterRpc } from './cluster.ts'
import { COMMITMENT, deadline, rpcFailure } from './rpc.ts'

/** A token account's amount: a little-endian u64 after the mint and the owner (32 bytes each). */
export const TOKEN_AMOUNT_SLICE = { offset: 64, length: 8 }
const u64 = (base64: string): bigint => Buffer.from(base64, 'base64').readBigUInt64LE(0)

/** `chainId` must be the cluster the RPC serves (cluster.ts). */
export async function readBalance(client: SolanaClient, p: BalanceParameters): Promise<bigint> {
  const owner = address(parseAddress(p.owner, 'owner'))
  const mint = p.token === 'native' ? undefined : address(parseAddress(p.token, 'token'))
  const rpc = await clusterRpc(client, p.chainId, 'Solana balances')
  const abortSignal = deadline()
  try {
    if (!mint) return (await rpc.getBalance(owner, { commitment: COMMITMENT }).send({ abortSignal })).value
    // Every token account of the owner for the mint, not only the associated one: tokens in a
    // second account are still the wallet's. The mint filter also covers Token-2022 mints. Only each account's
    // amount is asked for (8 bytes at offset 64, in Token's layout and Token-2022's): anyone may open token accounts
    // for any owner, and thousands of them whole (~510 bytes each, parsed) would pass the answer limit.
    const { value } = await rpc
      .getTokenAccountsByOwner(owner, { mint }, { encoding: 'base64', dataSlice: TOKEN_AMOUNT_SLICE, commitment: COMMITMENT })
      .send({ abortSignal })
    return value.reduce((sum, { account }) => sum + u64(account.data[0]), 0n)
  } catch (e) {
    // Our parameters are well-formed, so the node refusing them means it knows no such mint (for SOL, a broken node).
    if (mint && isSolanaError(e, SOLANA_ERROR__JSON_RPC__INVALID_PARAMS))
      throw new InvalidArgumentError(`token ${mint} is not an SPL token mint on this Solana cluster`, {
        token: 'not a token mint on this cluster',
      })
    throw rpcFailure(e)
  }
}
