/**
 * `GET /v2/actions/verify`: reads a mined transaction through the ecosystem that owns the chain and
 * says whether the attribution tag it carries is ours and valid. A tag that does not parse, names an
 * action never built here, or fails its MAC is an answer (verified false), not an error; only a
 * transaction without a tag is 404. A verified deposit is recorded once, for activity.
 */
import { randomUUID } from 'node:crypto'
import { parseTag, verifyTag } from '../attribution.ts'
import { canonicalOrNone } from '../addressProblems.ts'
import { cutWithLength, InvalidArgumentError, UnavailableError } from '../errors.ts'
import type { ReadTransfersResult, VaultMove } from '../ecosystem.ts'
import { canonicalChainId, chainOf, type LoadedEcosystem } from '../registry.ts'
import type { ActionRecord } from '../store/schema.ts'
import type { ActionDeps } from './build.ts'
import { NoAttributionTagError } from './errors.ts'
import type { VerifyResult } from './schema.ts'
import { UUID_PATTERN } from '../opportunities/schema.ts'

const ACTION_ID = new RegExp(UUID_PATTERN)

export interface VerifyParameters {
  orgId: string
  chainId: string
  txHash: string
}

const TAGGED_KINDS: readonly string[] = ['deposit', 'withdraw']

/** What the action's wallet moved in the transaction: the token and amount a verified deposit is recorded with. */
interface Moved {
  token: string | null
  amount: string | null
  /** The vault moves that count for it (none where the ecosystem reports none). */
  moves: VaultMove[]
}

/**
 * Whether the tag holds for the action, and what the wallet moved doing it (undefined: it did not). A move already
 * `taken` by an earlier tag of the transaction is not counted again: a wallet's one call carrying two of its tags
 * deposits once.
 */
async function holds(deps: ActionDeps, ecosystem: LoadedEcosystem, tag: string, action: ActionRecord, chainId: string, read: Read, taken: Set<VaultMove>): Promise<Moved | undefined> {
  const parsed = parseTag(tag)!
  // The action's chain as stored may be another spelling of this one (a Solana CAIP-2 id stored before chain ids had
  // one spelling); its tag was signed over that stored spelling, so the MAC is checked with it.
  const builtOn = action.chainId
  if (!TAGGED_KINDS.includes(action.kind) || action.distributorId !== parsed.distributorId || builtOn === null || canonicalChainId(ecosystem.plugin, builtOn) !== chainId)
    return undefined
  // The MAC first: it is a hash, where what the wallet moved is a walk over the transaction's moves, and a tag with a
  // made-up MAC costs its sender nothing (an audit: 1,900 such tags over 1,900 moves held the thread 25 s).
  if (!verifyTag(await deps.attributionSecret(), tag, { wallet: action.wallet, chainId: builtOn })) return undefined
  return didTheAction(deps, ecosystem, action, read, tag, (m) => !taken.has(m) && (read.carriers.get(m)?.has(tag) ?? read.tagsOn === undefined))
}

/** The read, with the tags on each vault move's caller's own calls to the vault (see `ReadTagResult.tagsOn`; undefined: unknown). */
interface Read extends ReadTransfersResult {
  carriers: Map<VaultMove, Set<string> | undefined>
}

/**
 * The tags worth answering for, in order: those on the calls that made the vault moves, then the transaction's own
 * (which, on no move's call, can only be answered false). `unknown` when a move's call could not be read. Only a
 * move its owner made itself can ever count (see `didTheAction`), so no other is asked about: a router's or another
 * contract's move beside it must not turn a plain answer into a 503 where the node gives no trace.
 */
async function candidates(read: ReadTransfersResult): Promise<{ read: Read; tags: string[]; unknown: boolean }> {
  const carriers = new Map<VaultMove, Set<string> | undefined>()
  const own = (read.vaultMoves ?? []).filter((m) => m.caller === m.owner)
  // Asked once per caller and vault, as a set: a transaction may hold thousands of one contract's moves beside
  // thousands of tags on its calls (audits' zero deposits, and tags under made-up MACs).
  const asked = new Map<string, Promise<Set<string> | undefined>>()
  const tagsOn = read.tagsOn
  if (tagsOn)
    for (const m of own) {
      const pair = `${m.caller}>${m.vault}`
      if (!asked.has(pair)) asked.set(pair, tagsOn({ from: m.caller, to: m.vault }).then((tags) => tags && new Set(tags)))
      carriers.set(m, await asked.get(pair))
    }
  // Each pair's tags once, in the order of their first move (a pair's set is every one of its moves' carriers).
  const onCalls = [...new Set(carriers.values())].flatMap((t) => [...(t ?? [])])
  const tags = [...new Set([...onCalls, ...(read.tag === null ? [] : [read.tag]), ...ownTags(read)])]
  return { read: { ...read, carriers }, tags, unknown: [...carriers.values()].includes(undefined) }
}

/**
 * Where the wallet's own messages carry the tags (TON, Solana) and each move names its message's (TON), every tag is
 * answered for, each counting its own message's moves. Where moves name none (Solana: read from balances), one
 * transaction carrying the tags of several actions cannot be told apart: refused, as stream confirm refuses one funding
 * several streams, rather than the first tag credited with what all of them moved (an audit: two TON deposits sent in
 * one request recorded the first with both amounts, and the second could never verify).
 */
function ownTags(read: ReadTransfersResult): string[] {
  if (read.tagsOn || read.vaultMoves || !read.tags) return []
  if (read.transfersTagged) return read.tags
  const ofActions = read.tags.filter((t) => t.length <= LONGEST_TAG && parseTag(t) !== undefined)
  const actions = new Set(ofActions.map((t) => parseTag(t)!.actionId))
  if (actions.size > 1)
    throw new InvalidArgumentError(
      `transaction ${read.txHash} carries the attribution tags of ${actions.size} actions, and what each moved is not told apart on this chain; send each deposit or withdrawal in a transaction of its own`,
      { txHash: `carries the tags of ${actions.size} actions` },
    )
  // One action's tag, wherever it comes among the memos: a stream's or another memo ahead of it must not hide it.
  return ofActions.slice(0, 1)
}

const total = (amounts: bigint[]) => amounts.reduce((a, b) => a + b, 0n)

/**
 * The action's wallet did it: it sent the transaction to the action's vault, or, as a contract wallet, called the
 * vault itself inside a transaction its owner or a bundler sent. Where the ecosystem reports what the vault did
 * (EVM), the vault must say it deposited (or withdrew) shares for the wallet; elsewhere the transaction must have
 * moved the action's token from the wallet to the vault. What moved is what the chain says, not the amount built:
 * a wallet can send less than it asked a build for.
 */
async function didTheAction(
  deps: ActionDeps,
  ecosystem: LoadedEcosystem,
  action: ActionRecord,
  read: ReadTransfersResult,
  tag: string,
  carried: (move: VaultMove) => boolean,
): Promise<Moved | undefined> {
  const { parse } = ecosystem.plugin.address
  const canonical = (address: string) => canonicalOrNone(ecosystem.plugin.address, address)
  const sentByWallet = canonical(read.from) === action.wallet
  const opportunity = action.opportunityId === null ? undefined : await deps.lookups.opportunity(action.opportunityId)
  // The catalog lost the action's opportunity: there is no vault to hold the transaction to.
  if (opportunity === undefined) return undefined
  // The vault the action was built for, though a re-import may since have moved its opportunity to another one.
  const listed = parse(opportunity.listing.vaultAddress)
  const vault = action.vault === null ? listed : parse(action.vault)
  // The ecosystem reports neither (Solana, TON: a deposit is the base token sent to the vault, a withdrawal the
  // receipt token sent back): the wallet must have sent the action's token to the vault.
  if (read.to === undefined && read.vaultMoves === undefined) {
    if (!sentByWallet) return undefined
    const sent = read.transfers.filter(
      (t) => t.token === action.token && canonical(t.from) === action.wallet && canonical(t.to) === vault && t.amount > 0n && (t.tag === undefined || t.tag === tag),
    )
    return sent.length ? { token: action.token, amount: total(sent.map((t) => t.amount)).toString(), moves: [] } : undefined
  }
  // A tag also rides on a call to the vault that moves nothing (a zero transfer, say): the vault's own report counts.
  // Only a move whose caller's own calls to the vault carried the tag: a tag beside them (appended by whoever
  // submitted a contract wallet's call, or on a call of the submitter's own) says nothing about it.
  const moves = (read.vaultMoves ?? []).filter((m) => m.kind === action.kind && canonical(m.vault) === vault && canonical(m.owner) === action.wallet && m.shares > 0n && carried(m))
  // The wallet's moves the other way in the same vault, tagged or not: what the action moved is what the wallet's
  // position kept over the whole transaction. Summed alone, a deposit redeemed in the same transaction (ten round
  // trips of one balance) was recorded as deposits that never stayed in the vault.
  const undone = total((read.vaultMoves ?? []).filter((m) => m.kind !== action.kind && canonical(m.vault) === vault && canonical(m.owner) === action.wallet).map((m) => m.assets))
  // Shares can also leave the wallet and be redeemed by another owner in the same transaction (ten times over, a
  // deposit of one balance had been recorded ten times: an audit). The vault's own Transfer logs (an ERC-4626 vault is
  // its shares' ERC-20: mints, burns and transfers alike) tell the wallet's share balance over the whole transaction,
  // and only the part of the moves that balance kept counts (a deposit's shares still held, a withdrawal's still gone).
  const shareTransfers = read.transfers.filter((t) => canonical(t.token) === vault)
  const sharesIn = total(shareTransfers.filter((t) => canonical(t.to) === action.wallet).map((t) => t.amount))
  const sharesOut = total(shareTransfers.filter((t) => canonical(t.from) === action.wallet).map((t) => t.amount))
  const inVault = (counted: VaultMove[]): Moved | undefined => {
    const assets = total(counted.map((m) => m.assets))
    const shares = total(counted.map((m) => m.shares))
    let kept = assets - undone
    // Where the logs show the moves' own mints (or burns) the balance is known; a vault that logs none keeps the rule above.
    const [moved, net] = action.kind === 'deposit' ? [sharesIn, sharesIn - sharesOut] : [sharesOut, sharesOut - sharesIn]
    if (shares > 0n && moved >= shares) {
      const held = net < 0n ? 0n : net > shares ? shares : net
      const ofHeld = (assets * held) / shares
      if (ofHeld < kept) kept = ofHeld
    }
    // The listing's facts describe its current vault: another vault's asset is not known here.
    return counted.length && kept > 0n ? { token: vault === listed ? (opportunity.facts?.baseToken ?? null) : null, amount: kept.toString(), moves: counted } : undefined
  }
  // Calldata can be sent anywhere: sent by the wallet, only the call to the action's own vault did anything...
  if (sentByWallet && (read.to === undefined || read.to === vault))
    return read.vaultMoves === undefined ? { token: action.token, amount: action.amount, moves: [] } : inVault(moves)
  // ...and sent by anyone else, only a vault call made by the wallet itself: the copied calldata of another sender
  // deposits as that sender.
  return inVault(moves.filter((m) => canonical(m.caller) === action.wallet))
}

export async function verifyAttribution(deps: ActionDeps, request: VerifyParameters): Promise<VerifyResult> {
  const { ecosystem, chainId } = await chainOf(deps.ecosystems, request.chainId)
  // The chain in its stored spelling: an action's chain and its tag's are compared with it.
  const p = { ...request, chainId }
  const { read, tags, unknown } = await candidates(
    await ecosystem.plugin.transactions.readTransfers(ecosystem.client, { chainId: p.chainId, txHash: p.txHash }),
  )
  // A transaction may carry several tags: a bundle of several wallets' calls, each with its own distributor's tag, or a
  // tag added around one. Every tag that holds is recorded, in the order found, whoever asks (the attribution must not
  // depend on who verifies first); the caller's own is the answer, else the first that holds, else the first found.
  const taken = new Set<VaultMove>()
  const answers: Answer[] = []
  // The actions the tags name, read together: a transaction's calls may carry tens of thousands of tags (the sender's,
  // or a bundler's around a wallet's), and one store round trip each held a verify for seconds. No cap refuses them
  // instead: a bundler could then make the wallets' deposits it carries unverifiable (a re-audit).
  const named = [...new Set(tags.flatMap((tag) => (tag.length <= LONGEST_TAG ? [parseTag(tag)?.actionId] : []).filter((id) => id !== undefined && ACTION_ID.test(id))))]
  const actions = new Map((await deps.store.getActions(named as string[])).map((a) => [a.id, a]))
  for (const tag of tags) answers.push(await answerFor(deps, ecosystem, p, read, tag, taken, (id) => actions.get(id)))
  const held = answers.filter((a) => a.result.verified)
  const callers = held.find((a) => a.orgId === p.orgId)
  if (callers) return callers.result
  // A move that could not be read may be the caller's: another's answer would say the transaction is not its.
  if (unknown)
    throw new UnavailableError(
      `transaction ${read.txHash} moved a vault inside a call a contract made, and telling which attribution tag that call carried needs a call trace, which the RPC for chain ${p.chainId} did not give (debug_traceTransaction with callTracer); try again, or configure an RPC that traces`,
      { chainId: p.chainId, txHash: 'needs a call trace' },
    )
  const answer = held[0] ?? answers[0]
  if (answer) return answer.result
  throw new NoAttributionTagError()
}

const LONGEST_TAG = 200

/** One tag's answer, and the organization whose action it names (undefined: none of ours). */
interface Answer {
  result: VerifyResult
  orgId: string | undefined
}

async function answerFor(
  deps: ActionDeps,
  ecosystem: LoadedEcosystem,
  p: VerifyParameters,
  read: Read,
  tag: string,
  taken: Set<VaultMove>,
  actionOf: (id: string) => ActionRecord | undefined,
): Promise<Answer> {
  // Ours are ~115 characters (two UUIDs and the MAC); a longer one names no action of ours, and calldata is the
  // sender's to fill: it is answered cut, not sent back whole.
  const parsed = tag.length <= LONGEST_TAG ? parseTag(tag) : undefined
  if (!parsed) return { result: { tag: cutWithLength(tag, LONGEST_TAG), verified: false, metadata: { distributorId: null, actionId: null, opportunityId: null } }, orgId: undefined }

  // Action ids are UUIDs: any other id (a memo or comment can carry anything, a NUL that PostgreSQL text refuses
  // included) names no action, and is not asked of the store.
  const action = ACTION_ID.test(parsed.actionId) ? actionOf(parsed.actionId) : undefined
  const moved = action && (await holds(deps, ecosystem, tag, action, p.chainId, read, taken))
  let verified = moved !== undefined
  // Activity lists verified deposits, one transaction per built deposit (the first verified), with what it moved: a
  // tag copied into further transactions of the same wallet proves no further deposit. A withdrawal's tag is answered
  // for, not listed.
  if (moved && action.kind === 'deposit')
    verified = await deps.store.recordVerification({
      ...action,
      token: moved.token,
      amount: moved.amount,
      id: randomUUID(),
      kind: 'verify',
      verifies: action.id,
      // As the action spells its chain (an earlier spelling included): a verification recorded under it before
      // stands for this transaction, and none is recorded beside it.
      chainId: action.chainId ?? p.chainId,
      // As the chain spells it: another spelling of the same hash must not record the deposit again.
      txHash: read.txHash,
      createdAt: deps.clock.now(),
    })
  // Moves this tag was recorded with count for no later one; one whose action another transaction verified are free.
  if (verified && moved) for (const m of moved.moves) taken.add(m)
  return {
    result: {
      tag,
      verified,
      metadata: {
        distributorId: parsed.distributorId,
        actionId: parsed.actionId,
        opportunityId: action?.opportunityId ?? null,
        // The referral code is the organization's own data; the tag itself is public on chain.
        ...(action?.referralCode && action.orgId === p.orgId ? { referralCode: action.referralCode } : {}),
      },
    },
    orgId: action?.orgId,
  }
}
