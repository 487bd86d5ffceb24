/**
 * A tagged transfer (a reward stream's funding): SOL by the System program, or an SPL token by
 * `transferChecked` into the recipient's associated account (created idempotently when the read finds
 * it missing, as deposits do), with the tag in a Memo. One unsigned v0 transaction, the sender paying
 * the fee. Reading it back is readTransfers.ts.
 */
import { InvalidArgumentError, NATIVE_TOKEN, UnfitRecipientError, type TransferParameters, type UnsignedTransaction } from '@earn/core'
import { address, createNoopSigner, type Instruction } from '@solana/kit'
import { getTransferSolInstruction } from '@solana-program/system'
import { parseAddress } from './address.ts'
import { assertU64Amount, formatUnits, SOL_DECIMALS } from './amount.ts'
import { ownsSolanaChain } from './chain.ts'
import type { SolanaClient } from './client.ts'
import { assertCreatesFunded, assertPaysFor, readLamports } from './fees.ts'
import { latestLifetime, lifetimeMetadata, unsignedTransaction, type Lifetime } from './message.ts'
import { clusterRpc } from './cluster.ts'
import { COMMITMENT, deadline, rpcFailure } from './rpc.ts'
import { unfitRecipient } from './recipient.ts'
import { tagInstruction } from './tag.ts'
import { readMintWithAccounts } from './token.ts'
import { tokenTransferToVault } from './transfer.ts'

export async function buildTransfer(client: SolanaClient, p: TransferParameters): Promise<UnsignedTransaction<'transfer'>[]> {
  if (!ownsSolanaChain(p.chainId))
    throw new InvalidArgumentError(`chainId ${p.chainId} is not a Solana cluster`, { chainId: 'not a Solana cluster' })
  const from = address(parseAddress(p.from, 'from'))
  const to = address(parseAddress(p.to, 'to'))
  const mint = p.token === NATIVE_TOKEN ? undefined : address(parseAddress(p.token, 'token'))
  const amount = assertU64Amount(p.amount)
  const memo = tagInstruction(p.tag)
  const rpc = await clusterRpc(client, p.chainId, 'Solana transfers')
  const abortSignal = deadline()

  let lifetime: Lifetime
  let instructions: Instruction[]
  let description: string
  let extra: Record<string, unknown> = {}
  try {
    // A treasury that could never move on what it is sent (recipient.ts): the caller says whose mistake it is. Read with
    // the build's other reads; its lamports are the recipient's balance a SOL transfer needs.
    const recipient = unfitRecipient(rpc, to, abortSignal, { wallet: true }).then((r) => {
      if (r.reason) throw new UnfitRecipientError(r.reason)
      return r
    })
    if (!mint) {
      const [l, available, { lamports: recipientLamports }] = await Promise.all([latestLifetime(rpc, abortSignal), readLamports(rpc, from, abortSignal), recipient])
      assertCreatesFunded({ recipientLamports, moved: amount, field: 'amount', recipient: to })
      assertPaysFor({ available, moved: amount, newAccountRent: 0n })
      lifetime = l
      instructions = [getTransferSolInstruction({ source: createNoopSigner(from), destination: to, amount }), memo]
      description = `Transfer ${formatUnits(amount, SOL_DECIMALS)} SOL to ${to}`
    } else {
      const [l, token, available] = await Promise.all([
        latestLifetime(rpc, abortSignal),
        readMintWithAccounts(rpc, { mint, owners: [from, to], field: 'token', abortSignal }),
        readLamports(rpc, from, abortSignal),
        recipient,
      ])
      lifetime = l
      // The treasury must receive the whole amount (a stream's funding is judged by what arrives): a fee taken on the
      // way would leave the stream unconfirmable, its tokens gone.
      const fee = await token.transferFee(amount, async () => (await rpc.getEpochInfo({ commitment: COMMITMENT }).send({ abortSignal })).epoch)
      if (fee > 0n)
        throw new InvalidArgumentError(
          `token ${mint} charges a transfer fee (up to ${fee} of these ${amount} smallest units), so the recipient would receive less than the amount; use a mint without a transfer fee`,
          { token: 'charges a transfer fee' },
        )
      const transfer = tokenTransferToVault({ token, owner: from, vault: to, amount, memo })
      assertPaysFor({ available, moved: 0n, newAccountRent: transfer.newAccountRent })
      instructions = transfer.instructions
      description = `Transfer ${formatUnits(amount, token.decimals)} of token ${mint} to ${to}`
      extra = { createsRecipientTokenAccount: transfer.createsVaultAccount }
    }
  } catch (e) {
    throw rpcFailure(e)
  }
  return [
    {
      type: 'transfer',
      transaction: { serializedTransaction: unsignedTransaction({ feePayer: from, lifetime, instructions }) },
      description,
      metadata: { ...lifetimeMetadata(lifetime), feePayer: from, token: mint ?? NATIVE_TOKEN, to, amount: amount.toString(), ...extra },
    },
  ]
}
