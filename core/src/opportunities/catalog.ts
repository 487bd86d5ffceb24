/**
 * Reading a catalog file: its shape by the schema, then what only the ecosystems know (is the
 * ecosystem loaded, is the chain one of its chains, does each address parse). Every problem is
 * collected and named by entry and field, so the operator fixes the file in one pass.
 */
import { Value } from '@sinclair/typebox/value'
import { ApiError, hasControlCharacter, quoted } from '../errors.ts'
import { type Ecosystem, type EcosystemId, NATIVE_TOKEN, parseToken } from '../ecosystem.ts'
import { canonicalChainId, type EcosystemRegistry } from '../registry.ts'
import { CatalogError } from './errors.ts'
import { CatalogFile, type CatalogEntry, type Listing } from './schema.ts'

/** Problems a refused catalog lists: a long file with one repeated mistake would otherwise print thousands of lines. */
export const MAX_PROBLEMS = 50

/** `/opportunities/2/depositTokens/0/address` -> `depositTokens[0].address` */
function fieldOf(path: string): string {
  return path
    .split('/')
    .filter(Boolean)
    .reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part), '')
}

function entryLabel(file: unknown, index: number): string {
  const entry = (file as { opportunities?: unknown[] })?.opportunities?.[index] as { id?: unknown } | undefined
  return typeof entry?.id === 'string' ? `opportunities[${index}] (${entry.id})` : `opportunities[${index}]`
}

/**
 * The file's shape problems and which entries have any; `whole`: the file itself is at fault (not an object, no
 * `opportunities` list); `more`: there were more than are shown. Either way no entry is looked at further.
 */
function shapeProblems(file: unknown): { problems: string[]; entries: Set<number>; whole: boolean; more: boolean } {
  // By field: TypeBox reports a union's branches one by one, and a missing field as missing and then as not of its
  // type; the first line says it.
  const problems = new Map<string, string>()
  const entries = new Set<number>()
  // A file that is no object, or has no list of entries, has no entries to look at; a problem beside a list (a field
  // the file may not have) leaves its entries to be looked at.
  const whole = typeof file !== 'object' || file === null || !Array.isArray((file as { opportunities?: unknown }).opportunities)
  for (const error of Value.Errors(CatalogFile, file)) {
    const m = error.path.match(/^\/opportunities\/(\d+)(\/.*)?$/)
    const field = m ? `${entryLabel(file, Number(m[1]))}: ${fieldOf(m[2] ?? '') || 'entry'}` : fieldOf(error.path) || 'file'
    if (m) entries.add(Number(m[1]))
    if (problems.has(field)) continue
    if (problems.size === MAX_PROBLEMS) return { problems: [...problems.values()], entries, whole, more: true }
    problems.set(field, `${field}: ${error.message}`)
  }
  return { problems: [...problems.values()], entries, whole, more: false }
}

/** The reason an address does not parse, in the words the plugin used. */
function parseAddress(plugin: Ecosystem<EcosystemId, unknown>, input: string, kind: 'account' | 'token'): { ok: true; value: string } | { ok: false; reason: string } {
  try {
    return { ok: true, value: kind === 'token' ? parseToken(plugin, input) : plugin.address.parse(input) }
  } catch (e) {
    if (e instanceof ApiError) return { ok: false, reason: String(Object.values(e.context)[0] ?? e.message) }
    throw e
  }
}

async function entryListing(ecosystems: EcosystemRegistry, entry: CatalogEntry, label: string, problems: string[]): Promise<Listing | undefined> {
  const before = problems.length
  const problem = (field: string, reason: string) => problems.push(`${label}: ${field}: ${reason}`)
  // Served to clients and printed in listings as one line each: a line break or an escape would forge one.
  const oneLine = [
    ['name', entry.name],
    ['protocol', entry.protocol],
    ['baseToken.symbol', entry.baseToken.symbol],
    ['receiptToken.symbol', entry.receiptToken.symbol],
    ...entry.depositTokens.map((t, i) => [`depositTokens[${i}].symbol`, t.symbol]),
  ] as const
  for (const [field, text] of oneLine) if (hasControlCharacter(text)) problem(field, 'has a control character (a line break, an escape); it must be one line of text')
  let plugin: Ecosystem<EcosystemId, unknown>
  try {
    plugin = (await ecosystems.get(entry.ecosystem)).plugin
  } catch (e) {
    if (!(e instanceof ApiError)) throw e
    problem('ecosystem', `"${entry.ecosystem}" is not an ecosystem this deployment loads (${ecosystems.ids.join(', ')})`)
    return undefined
  }
  // Quoted as JSON: a line break in the value would forge a line of the problem list.
  if (!plugin.ownsChain(entry.chainId)) problem('chainId', `"${quoted(entry.chainId)}" is not a chain id of ${plugin.id}`)
  else {
    // Verify, streams and portfolios send a chain id to the first loaded plugin that owns it (registry.ts `chainOf`).
    const first = (await ecosystems.all()).find((e) => e.plugin.ownsChain(entry.chainId))!.plugin
    if (first.id !== plugin.id)
      problem('chainId', `"${quoted(entry.chainId)}" is a chain id of ${first.id} too, which is asked first for it; two ecosystems must not own one chain id`)
  }
  // Stored in its one spelling, which filters, streams and verify compare with.
  const chainId = canonicalChainId(plugin, entry.chainId)
  const address = (field: string, input: string, kind: 'account' | 'token' = 'token') => {
    const r = parseAddress(plugin, input, kind)
    if (!r.ok) problem(field, r.reason)
    return r.ok ? r.value : input
  }
  const vaultAddress = address('vaultAddress', entry.vaultAddress, 'account')
  const vaultToken = (field: 'baseToken' | 'receiptToken') => {
    const t = entry[field]
    return t.address === undefined ? { ...t } : { ...t, address: address(`${field}.address`, t.address) }
  }
  const baseToken = vaultToken('baseToken')
  const receiptToken = vaultToken('receiptToken')
  const first = new Map<string, number>()
  const depositTokens = entry.depositTokens.map((t, i) => {
    if (t.chainId !== undefined && (!plugin.ownsChain(t.chainId) || canonicalChainId(plugin, t.chainId) !== chainId))
      problem(`depositTokens[${i}].chainId`, `must be the opportunity's chain "${quoted(entry.chainId)}"; list a token of another chain as its own opportunity`)
    const canonical = address(`depositTokens[${i}].address`, t.address)
    // Another spelling of one address would show the token twice.
    if (first.has(canonical)) problem(`depositTokens[${i}].address`, `repeats depositTokens[${first.get(canonical)}]`)
    first.set(canonical, i)
    // Wallets show the coin's balance with these decimals (the portfolio); the chain's own coin has fixed ones.
    const coin = plugin.nativeCoin
    if (canonical === NATIVE_TOKEN && t.decimals !== coin.decimals)
      problem(`depositTokens[${i}].decimals`, `the chain's own coin has ${coin.decimals} decimals on ${plugin.id}, the file says ${t.decimals}`)
    return { ...t, address: canonical, chainId }
  })
  if (problems.length > before) return undefined
  return { ...entry, chainId, ecosystem: plugin.id, vaultAddress, baseToken, receiptToken, depositTokens }
}

/** The file's entries as listings (canonical addresses), or a `CatalogError` naming every problem. */
export async function parseCatalog(ecosystems: EcosystemRegistry, file: unknown): Promise<Listing[]> {
  const shape = shapeProblems(file)
  if (shape.whole || shape.more) throw new CatalogError(shape.problems, shape.more ? Infinity : shape.problems.length)
  const entries = (file as CatalogFile).opportunities
  // The entries of a sound shape are looked at too, so a file's every problem of form is told at once (an audit: a bad
  // vault address showed only once another entry's missing name was fixed).
  const problems: string[] = [...shape.problems]
  const seen = new Map<string, number>()
  const listings: Listing[] = []
  for (const [i, entry] of entries.entries()) {
    const label = entryLabel(file, i)
    // An entry of the wrong shape still holds its id (a string, where it is one) against the others'.
    const rawId = (entry as { id?: unknown } | null)?.id
    const id = typeof rawId === 'string' ? rawId.toLowerCase() : undefined
    if (id !== undefined && seen.has(id)) problems.push(`${label}: id: repeats opportunities[${seen.get(id)}]`)
    if (id !== undefined && !seen.has(id)) seen.set(id, i)
    if (shape.entries.has(i) || id === undefined) continue
    const listing = await entryListing(ecosystems, { ...entry, id }, label, problems)
    if (listing) listings.push(listing)
  }
  if (problems.length) throw new CatalogError(problems.slice(0, MAX_PROBLEMS), problems.length)
  return listings
}
