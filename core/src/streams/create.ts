/**
 * `POST /v2/streams`. Checks, in order: the body's fields (400, naming the field), the chain belongs to a
 * loaded ecosystem (400), for a token stream a treasury on the chain (400), the target opportunity exists and is
 * listed on that chain (404, 400); for token streams then the reward token and creator addresses (400), the creator
 * not the treasury (400), that budget plus fee fits a uint256 (400), the creator's balance of the reward token (400
 * `insufficient token balance`), and the plugin's funding transfer.
 *
 * A token stream is stored `pending` with the transfer that funds it; a point stream is `active` at once.
 * The stream id is made before building because the funding tag names it.
 */
import { randomUUID } from 'node:crypto'
import { formatToken, NATIVE_TOKEN } from '../ecosystem.ts'
import { parseField, preflight, preflightThenBuild } from '../actions/checks.ts'
import { ConfigError } from '../config.ts'
import { InsufficientBalanceError } from '../actions/errors.ts'
import { canonicalOrNone } from '../addressProblems.ts'
import { ApiError, hasControlCharacter, InvalidArgumentError, quoted, UnavailableError, UnfitRecipientError } from '../errors.ts'
import { STREAM_FEE_BPS, streamFee, UINT256_MAX } from '../fees.ts'
import { OpportunityDelistedError, OpportunityNotFoundError } from '../opportunities/errors.ts'
import { findOpportunity } from '../opportunities/query.ts'
import { canonicalChainId, chainOf, type LoadedEcosystem } from '../registry.ts'
import type { StreamRecord, Tier } from '../store/schema.ts'
import { InvalidStreamFieldError, NoTreasuryError } from './errors.ts'
import { parseBudget, parseInstant } from './fields.ts'
import { displayForms, type StreamDeps } from './lookup.ts'
import type { CreateStreamBody, CreateStreamResult } from './schema.ts'
import { streamTag } from './tag.ts'
import type { Answering } from '../idempotency.ts'
import { toStream } from './view.ts'

export interface CreateStreamParameters {
  orgId: string
  /** The organization's tier: premium pays no fee. */
  tier: Tier
  body: CreateStreamBody
  /** An idempotent creation's: its answer is stored with its stream (see idempotency.ts). */
  answering?: Answering
}

interface Checked {
  netBudget: bigint
  startTime: number
  endTime: number
}

/** Everything that needs neither store nor chain. */
function checkFields(body: CreateStreamBody, now: number): Checked {
  const own = body.type === 'token' ? (['rewardToken', 'creatorAddress'] as const) : (['pointName'] as const)
  const other = body.type === 'token' ? (['pointName'] as const) : (['rewardToken', 'creatorAddress'] as const)
  for (const field of own) if (body[field] === undefined) throw new InvalidStreamFieldError(field, `is required for ${body.type} streams`)
  for (const field of other) if (body[field] !== undefined) throw new InvalidStreamFieldError(field, `applies only to ${body.type === 'token' ? 'point' : 'token'} streams`)
  if (body.type === 'point' && body.pointName!.trim() === '') throw new InvalidStreamFieldError('pointName', 'must not be blank')
  if (body.type === 'point' && hasControlCharacter(body.pointName!)) throw new InvalidStreamFieldError('pointName', 'must be one line of text, without control characters')

  const netBudget = parseBudget(body.netBudget)
  const startTime = parseInstant(body.startTime, 'startTime')
  const endTime = parseInstant(body.endTime, 'endTime')
  if (endTime <= startTime) throw new InvalidStreamFieldError('endTime', 'must be after startTime')
  // A stream that has already ended would be completed at birth; a start in the past is allowed (backdated rewards).
  if (endTime <= now) throw new InvalidStreamFieldError('endTime', 'must be in the future')
  return { netBudget, startTime, endTime }
}

/**
 * STREAM_TREASURIES held to the loaded ecosystems, once they are in (main.ts, as their own variables are): an address
 * its chain's ecosystem does not take stops the server, rather than answer every stream on that chain 503. A chain
 * no loaded ecosystem serves is left alone: one deployment's variables may name more chains than it loads.
 */
export function checkTreasuries(loaded: readonly LoadedEcosystem[], treasuries: Readonly<Record<string, string>>): void {
  const named = new Map<string, string>()
  for (const [chainId, address] of Object.entries(treasuries)) {
    const ecosystem = loaded.find((e) => e.plugin.ownsChain(chainId))
    if (!ecosystem) continue
    // Two spellings of one chain (Solana's `mainnet` and its CAIP-2 id) would leave which treasury it funds to chance.
    const chain = canonicalChainId(ecosystem.plugin, chainId)
    const earlier = named.get(chain)
    if (earlier !== undefined) throw new ConfigError('STREAM_TREASURIES', `${earlier} and ${chainId} name the same chain (${chain}); give one treasury for it`)
    named.set(chain, chainId)
    try {
      ecosystem.plugin.address.parse(address)
    } catch (e) {
      if (!(e instanceof ApiError)) throw e
      throw new ConfigError('STREAM_TREASURIES', `the treasury for chain ${chainId} is not a valid ${ecosystem.plugin.id} address (${e.message})`)
    }
  }
}

/** Checked when the plugins load, as the treasuries are: each token a valid address of its chain's ecosystem, or `native`. */
export function checkRewardTokens(loaded: readonly LoadedEcosystem[], tokens: Readonly<Record<string, readonly string[]>> | null): void {
  for (const [chainId, list] of Object.entries(tokens ?? {})) {
    const ecosystem = loaded.find((e) => e.plugin.ownsChain(chainId))
    if (!ecosystem) continue
    for (const token of list) {
      if (token.toLowerCase() === NATIVE_TOKEN) continue
      try {
        ecosystem.plugin.address.parse(token)
      } catch (e) {
        if (!(e instanceof ApiError)) throw e
        throw new ConfigError('STREAM_REWARD_TOKENS', `the reward token ${quoted(token)} for chain ${chainId} is not a valid ${ecosystem.plugin.id} address (${e.message}), nor native`)
      }
    }
  }
}

/**
 * Refuses a reward token the operator's `STREAM_REWARD_TOKENS` does not name for the chain (any spelling of it), where
 * that is set: an issuer able to freeze or claw back a funding would leave an active stream unpaid.
 */
function checkRewardTokenAccepted(deps: StreamDeps, ecosystem: LoadedEcosystem, chainId: string, token: string): void {
  if (!deps.rewardTokens) return
  const { plugin } = ecosystem
  const accepted = Object.entries(deps.rewardTokens)
    .filter(([k]) => plugin.ownsChain(k) && canonicalChainId(plugin, k) === chainId)
    .flatMap(([, list]) => list.map((t) => (t.toLowerCase() === NATIVE_TOKEN ? NATIVE_TOKEN : canonicalOrNone(plugin.address, t))))
    .filter((t): t is string => t !== undefined)
  if (accepted.includes(token)) return
  // Tokens in the form the stream and the catalog show them (TON: a jetton master in its contract form).
  const shown = [...new Set(accepted)].map((t) => formatToken(plugin, t))
  throw new InvalidStreamFieldError(
    'rewardToken',
    shown.length
      ? `is not a reward token this deployment takes on chain ${chainId}; it takes ${shown.join(', ')} (STREAM_REWARD_TOKENS)`
      : `cannot be taken: this deployment takes no reward token on chain ${chainId} (STREAM_REWARD_TOKENS names none there)`,
  )
}

function treasuryOn(deps: StreamDeps, ecosystem: LoadedEcosystem, chainId: string): string {
  // Keyed as the operator wrote the chain: another spelling of it (Solana's CAIP-2 id) names it too; checkTreasuries
  // refuses two keys for one chain at start.
  const key = Object.keys(deps.treasuries).find((k) => ecosystem.plugin.ownsChain(k) && canonicalChainId(ecosystem.plugin, k) === chainId)
  const configured = key === undefined ? undefined : deps.treasuries[key]
  if (configured === undefined) throw new NoTreasuryError(chainId)
  try {
    return ecosystem.plugin.address.parse(configured)
  } catch (e) {
    if (!(e instanceof ApiError)) throw e
    // The deployment's configuration, not the request, is wrong.
    throw new UnavailableError(`the stream treasury configured for chain ${chainId} is not a valid ${ecosystem.plugin.id} address; the operator must fix STREAM_TREASURIES`, {
      chainId: 'stream treasury misconfigured',
    })
  }
}

// The plugins name their own parameters; the request's fields are what the caller can fix.
const REQUEST_FIELDS: Readonly<Record<string, string>> = { token: 'rewardToken', from: 'creatorAddress', amount: 'netBudget' }

/**
 * A plugin's 400 about its parameters, renamed to the request field it came from. The transfer's amount is totalPulled,
 * not the netBudget the caller gave: a bound the plugin states is on that total.
 */
function asRequestError(e: unknown, totalPulled: bigint): unknown {
  if (!(e instanceof ApiError) || e.code !== 'INVALID_ARGUMENT' || e instanceof InsufficientBalanceError) return e
  if (!Object.keys(e.context).some((key) => key in REQUEST_FIELDS)) return e
  const renamed = Object.entries(e.context).map(([key, value]) => [
    REQUEST_FIELDS[key] ?? key,
    key === 'amount' && typeof value === 'string' ? `totalPulled ${totalPulled} (netBudget plus fee) ${value}` : value,
  ])
  return new InvalidArgumentError(e.message, Object.fromEntries(renamed), { cause: e })
}

/** The largest budget whose total (budget plus the standard fee) still fits a uint256. */
function largestBudget(): bigint {
  // n + ceil(n * bps / 10000) <= max  <=>  n <= floor((max * 10000) / (10000 + bps)) up to the rounding, checked below.
  let n = (UINT256_MAX * 10_000n) / (10_000n + STREAM_FEE_BPS)
  while (n + streamFee(n, { type: 'token', tier: 'standard' }) > UINT256_MAX) n--
  return n
}

export async function createStream(deps: StreamDeps, p: CreateStreamParameters): Promise<CreateStreamResult> {
  const now = deps.clock.now()
  const fields = checkFields(p.body, now)
  const { ecosystem, chainId } = await chainOf(deps.ecosystems, p.body.chainId)
  // The chain in its stored spelling from here on: the target's is compared with it, and the row keeps it.
  const body = { ...p.body, chainId }
  // The chain's own fault first: no target on a chain without a treasury could take a token stream.
  const treasury = body.type === 'token' ? treasuryOn(deps, ecosystem, body.chainId) : null
  const target = await findOpportunity(deps, body.targetOpportunityId)
  if (!target) throw new OpportunityNotFoundError(body.targetOpportunityId, 'targetOpportunityId')
  if (target.opportunity.delistedAt !== null) throw new OpportunityDelistedError(body.targetOpportunityId, 'targetOpportunityId')
  // A stream rewards the opportunity's depositors where they deposit: its budget on another chain would reward no one there.
  if (target.opportunity.listing.chainId !== body.chainId)
    throw new InvalidArgumentError(`the target opportunity is on chain ${target.opportunity.listing.chainId}, not ${body.chainId}; a stream is on its opportunity's chain`, {
      targetOpportunityId: `on chain ${target.opportunity.listing.chainId}`,
    })

  const id = randomUUID()
  const fee = streamFee(fields.netBudget, { type: body.type, tier: p.tier })
  const row: StreamRecord = {
    id,
    orgId: p.orgId,
    type: body.type,
    ecosystem: ecosystem.plugin.id,
    chainId: body.chainId,
    rewardToken: null,
    pointName: null,
    creator: null,
    treasury: null,
    netBudget: fields.netBudget.toString(),
    feeAmount: fee.toString(),
    // Points are not pulled from anyone.
    totalPulled: '0',
    targetOpportunityId: target.opportunity.listing.id,
    startTime: fields.startTime,
    endTime: fields.endTime,
    state: 'active',
    fundingTxHash: null,
    createdAt: now,
    updatedAt: now,
  }
  let transactions: CreateStreamResult['transactions'] = []

  if (body.type === 'point') {
    row.pointName = body.pointName!.trim()
  } else {
    const { plugin, client } = ecosystem
    const rewardToken = parseField(plugin, body.rewardToken!, 'rewardToken')
    checkRewardTokenAccepted(deps, ecosystem, body.chainId, rewardToken)
    const creator = parseField(plugin, body.creatorAddress!, 'creatorAddress', 'wallet')
    // A transfer to itself funds nothing: Solana's balance changes show none (pending for good), and on TON the treasury
    // would confirm a stream with no new money.
    if (creator === treasury) throw new InvalidStreamFieldError('creatorAddress', "is this chain's stream treasury; a stream is funded from another wallet")
    const totalPulled = fields.netBudget + fee
    if (totalPulled > UINT256_MAX)
      throw new InvalidStreamFieldError('netBudget', `plus its fee (${fee}) does not fit in 256 bits; at most ${largestBudget()} at the standard fee (a chain may carry less: a Solana transfer 2^64-1, a TON one 2^120-1)`)
    const tag = streamTag(await deps.attributionSecret(), { streamId: id, wallet: creator, chainId: body.chainId })
    try {
      // A bound on the amount (TON's least transfer) outranks a short balance: no top-up mends it.
      transactions = await preflightThenBuild(
        preflight(ecosystem, { chainId: body.chainId, owner: creator, token: rewardToken, required: totalPulled }),
        () => plugin.transactions.buildTransfer(client, { chainId: body.chainId, from: creator, token: rewardToken, to: treasury!, amount: totalPulled, tag }),
        ['amount'],
      )
    } catch (e) {
      // The operator's treasury, not the request, is wrong: funds sent there would be stranded.
      if (e instanceof UnfitRecipientError)
        throw new UnavailableError(`the stream treasury configured for chain ${body.chainId} ${e.reason}: ${e.consequence}; the operator must fix STREAM_TREASURIES`, {
          chainId: 'stream treasury misconfigured',
        })
      throw asRequestError(e, totalPulled)
    }
    row.rewardToken = rewardToken
    row.creator = creator
    row.treasury = treasury
    row.totalPulled = totalPulled.toString()
    row.state = 'pending'
  }

  const forms = (await displayForms(deps))(row.ecosystem)
  const result = { stream: toStream(row, forms, now), FeeAmount: row.feeAmount, totalPulled: row.totalPulled, transactions }
  await deps.store.insertStream(row, p.answering?.(result))
  return result
}
