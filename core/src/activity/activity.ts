/**
 * `GET /v2/wallets/activity` and `GET /v2/distributors/{distributorId}/activity`: what an organization's keys did,
 * newest first. An organization sees only its own actions (built with its keys, and their verifications) and the
 * signups through its own distributors; another organization's distributor is 404, as if it did not exist.
 */
import { pagination, parsePage } from '../paging.ts'
import type { EcosystemRegistry } from '../registry.ts'
import { DistributorNotFoundError } from '../membership/errors.ts'
import { InvalidFilterError } from '../opportunities/errors.ts'
import { UUID_PATTERN } from '../opportunities/schema.ts'
import type { Store } from '../store/store.ts'
import { resolveWallet } from '../portfolio/wallet.ts'
import { TooManyAddressesError } from './errors.ts'
import { type ActivityList, DEFAULT_ACTIVITY_LIMIT, type DistributorActivityQuery, MAX_ACTIVITY_ADDRESSES, MAX_ACTIVITY_LIMIT, type WalletActivityQuery } from './schema.ts'
import { type PluginsById, toActivity } from './view.ts'

export interface ActivityDeps {
  store: Store
  ecosystems: EcosystemRegistry
}

async function pluginsById(ecosystems: EcosystemRegistry): Promise<PluginsById> {
  return new Map((await ecosystems.all()).map((e) => [e.plugin.id, e.plugin]))
}

/** Canonical addresses per ecosystem; each input is read by the first loaded ecosystem that accepts its form. */
async function walletsOf(ecosystems: EcosystemRegistry, raw: string): Promise<Map<string, string[]>> {
  // A query string reads `+` as a space, and no address form holds one: a TON address in standard base64 sent
  // unencoded is read back (an audit).
  const inputs = raw.split(',').map((s) => s.trim().replaceAll(' ', '+'))
  if (inputs.length > MAX_ACTIVITY_ADDRESSES) throw new TooManyAddressesError(inputs.length, MAX_ACTIVITY_ADDRESSES)
  const loaded = await ecosystems.all()
  const wallets = new Map<string, Set<string>>()
  const sent = raw.split(',')
  inputs.forEach((input, i) => {
    const { ecosystem, address } = resolveSent(loaded, input, sent[i]!, `addresses[${i}]`)
    const set = wallets.get(ecosystem.plugin.id) ?? new Set()
    wallets.set(ecosystem.plugin.id, set.add(address))
  })
  return new Map([...wallets].map(([id, set]) => [id, [...set]]))
}

/**
 * The address as trimmed, else (where that is refused) with its trailing space read back as `+` too: a TON address's
 * last character may be one, which the trim took for white space (a re-audit); the first refusal is the one told.
 */
function resolveSent(loaded: Parameters<typeof resolveWallet>[0], trimmed: string, sent: string, field: string): ReturnType<typeof resolveWallet> {
  try {
    return resolveWallet(loaded, trimmed, field)
  } catch (e) {
    const plus = sent.trimStart().replace(/ $/, '+').trim().replaceAll(' ', '+')
    if (plus === trimmed) throw e
    try {
      return resolveWallet(loaded, plus, field)
    } catch {
      throw e
    }
  }
}

export async function walletActivity(deps: ActivityDeps, p: { orgId: string; query: WalletActivityQuery }): Promise<ActivityList> {
  const page = parsePage(p.query, { fallback: DEFAULT_ACTIVITY_LIMIT, max: MAX_ACTIVITY_LIMIT })
  const wallets = await walletsOf(deps.ecosystems, p.query.addresses)
  const [{ rows, total }, plugins] = await Promise.all([
    deps.store.listWalletActivity({ orgId: p.orgId, wallets, offset: page.offset, limit: page.limit }),
    pluginsById(deps.ecosystems),
  ])
  return { activities: rows.map((r) => toActivity(r, plugins)), pagination: pagination(page, total) }
}

const UUID = new RegExp(UUID_PATTERN)

export async function distributorActivity(
  deps: ActivityDeps,
  p: { orgId: string; distributorId: string; query: DistributorActivityQuery },
): Promise<ActivityList> {
  const page = parsePage(p.query, { fallback: DEFAULT_ACTIVITY_LIMIT, max: MAX_ACTIVITY_LIMIT })
  const opportunityId = p.query.opportunityId?.trim()
  if (opportunityId !== undefined && !UUID.test(opportunityId)) throw new InvalidFilterError('opportunityId', 'must be an opportunity UUID')
  const distributor = await deps.store.getDistributor(p.distributorId)
  if (!distributor || distributor.orgId !== p.orgId) throw new DistributorNotFoundError(p.distributorId)
  const [{ rows, total }, plugins] = await Promise.all([
    deps.store.listDistributorActivity({
      orgId: p.orgId,
      distributorId: distributor.id,
      // Opportunity ids are stored lowercase (the catalog import lowercases them).
      ...(opportunityId === undefined ? {} : { opportunityId: opportunityId.toLowerCase() }),
      offset: page.offset,
      limit: page.limit,
    }),
    pluginsById(deps.ecosystems),
  ])
  return { activities: rows.map((r) => toActivity(r, plugins)), pagination: pagination(page, total) }
}
