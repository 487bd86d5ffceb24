/**
 * `POST /v2/streams/{id}/confirm`: a pending token stream becomes active once the chain shows its funding.
 * The transaction is read through the plugin of the stream's chain, never taken on the caller's word. It
 * must carry this stream's funding tag, valid for the creator and chain (so a transfer funds one stream
 * only, and a tag copied into another wallet's transfer does not count), and move at least `totalPulled`
 * of the reward token from the creator to the treasury, whoever sent it (a contract wallet's owner, say).
 * Only pending streams confirm (400 otherwise, from the state machine); the funding transaction is recorded
 * with the new state in one write.
 */
import { canonicalOrNone } from '../addressProblems.ts'
import { ApiError, NoChainRpcError, NotConfirmedYetError, UnavailableError, UnsupportedEcosystemError } from '../errors.ts'
import { NATIVE_TOKEN, type Ecosystem, type EcosystemId, type ReadTransfersResult } from '../ecosystem.ts'
import { canonicalChainId } from '../registry.ts'
import type { StreamRecord } from '../store/schema.ts'
import { FundingNotFoundError, FundingRejectedError, FundingTransactionUsedError } from './errors.ts'
import { displayForms, ownStream, type StreamDeps } from './lookup.ts'
import type { StreamResult } from './schema.ts'
import { effectiveState, InvalidTransitionError, nextState } from './state.ts'
import { parseStreamTag, verifyStreamTag } from './tag.ts'
import { toStream } from './view.ts'

export interface ConfirmStreamParameters {
  orgId: string
  streamId: string
  txHash: string
}

/**
 * The funding tag, and whether the creator's own transfer call carried it. Where the transaction is a tree of calls
 * (EVM), only that call's tag can fund (to the token; the coin: to the treasury): whoever submits a contract
 * wallet's call can add tags around it. Where the creator's call carried none of this stream's, the transaction's own
 * tag still names the fault, and can never fund. Elsewhere (Solana, TON) the transaction's tag is the wallet's.
 */
async function fundingTag(deps: StreamDeps, stream: StreamRecord, chainId: string, read: ReadTransfersResult): Promise<{ tag: string | null; onCreatorsCall: boolean }> {
  if (!read.tagsOn) return { tag: (await ownTag(deps, stream, read.tags ?? [])) ?? read.tag, onCreatorsCall: true }
  const to = stream.rewardToken === NATIVE_TOKEN ? stream.treasury! : stream.rewardToken!
  const tags = await read.tagsOn({ from: stream.creator!, to })
  if (tags === undefined)
    throw new UnavailableError(
      `the creator's transfer in transaction ${read.txHash} was made inside a contract's call, and reading its funding tag needs a call trace, which the RPC for chain ${chainId} did not give (debug_traceTransaction with callTracer); try again, or configure an RPC that traces`,
      { chainId, txHash: 'needs a call trace' },
    )
  const own = await ownTag(deps, stream, tags)
  return own === undefined ? { tag: tags[0] ?? read.tag, onCreatorsCall: false } : { tag: own, onCreatorsCall: true }
}

/** Other streams' tags beside this one's in a funding transaction, at most (a Solana transaction holds ~13 memos). */
const MAX_OTHER_STREAMS = 16

/**
 * This stream's funding tag among the transaction's. The creator's transfers funding several of its streams are
 * refused for every stream in them, rather than credited to one: the transfers are summed per transaction, so one
 * stream's would make up another's shortfall (and a transaction funds one stream per creator and token: the store's
 * index). Other creators' streams' tags (a relayer joining several wallets' fundings in one Solana transaction) are not
 * this creator's transfers, which alone are summed: they are left aside, the streams they name looked up. (Not told
 * by their MAC: a stream stored under an earlier spelling of its chain has its MAC over that spelling, and two of one
 * creator's streams so stored had each funded by one transfer.)
 */
async function ownTag(deps: StreamDeps, stream: StreamRecord, tags: readonly string[]): Promise<string | undefined> {
  const own = tags.find((t) => parseStreamTag(t)?.streamId === stream.id)
  if (own === undefined) return undefined
  const named = [...new Set(tags.map((t) => parseStreamTag(t)?.streamId).filter((id): id is string => id !== undefined && id !== stream.id))]
  // Looked up one by one: past a few, the transaction is no funding of one stream whatever they name.
  if (named.length >= MAX_OTHER_STREAMS)
    throw new FundingRejectedError(`it carries the funding tags of ${named.length + 1} streams; fund each stream in a transaction of its own`)
  const others = await Promise.all(named.map((id) => deps.store.getStream(id)))
  const creatorsStreams = 1 + others.filter((s) => s?.creator === stream.creator).length
  if (creatorsStreams > 1)
    throw new FundingRejectedError(
      `the creator's transfers in it carry the funding tags of ${creatorsStreams} of its streams, and what each moved is not told apart; fund each stream in a transaction of its own`,
    )
  return own
}

/** Throws what the transaction lacks to fund the stream, or returns when it funds it. */
async function checkFunding(secret: string, plugin: Ecosystem<EcosystemId, unknown>, stream: StreamRecord, read: ReadTransfersResult, funding: { tag: string | null; onCreatorsCall: boolean }): Promise<void> {
  const canonical = (a: string) => canonicalOrNone(plugin.address, a)
  // A sender this API takes no creator at (a TON masterchain wallet) is shown as the chain spells it.
  const show = (a: string) => (canonical(a) === undefined ? a : plugin.address.format(a))
  const creator = stream.creator!
  const { tag } = funding
  if (tag === null) throw new FundingRejectedError('it carries no funding tag (or it failed on chain); send the transfer this stream was created with')
  const parsed = parseStreamTag(tag)
  if (!parsed) throw new FundingRejectedError('its tag is not a stream funding tag')
  if (parsed.streamId !== stream.id) throw new FundingRejectedError(`its funding tag names another stream (${parsed.streamId})`)
  if (!verifyStreamTag(secret, tag, { streamId: stream.id, wallet: creator, chainId: stream.chainId }))
    throw new FundingRejectedError("its funding tag does not verify for this stream, creator and chain (or this server's ATTRIBUTION_SECRET changed since the stream was created)")
  // What counts is what the chain says left the creator, not who sent the transaction: a contract wallet (a Safe,
  // an ERC-4337 account) moves its tokens inside a transaction an owner or a bundler sends. The tag on the
  // creator's own transfer call ties them to this stream.
  // Where transfers name their message's tag (TON), only the funding tag's message counts, as verify counts a deposit.
  const ofToken = read.transfers.filter((t) => t.token === stream.rewardToken && (t.tag === undefined || t.tag === tag))
  const logged = ofToken.filter((t) => t.from === creator && t.to === stream.treasury).reduce((sum, t) => sum + t.amount, 0n)
  // What left the treasury again in the same transaction was not received (a token taking its fee from the recipient
  // logs it so), nor what the chain's state says its balance rose by less than the logs (a fee taken silently). The
  // shortfall is the whole transaction's: where it funds several streams (a bundle), each counts it.
  const paidOn = ofToken.filter((t) => t.from === stream.treasury && t.to !== stream.treasury).reduce((sum, t) => sum + t.amount, 0n)
  const token = stream.rewardToken
  const short = token !== null && token !== NATIVE_TOKEN && logged > 0n && read.shortfall ? ((await read.shortfall(token, stream.treasury!)) ?? 0n) : 0n
  let funded = logged - paidOn - short
  if (funded < 0n) funded = 0n
  const required = BigInt(stream.totalPulled)
  const from = canonical(read.from) ?? read.from
  if (funded >= required && funding.onCreatorsCall) return
  if (funded >= required)
    throw new FundingRejectedError(
      from === creator
        ? "its funding tag is not on the creator's own transfer call (a transfer through a spender or a router is not read as funding); send the transfer this stream was created with"
        : "its funding tag is not on the creator's own transfer: it was added around it by whoever submitted the transaction",
    )
  const sender = from === creator ? '' : `it was sent by ${show(from)}, not by the stream's creator ${show(creator)}, and `
  const kept = funded < logged ? ` (its logs say ${logged}, but the treasury received ${funded}: the token keeps part of what it moves)` : ''
  // Funded in parts (an audit: two transfers of half each, both refused as "it moves half", read as "send more"):
  // a stream is funded by one transaction, and a further one cannot make up for this one.
  const inParts =
    sender === '' && funded > 0n
      ? '; a stream is funded by one transaction moving the whole amount, and transfers in several transactions are not added up: ask the operator to return what was sent, and create a new stream to fund in one'
      : ''
  throw new FundingRejectedError(
    `${sender}it moves ${funded} of the ${required} smallest units of the reward token that must go from the creator to the treasury ${show(stream.treasury!)}${kept}${inParts}`,
    { required: required.toString(), transferred: funded.toString() },
  )
}

/**
 * A contract wallet sends the coin from inside the call its owner or a bundler made, where the transaction's own value
 * is not it: for a coin stream, the coin its calls moved counts too (EVM: read from the call trace).
 */
async function withCoinMovedInside(stream: StreamRecord, read: ReadTransfersResult): Promise<ReadTransfersResult> {
  if (stream.rewardToken !== NATIVE_TOKEN || !read.coinMovedInside) return read
  const inside = await read.coinMovedInside()
  return inside?.length ? { ...read, transfers: [...read.transfers, ...inside] } : read
}

export async function readFunding(deps: StreamDeps, stream: StreamRecord, txHash: string) {
  const { plugin, client } = await deps.ecosystems.get(stream.ecosystem).catch((e: unknown) => {
    // The stream's, not the request's: its ecosystem is no longer loaded here (the request names none to correct).
    if (e instanceof UnsupportedEcosystemError)
      throw new UnavailableError(`this server does not load ${stream.ecosystem}, the ecosystem of this stream's chain ${stream.chainId}; its operator adds it to ECOSYSTEMS`, {
        chainId: `${stream.ecosystem} is not loaded`,
      })
    throw e
  })
  try {
    return { plugin, read: await plugin.transactions.readTransfers(client, { chainId: stream.chainId, txHash }) }
  } catch (e) {
    // Unknown and not yet mined look the same from here: either way the caller retries once it is mined.
    if (e instanceof ApiError && e.code === 'NOT_FOUND')
      throw new FundingNotFoundError(canonicalChainId(plugin, stream.chainId), e instanceof NotConfirmedYetError ? String(e.context.txHash) : undefined)
    // Its chain has no RPC here (any more): the server's gap, not a field of this request's (EVM answers it 400).
    if (e instanceof NoChainRpcError)
      throw new UnavailableError(`this server has no RPC for chain ${canonicalChainId(plugin, stream.chainId)}, this stream's chain; its operator configures one`, { chainId: 'no RPC configured' }, { cause: e })
    throw e
  }
}

export async function confirmStream(deps: StreamDeps, p: ConfirmStreamParameters): Promise<StreamResult> {
  const stream = await ownStream(deps, p.orgId, p.streamId)
  nextState('confirm', effectiveState(stream.state, stream.endTime, deps.clock.now()))
  const txHash = p.txHash.trim()
  const { plugin, read } = await readFunding(deps, stream, txHash)
  await fund(deps, stream, plugin, read)
  const now = deps.clock.now()
  const updated = await ownStream(deps, p.orgId, stream.id)
  return { stream: toStream(updated, (await displayForms(deps))(updated.ecosystem), now) }
}

/**
 * Records the transaction read as the stream's funding, once it is shown to fund it: throws what it lacks, or, where
 * another confirm (or the watch) got there first, the 409 or the state's 400.
 */
export async function fund(deps: StreamDeps, stream: StreamRecord, plugin: Ecosystem<EcosystemId, unknown>, read: ReadTransfersResult): Promise<void> {
  // Named in errors as responses show it; the stored spelling stays what the chain is read and the tag checked with.
  const funding = await fundingTag(deps, stream, canonicalChainId(plugin, stream.chainId), read)
  await checkFunding(await deps.attributionSecret(), plugin, stream, await withCoinMovedInside(stream, read), funding)
  const now = deps.clock.now()
  // The chain's own spelling of the hash: another spelling of the same transaction must not fund a second stream.
  const outcome = await deps.store.fundStream(stream.id, { chainId: stream.chainId, txHash: read.txHash, at: now })
  if (outcome === 'tx_used') throw new FundingTransactionUsedError()
  // Another request confirmed or cancelled it while the chain was read.
  if (outcome === 'not_pending') {
    const current = await deps.store.getStream(stream.id)
    throw new InvalidTransitionError('confirm', current ? effectiveState(current.state, current.endTime, now) : stream.state)
  }
}
