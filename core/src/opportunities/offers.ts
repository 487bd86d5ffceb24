/**
 * Whether a catalog entry offers only what its plugin builds, judged as a deposit is before the chain is asked. The
 * import asks it of every entry whose chain answers, and of one whose chain did not but that keeps the facts of the
 * same vault; the refresh asks it of an entry on its first read (imported while its chain did not answer, and
 * without facts to keep, so unchecked until then).
 */
import { attributionTag } from '../attribution.ts'
import { findApiError, isChainNotServed } from '../errors.ts'
import type { EcosystemRegistry } from '../registry.ts'
import type { ChainFacts, Listing } from './schema.ts'

export interface OffersDeps {
  ecosystems: EcosystemRegistry
}

const MODES = [
  ['direct', 'swapDirectEnabled'],
  ['swap', 'swapRouteEnabled'],
] as const

/**
 * What the listing offers that its plugin would refuse to build, asked the way a deposit asks (`transactions.check`,
 * no chain read): a mode the ecosystem does not build, or a deposit token no enabled mode takes. Such an entry would
 * list what every deposit then refuses.
 */
export async function untakenOffers(deps: OffersDeps, listing: Listing, facts: ChainFacts, options: { chainUnread?: boolean } = {}): Promise<string[]> {
  const { plugin, client } = await deps.ecosystems.get(listing.ecosystem)
  const opportunity = { id: listing.id, chainId: listing.chainId, vaultAddress: listing.vaultAddress, baseToken: facts.baseToken, receiptToken: facts.receiptToken }
  // The vault stands in for the wallet (any valid address does, as nothing is read), with a tag of the right form.
  const subject = { distributorId: listing.id, actionId: listing.id, wallet: listing.vaultAddress, chainId: listing.chainId }
  const deposit = { kind: 'deposit' as const, chainId: listing.chainId, owner: listing.vaultAddress, opportunity, amount: 1n, tag: attributionTag('check', subject), slippageBps: 0 }
  const refusal = (mode: 'direct' | 'swap', tokenIn: string): string | undefined => {
    try {
      plugin.transactions.check(client, { ...deposit, tokenIn, mode })
      return undefined
    } catch (e) {
      const api = findApiError(e)
      if (api?.code !== 'INVALID_ARGUMENT') throw e
      // Where this process could not read the chain, a refusal for want of its RPC here is that same gap, not the
      // listing's fault: the entry keeps its facts, as it would on a chain that is down.
      if (options.chainUnread && isChainNotServed(api)) return undefined
      // The amount is made up: a refusal of it (a minimum a deposit must carry) says nothing of what is offered.
      if ('amount' in api.context) return undefined
      return String(Object.values(api.context)[0] ?? api.message)
    }
  }
  const none = noModes(listing)
  if (none) return [none]
  const enabled = MODES.filter(([, flag]) => listing[flag])
  const problems: string[] = []
  // The vault's own asset is what every mode takes, if the ecosystem builds that mode at all.
  for (const [mode, flag] of enabled) {
    const why = refusal(mode, facts.baseToken)
    if (why !== undefined) problems.push(`${flag}: ${plugin.id} does not build ${mode} deposits here (${why})`)
  }
  for (const [i, t] of listing.depositTokens.entries()) {
    // A deposit refuses the receipt token in every mode (core/src/actions/build.ts), so listing it offers nothing.
    if (t.address === facts.receiptToken) {
      problems.push(
        facts.baseToken === facts.receiptToken
          ? `depositTokens[${i}]: ${t.symbol} is both the vault's asset and its receipt token (a vault of its own shares), which this server does not list: a deposit would take the shares it mints`
          : `depositTokens[${i}]: ${t.symbol} is the vault's receipt token, which no deposit takes; list the tokens a wallet deposits`,
      )
      continue
    }
    const whys = enabled.map(([mode]) => [mode, refusal(mode, t.address)] as const)
    if (whys.every(([, why]) => why !== undefined))
      problems.push(`depositTokens[${i}]: no enabled mode takes ${t.symbol}: ${whys.map(([mode, why]) => `${mode}: ${why}`).join('; ')}`)
  }
  return problems
}

/** An entry with neither mode enabled takes no deposits at all; asked without the chain. */
export function noModes(listing: Listing): string | undefined {
  if (MODES.some(([, flag]) => listing[flag])) return undefined
  return 'swapDirectEnabled, swapRouteEnabled: both false, so the entry takes no deposits; to close it, delist it (opportunity delist ID)'
}
