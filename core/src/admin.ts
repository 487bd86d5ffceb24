/**
 * Administration of organizations, keys and distributors: what the CLI and the first-start demo
 * call. Plain keys are returned to the caller once and never stored.
 */
import { randomUUID } from 'node:crypto'
import type { Clock } from './clock.ts'
import { hasControlCharacter, InvalidArgumentError, NotFoundError, quoted } from './errors.ts'
import { generateKey, hashKey, type KeyKind, keyStart, newId } from './keys.ts'
import type { ApiKeyRecord, Organization, Tier } from './store/schema.ts'
import type { Store } from './store/store.ts'

export interface AdminDeps {
  store: Store
  clock: Clock
}

/** Default hourly cost-unit budgets by tier; a monthly cap is off unless set. */
export const DEFAULT_HOURLY_BUDGET: Record<Tier, number> = { standard: 10_000, premium: 100_000 }

export interface CreateOrganizationParameters {
  name: string
  tier?: Tier
  hourlyBudget?: number
  monthlyBudget?: number | null
}

export interface IssuedKey {
  keyId: string
  key: string
}

export interface CreateOrganizationResult {
  orgId: string
  publishableKey: string
  secretKey: string
  publishableKeyId: string
  secretKeyId: string
}

/** Names people read in listings and logs: one line, of a length a listing can show. */
const NAME_MAX = 200

/** What keeps `input` from being a name: the sentence's end ("must be …", "is at most …") and the word for `context`; or undefined. */
export function nameProblem(input: string): { message: string; context: string } | undefined {
  const name = input.trim()
  if (hasControlCharacter(name)) return { message: 'must be one line of text, without control characters', context: 'has a control character' }
  if (Array.from(name).length > NAME_MAX) return { message: `is at most ${NAME_MAX} characters`, context: `longer than ${NAME_MAX} characters` }
  return undefined
}

function checkedName(field: string, input: string): string {
  const problem = nameProblem(input)
  if (problem) throw new InvalidArgumentError(`the ${field} ${problem.message}`, { name: problem.context })
  return input.trim()
}

function budget(name: string, value: number | null | undefined): void {
  if (value === undefined || value === null) return
  if (!Number.isSafeInteger(value) || value < 0) throw new InvalidArgumentError(`${name} must be a whole number of cost units, from 0 to ${Number.MAX_SAFE_INTEGER}`, { [name]: value })
}

/** A new key and the row that stores it (its digest, never the key). */
function newKey(deps: AdminDeps, orgId: string, kind: KeyKind, budgets: Partial<Pick<ApiKeyRecord, 'hourlyBudget' | 'monthlyBudget'>>) {
  budget('hourlyBudget', budgets.hourlyBudget)
  budget('monthlyBudget', budgets.monthlyBudget)
  const key = generateKey(kind)
  const record: ApiKeyRecord = {
    id: newId('key'),
    orgId,
    kind,
    hash: hashKey(key),
    start: keyStart(key),
    hourlyBudget: budgets.hourlyBudget ?? null,
    monthlyBudget: budgets.monthlyBudget ?? null,
    createdAt: deps.clock.now(),
    revokedAt: null,
  }
  return { key, record }
}

export async function issueKey(deps: AdminDeps, orgId: string, kind: KeyKind, budgets: Partial<Pick<ApiKeyRecord, 'hourlyBudget' | 'monthlyBudget'>> = {}): Promise<IssuedKey> {
  const { key, record } = newKey(deps, orgId, kind, budgets)
  await deps.store.insertKey(record)
  return { keyId: record.id, key }
}

/** The organization's row and its two keys, checked and made but not yet written. */
function newOrganization(deps: AdminDeps, p: CreateOrganizationParameters) {
  const name = checkedName('organization name', p.name)
  if (!name) throw new InvalidArgumentError('an organization needs a name', { name: 'must not be empty' })
  const tier = p.tier ?? 'standard'
  budget('hourlyBudget', p.hourlyBudget)
  budget('monthlyBudget', p.monthlyBudget)
  const orgId = newId('org')
  const organization: Organization = {
    id: orgId,
    name,
    tier,
    hourlyBudget: p.hourlyBudget ?? DEFAULT_HOURLY_BUDGET[tier],
    monthlyBudget: p.monthlyBudget ?? null,
    createdAt: deps.clock.now(),
  }
  const publishable = newKey(deps, orgId, 'publishable', {})
  const secret = newKey(deps, orgId, 'secret', {})
  const result: CreateOrganizationResult = {
    orgId,
    publishableKey: publishable.key,
    secretKey: secret.key,
    publishableKeyId: publishable.record.id,
    secretKeyId: secret.record.id,
  }
  return { organization, keys: [publishable.record, secret.record], result }
}

/** The organization and its publishable and secret keys, written together: a failure leaves none of them. */
export async function createOrganization(deps: AdminDeps, p: CreateOrganizationParameters): Promise<CreateOrganizationResult> {
  const { organization, keys, result } = newOrganization(deps, p)
  await deps.store.createOrganization(organization, { keys })
  return result
}

/**
 * The first organization of an empty store, with its keys and a distributor, in one transaction that sees the
 * store empty (processes starting together make one); undefined when an organization exists already.
 */
export async function createFirstOrganization(
  deps: AdminDeps,
  p: CreateOrganizationParameters & { distributorName: string },
): Promise<(CreateOrganizationResult & { distributorId: string }) | undefined> {
  const { organization, keys, result } = newOrganization(deps, p)
  const distributor = { id: randomUUID(), orgId: organization.id, name: p.distributorName, createdAt: deps.clock.now() }
  const created = await deps.store.createOrganization(organization, { keys, distributors: [distributor], onlyIfFirst: true })
  return created ? { ...result, distributorId: distributor.id } : undefined
}

export async function createDistributor(deps: AdminDeps, p: { orgId: string; name?: string }) {
  if (!(await deps.store.getOrganization(p.orgId))) throw new NotFoundError(`organization ${quoted(p.orgId)} not found`, { org: quoted(p.orgId) })
  const distributorId = randomUUID()
  await deps.store.createDistributor({ id: distributorId, orgId: p.orgId, name: checkedName('distributor name', p.name ?? '') || 'default', createdAt: deps.clock.now() })
  return { distributorId }
}

/** Finds a key by its id or by the plain key itself. */
export async function findKey(deps: AdminDeps, ref: { keyId?: string; key?: string }): Promise<ApiKeyRecord> {
  const found = ref.keyId
    ? await deps.store.getKey(ref.keyId)
    : ref.key
      ? (await deps.store.findKeyByHash(hashKey(ref.key)))?.key
      : undefined
  if (!found) throw new NotFoundError('key not found', { key: ref.keyId ?? 'the given key' })
  return found
}

export async function revokeKey(deps: AdminDeps, ref: { keyId?: string; key?: string }) {
  const key = await findKey(deps, ref)
  const revoked = await deps.store.revokeKey(key.id, deps.clock.now())
  return { keyId: key.id, revoked }
}

/** Revokes a key and issues a new one of the same kind, organization and budgets. */
export async function rotateKey(deps: AdminDeps, ref: { keyId?: string; key?: string }) {
  const old = await findKey(deps, ref)
  if (old.revokedAt !== null) throw new InvalidArgumentError('a revoked key cannot be rotated', { key: old.id })
  // One transaction: a store cut between the two writes had left the new key, never shown to anyone, live beside the old.
  const fresh = newKey(deps, old.orgId, old.kind, { hourlyBudget: old.hourlyBudget, monthlyBudget: old.monthlyBudget })
  if (!(await deps.store.replaceKey(old.id, fresh.record, deps.clock.now())))
    throw new InvalidArgumentError('a revoked key cannot be rotated (another rotation or revocation got there first)', { key: old.id })
  return { revokedKeyId: old.id, keyId: fresh.record.id, key: fresh.key, kind: old.kind }
}

/**
 * The organization's budgets, which its keys use unless set on a key (`setKeyBudgets`): the hourly one, and the monthly
 * cap (null: none). Running servers take them within their key cache's time, as a key's.
 */
export async function setOrganizationBudgets(deps: AdminDeps, orgId: string, budgets: { hourlyBudget?: number; monthlyBudget?: number | null }) {
  budget('hourlyBudget', budgets.hourlyBudget)
  budget('monthlyBudget', budgets.monthlyBudget)
  if (budgets.hourlyBudget === undefined && budgets.monthlyBudget === undefined) throw new InvalidArgumentError('give an hourly budget, a monthly budget or both')
  if (!(await deps.store.setOrganizationBudgets(orgId, budgets))) throw new NotFoundError('organization not found', { org: orgId })
  const org = (await deps.store.getOrganization(orgId))!
  return { orgId, hourlyBudget: org.hourlyBudget, monthlyBudget: org.monthlyBudget }
}

export async function setKeyBudgets(
  deps: AdminDeps,
  ref: { keyId?: string; key?: string },
  budgets: { hourlyBudget?: number | null; monthlyBudget?: number | null },
) {
  budget('hourlyBudget', budgets.hourlyBudget)
  budget('monthlyBudget', budgets.monthlyBudget)
  if (budgets.hourlyBudget === undefined && budgets.monthlyBudget === undefined) throw new InvalidArgumentError('give an hourly budget, a monthly budget or both')
  const key = await findKey(deps, ref)
  // It answers nothing again: a budget set on it would read as in force (an audit), as a rotation is refused.
  const revoked = () => new InvalidArgumentError("a revoked key's budgets cannot be set: it answers no request", { key: key.id })
  if (key.revokedAt !== null) throw revoked()
  // Revoked meanwhile (a rotation): nothing written.
  if (!(await deps.store.setKeyBudgets(key.id, budgets))) throw revoked()
  return { keyId: key.id, ...budgets }
}
