/**
 * Wallet membership: check, agreement (nonce + message to sign), create (verify, consume, register).
 * The order of checks on create is the one DECISIONS.md rules; each failure is its own error class.
 */
import { randomUUID } from 'node:crypto'
import type { Clock } from '../clock.ts'
import { InvalidArgumentError, quoted } from '../errors.ts'
import { canonicalChainId, type EcosystemRegistry } from '../registry.ts'
import type { Store } from '../store/store.ts'
import type { MemberCache } from './memberCache.ts'
import {
  DistributorNotFoundError,
  InvalidNonceError,
  InvalidSignatureError,
  InvalidUrlError,
  MembershipExistsError,
} from './errors.ts'

const EXPIRED_NONCE_GRACE_MS = 24 * 60 * 60 * 1000
const EXPIRED_NONCES_PER_AGREEMENT = 100

export interface MembershipDeps {
  store: Store
  clock: Clock
  ecosystems: EcosystemRegistry
  members: MemberCache
  nonceTtlSeconds: number
}

export interface CheckMembershipParameters {
  address: string
  walletEcosystem: string
}

export interface AgreementParameters {
  orgId: string
  address: string
  walletEcosystem: string
  url: string
  chainId?: string
}

export interface CreateMembershipParameters {
  orgId: string
  address: string
  walletEcosystem: string
  signature: string
  nonce: string
  distributorId?: string
}

async function resolveWallet(deps: MembershipDeps, walletEcosystem: string, address: string) {
  const ecosystem = await deps.ecosystems.get(walletEcosystem)
  return { ecosystem, address: ecosystem.plugin.address.parse(address) }
}

function parseAppUrl(raw: string): URL {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new InvalidUrlError('it does not parse as a URL')
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new InvalidUrlError('only http and https are accepted')
  if (url.username || url.password) throw new InvalidUrlError('it must not carry credentials')
  // As signed and stored (twice: the URL and the message), percent-encoded: 2,048 characters of `€` had made ~18,000,
  // a row of ~37 KB a publishable key could write 10,000 times an hour (an audit).
  if (url.href.length > MAX_URL_LENGTH)
    throw new InvalidUrlError(`it is ${url.href.length} characters once percent-encoded (as it is signed), more than ${MAX_URL_LENGTH}`)
  return url
}

/** The longest `url` as the message carries it (percent-encoded); the body's own limit is the same, as sent. */
export const MAX_URL_LENGTH = 2048

/** 32 hex digits as the UUID they are (8-4-4-4-12); anything else as it is. */
const uuidForm = (nonce: string) =>
  /^[0-9a-f]{32}$/.test(nonce) ? `${nonce.slice(0, 8)}-${nonce.slice(8, 12)}-${nonce.slice(12, 16)}-${nonce.slice(16, 20)}-${nonce.slice(20)}` : nonce

export async function checkMembership(deps: MembershipDeps, p: CheckMembershipParameters) {
  const { ecosystem, address } = await resolveWallet(deps, p.walletEcosystem, p.address)
  return { isMember: await deps.members.isMember(ecosystem.plugin.id, address) }
}

export async function issueAgreement(deps: MembershipDeps, p: AgreementParameters) {
  const { ecosystem, address } = await resolveWallet(deps, p.walletEcosystem, p.address)
  const url = parseAppUrl(p.url)
  // SIWE needs one (its plugin's default is mainnet's "1"); Solana's and TON's messages carry none, so none is recorded
  // unless a client names the wallet's chain in its ecosystem's own form ("mainnet", "-239").
  if (p.chainId !== undefined && !ecosystem.plugin.ownsChain(p.chainId))
    throw new InvalidArgumentError(
      `chainId "${quoted(p.chainId)}" is not a chain of the ${ecosystem.plugin.id} ecosystem${ecosystem.plugin.chainIdForms ? ` (write ${ecosystem.plugin.chainIdForms})` : ecosystem.plugin.signIn.defaultChainId ? ` (such as "${ecosystem.plugin.signIn.defaultChainId}")` : ''}`,
      {
        chainId: `not a ${ecosystem.plugin.id} chain id`,
      },
    )
  const chainId = p.chainId === undefined ? (ecosystem.plugin.signIn.defaultChainId ?? null) : canonicalChainId(ecosystem.plugin, p.chainId)
  const now = deps.clock.now()
  // Agreements are open to publishable keys, one row each: the expired ones go a few at a time, so the table keeps
  // about a TTL and a day's worth. That day keeps "expired" (not "unknown") the answer to a nonce sent a little late.
  await deps.store.deleteExpiredNonces(now - EXPIRED_NONCE_GRACE_MS, EXPIRED_NONCES_PER_AGREEMENT)
  const nonce = randomUUID()
  const params = {
    address,
    domain: url.host,
    // The parsed form, as `domain` is: an international name is punycode in both, and what is signed is plain ASCII.
    uri: url.href,
    chainId,
    nonce,
    issuedAt: new Date(now),
    expiresAt: new Date(now + deps.nonceTtlSeconds * 1000),
  }
  const message = ecosystem.plugin.signIn.message(params)
  await deps.store.insertNonce({
    nonce,
    orgId: p.orgId,
    ecosystem: ecosystem.plugin.id,
    address,
    message,
    chainId,
    domain: params.domain,
    uri: params.uri,
    issuedAt: now,
    expiresAt: params.expiresAt.getTime(),
    consumedAt: null,
  })
  return { nonce, message }
}

export async function createMembership(deps: MembershipDeps, p: CreateMembershipParameters) {
  const { ecosystem, address } = await resolveWallet(deps, p.walletEcosystem, p.address)
  const id = ecosystem.plugin.id
  if (await deps.members.isMember(id, address, { fresh: true })) throw new MembershipExistsError(ecosystem.plugin.address.format(address))
  let distributorId: string | null = null
  if (p.distributorId !== undefined) {
    const distributor = await deps.store.getDistributor(p.distributorId)
    if (!distributor || distributor.orgId !== p.orgId) throw new DistributorNotFoundError(p.distributorId)
    // The stored form: the distributor's signups are found by it.
    distributorId = distributor.id
  }

  // A UUID reads the same in either case (RFC 9562): one a client's UUID type prints in capitals is still ours. The
  // signed SIWE and SIWS messages carry it without its dashes (their nonce is alphanumeric): a client that read it back
  // from the message (viem's parseSiweMessage) sends that form, and was told the nonce was unknown.
  const nonce = await deps.store.getNonce(uuidForm(p.nonce.toLowerCase()))
  const now = deps.clock.now()
  // Another organization's nonce is as good as none: a signature and nonce that leaked must not let it take the signup.
  if (!nonce || nonce.orgId !== p.orgId) throw new InvalidNonceError('unknown')
  if (nonce.ecosystem !== id || nonce.address !== address) throw new InvalidNonceError('other_wallet')
  // A nonce is consumed with its wallet's membership, in one transaction: a request that finds it consumed lost a race
  // to a create of the same wallet (a double click, a retry after a lost answer), and is told the wallet is a member
  // (409, as DECISIONS orders it before the nonce), not to sign a new agreement (an audit: two processes, one body).
  const consumed = async (): Promise<never> => {
    if (await deps.members.isMember(id, address, { fresh: true })) throw new MembershipExistsError(ecosystem.plugin.address.format(address))
    throw new InvalidNonceError('consumed')
  }
  if (nonce.consumedAt !== null) await consumed()
  if (nonce.expiresAt <= now) throw new InvalidNonceError('expired')

  const verdict = await ecosystem.plugin.signIn.verify(ecosystem.client, {
    address,
    domain: nonce.domain,
    uri: nonce.uri,
    chainId: nonce.chainId,
    nonce: nonce.nonce,
    issuedAt: new Date(nonce.issuedAt),
    expiresAt: new Date(nonce.expiresAt),
    message: nonce.message,
    signature: p.signature,
    now: new Date(now),
  })
  if (!verdict.valid) throw new InvalidSignatureError(verdict.reason)

  // Time has passed during verification (an RPC call, maybe); the transaction re-checks expiry at commit time.
  const result = await deps.store.createMemberWithNonce(
    nonce.nonce,
    { ecosystem: id, address, orgId: p.orgId, distributorId, chainId: nonce.chainId, createdAt: now },
    deps.clock.now(),
  )
  if (!result.ok) {
    if (result.reason === 'exists') {
      deps.members.registered(id, address)
      throw new MembershipExistsError(ecosystem.plugin.address.format(address))
    }
    const again = await deps.store.getNonce(nonce.nonce)
    // Gone: expired, and swept since.
    if (again !== undefined && again.consumedAt !== null) await consumed()
    throw new InvalidNonceError('expired')
  }
  deps.members.registered(id, address)
  return { isMember: true, error: '' }
}
