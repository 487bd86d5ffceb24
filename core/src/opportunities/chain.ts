/**
 * What the chain knows about a vault, read through its ecosystem's plugin, and the USD value derived
 * from it. The catalog file supplies the price; the chain supplies the amounts.
 */
import { NATIVE_TOKEN, parseToken } from '../ecosystem.ts'
import { InvalidArgumentError } from '../errors.ts'
import type { LoadedEcosystem } from '../registry.ts'
import type { ChainFacts, Listing } from './schema.ts'

/** Vaults read at once (import, refresh): enough to overlap RPC latency without a burst against one node. */
export const VAULTS_AT_ONCE = 8
/**
 * Vaults read at once where the plugin folds concurrent reads into one call (no `readsAtOnce`: EVM's Multicall3):
 * a group's reads cost the round trips of one vault's, so a pass over 500 vaults is ~8 groups in turn, not ~63.
 */
export const FOLDED_VAULTS_AT_ONCE = 64

/** How many of a chain's vaults are read at once: each read a request of its own (Solana, TON) or folded (EVM). */
export const vaultsAtOnce = (ecosystem: LoadedEcosystem): number => (ecosystem.plugin.balance.readsAtOnce === undefined ? FOLDED_VAULTS_AT_ONCE : VAULTS_AT_ONCE)

/** `read` over `items`, `size` (VAULTS_AT_ONCE) at a time, answers in order; stops starting groups once `signal` aborts. */
export async function inGroups<T, R>(items: readonly T[], read: (item: T) => Promise<R>, signal?: AbortSignal, size = VAULTS_AT_ONCE): Promise<R[]> {
  const out: R[] = []
  for (let i = 0; i < items.length && !signal?.aborted; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(read))))
  return out
}

export async function readChainFacts(
  ecosystem: LoadedEcosystem,
  listing: Pick<Listing, 'chainId' | 'vaultAddress' | 'baseToken' | 'receiptToken' | 'depositTokens'>,
): Promise<ChainFacts> {
  const tokens = listing.depositTokens.map((t) => t.address).filter((a) => a !== NATIVE_TOKEN)
  const state = await ecosystem.plugin.balance.vault(ecosystem.client, {
    tokens,
    chainId: listing.chainId,
    vaultAddress: listing.vaultAddress,
    // Ecosystems whose vaults do not name their tokens on chain (Solana, TON) read the ones the catalog gives.
    ...(listing.baseToken.address === undefined ? {} : { baseToken: listing.baseToken.address }),
    ...(listing.receiptToken.address === undefined ? {} : { receiptToken: listing.receiptToken.address }),
  })
  const facts: ChainFacts = {
    // Canonical forms, whatever form the plugin answered in, so comparisons with parsed input hold.
    baseToken: parseToken(ecosystem.plugin, state.baseToken),
    receiptToken: parseToken(ecosystem.plugin, state.receiptToken),
    decimals: state.decimalsAssumed ? (fileDecimals(listing, parseToken(ecosystem.plugin, state.baseToken)) ?? state.decimals) : state.decimals,
    ...(state.decimalsAssumed ? { decimalsFromFile: true as const } : {}),
    ...(state.receiptDecimals === undefined ? {} : { receiptDecimals: state.receiptDecimals }),
    totalAssets: state.totalAssets.toString(),
    ...(state.tokenDecimals === undefined ? {} : { tokenDecimals: state.tokenDecimals }),
  }
  // Settled here, the file's decimals counted where the chain states none (an audit's TON jetton without them).
  if (ecosystem.plugin.receiptsOneToOne && receiptDecimals(listing, facts) !== facts.decimals) throw new ReceiptsNotOneToOneError(receiptDecimals(listing, facts), facts.decimals)
  return facts
}

/** The receipt token's decimals: the chain's word where it gave one; else the file's; else the asset's (a share without a decimals offset). */
export const receiptDecimals = (listing: Pick<Listing, 'receiptToken'>, facts: ChainFacts): number => facts.receiptDecimals ?? listing.receiptToken.decimals ?? facts.decimals

/**
 * A vault of an ecosystem whose receipts are one unit per base unit (`receiptsOneToOne`: Solana, TON) with a receipt
 * token of other decimals than its base token's, as read or as the file gives them: its holdings would be valued
 * 10^difference times off (an audit: one 9-decimal receipt read as 1,000 of a 6-decimal base token). Refused at import;
 * a refresh takes such an entry off the API.
 */
export class ReceiptsNotOneToOneError extends InvalidArgumentError {
  constructor(receipt: number, base: number) {
    super(`receiptToken has ${receipt} decimals and the base token ${base}: this ecosystem's vaults issue one receipt unit per base unit, so both must have the same decimals`, {
      receiptToken: `has ${receipt} decimals, the base token ${base}`,
    })
  }
}

/** The base token's decimals as the catalog file gives them: its `baseToken`, else its deposit token of that address. */
function fileDecimals(listing: Pick<Listing, 'baseToken' | 'depositTokens'>, baseToken: string): number | undefined {
  return listing.baseToken.decimals ?? listing.depositTokens.find((t) => t.address === baseToken)?.decimals
}

/**
 * A deposit token's decimals as the chain read them: the vault's asset's, or the token's own `decimals()` (null: it
 * answered none, so it is no token); undefined where the chain was not asked.
 */
export function chainDecimals(facts: ChainFacts, token: string): number | null | undefined {
  return token === facts.baseToken ? facts.decimals : facts.tokenDecimals?.[token]
}

/** Where the file and the chain disagree about the vault's tokens: the file is wrong (or names another vault). */
export function disagreements(listing: Listing, facts: ChainFacts): string[] {
  const out: string[] = []
  if (listing.baseToken.address !== undefined && listing.baseToken.address !== facts.baseToken)
    out.push(`baseToken.address: the file says ${listing.baseToken.address}, the vault's asset is ${facts.baseToken}`)
  if (listing.baseToken.decimals !== undefined && listing.baseToken.decimals !== facts.decimals)
    out.push(`baseToken.decimals: the file says ${listing.baseToken.decimals}, the chain says ${facts.decimals}`)
  if (listing.receiptToken.decimals !== undefined && facts.receiptDecimals !== undefined && listing.receiptToken.decimals !== facts.receiptDecimals)
    out.push(`receiptToken.decimals: the file says ${listing.receiptToken.decimals}, the chain says ${facts.receiptDecimals}`)
  if (listing.receiptToken.address !== undefined && listing.receiptToken.address !== facts.receiptToken)
    out.push(`receiptToken.address: the file says ${listing.receiptToken.address}, the vault's share token is ${facts.receiptToken}`)
  // The API shows deposit tokens by address: the vault's asset listed again must not carry other decimals.
  for (const [i, t] of listing.depositTokens.entries()) {
    const onChain = chainDecimals(facts, t.address)
    if (onChain === null) out.push(`depositTokens[${i}].address: ${t.address} answers no decimals() on chain ${listing.chainId}, so it is no token there`)
    // The API and the portfolio show the token's amounts in the chain's scale (records.ts depositTokenDecimals).
    else if (onChain !== undefined && onChain !== t.decimals)
      out.push(
        t.address === facts.baseToken && facts.decimalsFromFile
          ? `depositTokens[${i}].decimals: the file says ${t.decimals} for the vault's asset ${t.address}, and ${onChain} elsewhere (the chain states none; give one)`
          : `depositTokens[${i}].decimals: the file says ${t.decimals} for ${t.address === facts.baseToken ? "the vault's asset " : ''}${t.address}, the chain says ${onChain}`,
      )
  }
  return out
}

/**
 * USD value of `totalAssets` smallest units at `priceUsd` per whole token, to the cent, half-cents rounded up. The
 * price is taken as the decimal it is written as (0.285, not the binary fraction nearest it) and the product is
 * exact, in integers: only the answer, in cents, becomes a floating-point number.
 */
export function tvlUsd(totalAssets: bigint, decimals: number, priceUsd: number): number {
  const price = exactDecimal(priceUsd)
  const numerator = totalAssets * price.digits * 100n
  const denominator = 10n ** BigInt(decimals + price.scale)
  const cents = (numerator + denominator / 2n) / denominator
  // Read from its decimal form: the double nearest the exact amount (cents / 100 in floating point is not always).
  return Number(`${cents / 100n}.${(cents % 100n).toString().padStart(2, '0')}`)
}

/** A finite non-negative number as `digits / 10^scale`, from its shortest decimal form (`1.5e-7`: 15 / 10^8). */
function exactDecimal(n: number): { digits: bigint; scale: number } {
  const [mantissa, exponent = '0'] = String(n).split('e')
  const [whole, fraction = ''] = mantissa!.split('.')
  const scale = fraction.length - Number(exponent)
  const digits = BigInt(whole! + fraction)
  return scale >= 0 ? { digits, scale } : { digits: digits * 10n ** BigInt(-scale), scale: 0 }
}
