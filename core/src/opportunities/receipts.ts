/**
 * A receipt token is one vault's: a Solana or TON position is the wallet's balance of it, so another vault under the
 * same receipt token would count those shares as a position in each, and its withdrawals would send them to a vault
 * that never issued them. One vault under several ids (delisted, imported again) is one position and passes. The
 * import and the refresh both hold entries to it: an entry imported while its chain did not answer is checked by
 * the receipt token its file names, and again when a refresh reads it.
 */
import type { ChainFacts, Listing } from './schema.ts'

export interface ReceiptHolder {
  id: string
  vault: string
}

/** The receipt token an entry's positions are counted in: the chain's where read, else the file's; undefined if neither says. */
export function receiptOf(listing: Pick<Listing, 'receiptToken'>, facts: Pick<ChainFacts, 'receiptToken'> | null): string | undefined {
  return facts?.receiptToken ?? listing.receiptToken.address
}

/** Receipt tokens and their first holders, keyed per chain, in the order entries are offered. */
export function receiptHolders() {
  const holders = new Map<string, ReceiptHolder>()
  const key = (ecosystem: string, chainId: string, receipt: string) => `${ecosystem}|${chainId}|${receipt}`
  return {
    /** Records `entry` as the receipt's holder unless one is; returns the problem where another vault holds it. */
    offer(entry: { ecosystem: string; chainId: string; id: string; vault: string }, receipt: string | undefined): string | undefined {
      if (receipt === undefined) return undefined
      const k = key(entry.ecosystem, entry.chainId, receipt)
      const holder = holders.get(k)
      if (holder === undefined) holders.set(k, { id: entry.id, vault: entry.vault })
      if (holder === undefined || holder.vault === entry.vault) return undefined
      return (
        `receiptToken: ${receipt} is already the receipt token of opportunity ${holder.id}, another vault (${holder.vault}); ` +
        "a wallet's balance of it would count as a position in both, and withdrawals would send it to a vault that did not issue it"
      )
    },
  }
}
