/**
 * The checks deposit and withdraw share, in the order DECISIONS.md rules: the wallet is a member
 * (404), the opportunity exists (404; a delisted one takes withdrawals only), the distributor exists and is the caller's (404). Then, per
 * endpoint, mode, token and amount (400), and the balance preflight, the first chain call.
 */
import { addressProblems } from '../addressProblems.ts'
import { ApiError, InvalidArgumentError } from '../errors.ts'
import { type Ecosystem, type EcosystemId, formatToken, NATIVE_TOKEN, parseToken } from '../ecosystem.ts'
import { DistributorNotFoundError } from '../membership/errors.ts'
import { OpportunityDelistedError, OpportunityNotFoundError } from '../opportunities/errors.ts'
import { findOpportunity, type QueryDeps } from '../opportunities/query.ts'
import type { LiveOpportunity } from '../opportunities/records.ts'
import type { LoadedEcosystem } from '../registry.ts'
import type { Distributor } from '../store/schema.ts'
import { InsufficientBalanceError, NotAMemberError } from './errors.ts'
import type { Lookups } from './lookups.ts'

export interface CheckDeps extends QueryDeps {
  lookups: Lookups
}

export interface Checked {
  opportunity: LiveOpportunity
  ecosystem: LoadedEcosystem
  distributor: Distributor
  /** Canonical wallet address. */
  wallet: string
}

/**
 * Parses an address (or, for token fields, `native` in any case) of the request, naming the request's field in the
 * 400, and for a token field the coin's spelling too (`NATIVE` had been told only what an address must look like).
 */
export function parseField(plugin: Ecosystem<EcosystemId, unknown>, input: string, field: string, kind: 'wallet' | 'token' = 'token'): string {
  try {
    if (kind === 'token' && input.toLowerCase() === NATIVE_TOKEN) return NATIVE_TOKEN
    return kind === 'token' ? parseToken(plugin, input) : plugin.address.parse(input)
  } catch (e) {
    if (!(e instanceof ApiError) || e.code !== 'INVALID_ARGUMENT') throw e
    const reason = String(Object.values(e.context)[0] ?? e.message)
    const coin = kind === 'token' ? ` (or native, for the chain's coin)` : ''
    throw new InvalidArgumentError(`${field} is not a valid ${plugin.id} address${coin}: ${reason}`, { [field]: reason })
  }
}

/**
 * The member check comes first, yet the wallet's ecosystem is the opportunity's. When the opportunity
 * is unknown, the address is checked in every loaded ecosystem that accepts its form, so an unknown
 * wallet is still told it is not a member before it learns anything about the catalog.
 */
async function memberWallet(deps: CheckDeps, ecosystem: LoadedEcosystem | undefined, userAddress: string): Promise<string | undefined> {
  if (ecosystem) {
    const wallet = parseField(ecosystem.plugin, userAddress, 'userAddress', 'wallet')
    return (await deps.lookups.isMember(ecosystem.plugin.id, wallet)) ? wallet : undefined
  }
  const loaded = await deps.ecosystems.all()
  const candidates = loaded.filter((e) => e.plugin.address.isValid(userAddress))
  // Each ecosystem's own reason, as a known opportunity's would give it (a checksum typo is named as one).
  if (!candidates.length)
    throw new InvalidArgumentError(`userAddress is not a wallet address of ${addressProblems(loaded, userAddress)}`, { userAddress: 'not an address' })
  for (const e of candidates) {
    const wallet = e.plugin.address.parse(userAddress)
    if (await deps.lookups.isMember(e.plugin.id, wallet)) return wallet
  }
  return undefined
}

export async function checkCommon(
  deps: CheckDeps,
  p: { kind: 'deposit' | 'withdraw'; orgId: string; opportunityId: string; userAddress: string; distributorId: string },
): Promise<Checked> {
  // Both lookups at once (they do not depend on each other); their verdicts still come in the ruled order.
  const [found, distributor] = await Promise.all([
    findOpportunity(deps, p.opportunityId, deps.lookups.opportunity),
    deps.lookups.distributor(p.distributorId),
  ])
  const wallet = await memberWallet(deps, found?.ecosystem, p.userAddress)
  if (wallet === undefined) throw new NotAMemberError(p.userAddress)
  if (!found) throw new OpportunityNotFoundError(p.opportunityId)
  // Holders of a delisted opportunity still get their funds out.
  if (p.kind === 'deposit' && found.opportunity.delistedAt !== null) throw new OpportunityDelistedError(p.opportunityId)
  if (!distributor || distributor.orgId !== p.orgId) throw new DistributorNotFoundError(p.distributorId)
  // Solana and TON vaults are wallets, which may sign in: a deposit from the vault to itself lands, costs its fee and
  // moves nothing (as a stream funded by its own treasury would).
  const vault = found.opportunity.listing.vaultAddress
  if (wallet === vault)
    throw new InvalidArgumentError(`userAddress is this opportunity's vault (${found.ecosystem.plugin.address.format(vault)}); a ${p.kind} moves funds between a wallet and the vault`, {
      userAddress: "is the opportunity's vault",
    })
  return { ...found, distributor, wallet }
}

/**
 * The balance preflight: read at request time through the plugin (batched, never cached), then compared. `field` is
 * the request's name for a token the client chose: the plugin's 400 for it (no ERC-20 there, say) names its own
 * parameter, `token`.
 */
export async function preflight(ecosystem: LoadedEcosystem, p: { chainId: string; owner: string; token: string; required: bigint; field?: string }): Promise<void> {
  let available: bigint
  try {
    available = await ecosystem.plugin.balance.read(ecosystem.client, { chainId: p.chainId, owner: p.owner, token: p.token })
  } catch (e) {
    if (p.field === undefined || !(e instanceof InvalidArgumentError) || !('token' in e.context)) throw e
    const { token, ...rest } = e.context
    throw new InvalidArgumentError(e.message, { ...rest, [p.field]: token }, { cause: e })
  }
  if (available < p.required)
    throw new InsufficientBalanceError({ required: p.required, available, token: formatToken(ecosystem.plugin, p.token) })
}

/**
 * The preflight comes before the builder in outcome: a wallet short of funds hears that, whatever the builder would
 * have said, but for the builder counting more of that token, or less of it where it can be spent (fees beside the
 * amount; Solana's associated account alone), and for its refusals naming one of `outranking`, the fields no top-up
 * can mend (the request's token field: a swap router that cannot price `tokenIn`, which the ruled order checks
 * before the balance; a stream's amount under the least a transfer carries): told to top up first, a client would,
 * and be refused again. Both start at once, though: the builder's reads (allowance, token names) leave in
 * the same batched RPC call as the balance read instead of waiting for the next one, and a slow chain holds the
 * request for one capability's time, not two (a Solana stream creation that waited for its preflight first took
 * ~29 s against a node answering each call in 9.5 s). The builder reads, never writes.
 */
export async function preflightThenBuild<T>(check: Promise<void>, build: () => Promise<T>, outranking: readonly string[] = []): Promise<T> {
  let built: Promise<T>
  try {
    built = build()
  } catch (e) {
    built = Promise.reject(e)
  }
  // Its failure matters only once the balance is known to suffice; until then it must not go unhandled.
  built.catch(() => {})
  try {
    await check
  } catch (short) {
    if (!(short instanceof InsufficientBalanceError)) throw short
    const refusal = await built.then(
      () => undefined,
      (e: unknown) => e,
    )
    if (refusal instanceof InsufficientBalanceError) {
      // The builder's count of the same token is the whole of what the wallet needs (a TON or SOL deposit's amount and
      // the fees kept beside it, `covers` saying so; the associated account Solana spends from, `source`): told the
      // preflight's count, a client topping up to it was refused again (audits).
      const sameToken = refusal.token === short.token
      throw sameToken && (refusal.required > short.required || refusal.available < short.available) ? refusal : short
    }
    throw refusal instanceof InvalidArgumentError && outranking.some((field) => field in refusal.context) ? refusal : short
  }
  return built
}
