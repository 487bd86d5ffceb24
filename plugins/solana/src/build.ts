/**
 * What deposit and withdrawal building share: the checked parameters, one deadline for all reads,
 * and the step object the API returns.
 */
import { InvalidArgumentError, type BuildParameters, type UnsignedTransaction } from '@earn/core'
import { address, type Address, type Instruction, type Rpc, type SolanaRpcApi } from '@solana/kit'
import { parseAddress } from './address.ts'
import { assertU64Amount, formatUnits } from './amount.ts'
import { ownsSolanaChain } from './chain.ts'
import type { SolanaClient } from './client.ts'
import { lifetimeMetadata, unsignedTransaction, type Lifetime } from './message.ts'
import { clusterRpc } from './cluster.ts'
import { COMMITMENT, deadline } from './rpc.ts'
import { tagInstruction } from './tag.ts'
import type { MintWithAccounts } from './token.ts'

export interface BuildContext {
  rpc: Rpc<SolanaRpcApi>
  /** One deadline for every read of the build, so a slow node cannot stack timeouts. */
  abortSignal: AbortSignal
  owner: Address
  /** The vault's deposit authority: the wallet that owns its token accounts (often a PDA). */
  vault: Address
  amount: bigint
  memo: Instruction
}

/**
 * A transfer fee (Token-2022's TransferFeeConfig) that takes the whole amount delivers nothing to the vault: the
 * transaction lands, the wallet loses the amount to the fee withheld in the vault's account, and verify finds nothing
 * moved (an audit: a 1% fee rounded up on an amount of 1). A fee that leaves something delivers the rest, which the
 * step says (`withFee`, README).
 */
export async function assertDeliversSome(ctx: BuildContext, token: MintWithAccounts): Promise<TransferFee> {
  let asked: Promise<bigint> | undefined
  const epoch = () => (asked ??= ctx.rpc.getEpochInfo({ commitment: COMMITMENT }).send({ abortSignal: ctx.abortSignal }).then((info) => info.epoch))
  const atMost = await token.transferFee(ctx.amount, epoch)
  if (atMost >= ctx.amount)
    throw new InvalidArgumentError(`token ${token.mint} takes a transfer fee of ${atMost} on ${ctx.amount}, the whole amount: the vault would receive nothing; move more`, {
      amount: 'taken whole by the transfer fee',
    })
  return atMost === 0n ? { now: 0n } : token.transferFeeSchedule(ctx.amount, epoch)
}

/** A transfer's Token-2022 fee in force now, and another scheduled from a later epoch, where one is. */
export interface TransferFee {
  now: bigint
  later?: { epoch: bigint; fee: bigint }
}

/**
 * A step's description and metadata with the token's transfer fee, where it takes one: the wallet sends the amount
 * and the vault receives the rest, which a person signing must be told (an audit: "Deposit 1" delivered 0.99). A fee
 * scheduled from a later epoch is told apart, larger or smaller: the transaction may land then (a re-audit: the most
 * it could pay, told as the fee, was ten times the one charged).
 */
export function withFee(step: { description: string; metadata: Record<string, unknown> }, amount: bigint, fee: TransferFee, decimals: number) {
  if (fee.now === 0n && fee.later === undefined) return step
  const units = (n: bigint) => formatUnits(n, decimals)
  const now = `the token withholds a transfer fee of ${units(fee.now)}, so the vault receives ${units(amount - fee.now)}`
  const metadata = { ...step.metadata, transferFee: fee.now.toString(), delivered: (amount - fee.now).toString() }
  if (!fee.later) return { description: `${step.description}; ${now}`, metadata }
  const { epoch, fee: later } = fee.later
  return {
    description: `${step.description}; ${now} (landing from epoch ${epoch}, a fee of ${units(later)}: the vault receives ${units(amount - later)})`,
    metadata: { ...metadata, scheduledFromEpoch: epoch.toString(), scheduledTransferFee: later.toString(), scheduledDelivered: (amount - later).toString() },
  }
}

/** Every check of the parameters both kinds share that needs no chain. */
function parameters(p: BuildParameters): Pick<BuildContext, 'owner' | 'vault' | 'amount' | 'memo'> {
  if (!ownsSolanaChain(p.chainId))
    throw new InvalidArgumentError(`chainId ${p.chainId} is not a Solana cluster`, { chainId: 'not a Solana cluster' })
  const owner = address(parseAddress(p.owner, 'userAddress'))
  const vault = address(parseAddress(p.opportunity.vaultAddress, 'vaultAddress'))
  const amount = assertU64Amount(p.amount)
  const memo = tagInstruction(p.tag)
  return { owner, vault, amount, memo }
}

export const checkParameters = (p: BuildParameters): void => void parameters(p)

/** The parameters checked, before the first RPC call. */
export async function buildContext(client: SolanaClient, p: BuildParameters): Promise<BuildContext> {
  const checked = parameters(p)
  return { rpc: await clusterRpc(client, p.chainId, 'Solana transactions'), abortSignal: deadline(), ...checked }
}

export interface StepParameters {
  type: UnsignedTransaction['type']
  description: string
  lifetime: Lifetime
  instructions: readonly Instruction[]
  metadata?: Record<string, unknown>
}

export function toStep(ctx: BuildContext, p: StepParameters): UnsignedTransaction {
  return {
    type: p.type,
    transaction: { serializedTransaction: unsignedTransaction({ feePayer: ctx.owner, lifetime: p.lifetime, instructions: p.instructions }) },
    description: p.description,
    metadata: { ...lifetimeMetadata(p.lifetime), feePayer: ctx.owner, ...p.metadata },
  }
}
