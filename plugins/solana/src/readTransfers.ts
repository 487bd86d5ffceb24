/**
 * What a landed transaction moved, from the node's balance metadata rather than by decoding each
 * program's instructions: `pre/postTokenBalances` give every token account's amount before and after,
 * with its mint and owner, and `pre/postBalances` every account's lamports (the fee added back to the
 * payer, so the fee is not reported as a transfer).
 *
 * Balances say who lost and who gained, not who paid whom. Per token, each loser is reported as paying each gainer
 * only what it must have: what the gainer got beyond all the other losers' losses (pairUp). With one sender (a
 * funding transfer, a deposit) that is exact. Token transfers are
 * reported by owner (the wallet), not by token account, which is what a transfer "to the treasury" means.
 * The tag is the memo, read as readTag does. A failed transaction moved nothing: no transfers, no tag.
 */
import { NATIVE_TOKEN, type ReadTagParameters, type ReadTransfersResult, type TokenTransfer } from '@earn/core'
import type { SolanaClient } from './client.ts'
import { landedTransaction, topLevelInstructions } from './readTag.ts'
import { findTags } from './tag.ts'

/** The part of `getTransaction`'s `meta` read here. */
interface BalanceMeta {
  fee: bigint
  preBalances: readonly bigint[]
  postBalances: readonly bigint[]
  preTokenBalances?: readonly TokenBalanceLike[]
  postTokenBalances?: readonly TokenBalanceLike[]
  loadedAddresses?: { writable: readonly string[]; readonly: readonly string[] }
}

interface TokenBalanceLike {
  accountIndex: number
  mint: string
  owner?: string
  uiTokenAmount: { amount: string }
}

export async function readTransfers(client: SolanaClient, p: ReadTagParameters): Promise<ReadTransfersResult> {
  const { failed, message, from, meta, txHash } = await landedTransaction(client, p)
  if (failed || !meta) return { tag: null, txHash, from, transfers: [] }
  const m = meta as unknown as BalanceMeta
  // Balances are indexed over the static keys, then the lookup tables' writable and readonly ones.
  const keys = [...message.staticAccounts, ...(m.loadedAddresses?.writable ?? []), ...(m.loadedAddresses?.readonly ?? [])]
  const tags = findTags(topLevelInstructions(message))
  return { tag: tags[0] ?? null, tags, txHash, from, transfers: [...tokenTransfers(m, from), ...lamportTransfers(m, keys, from)] }
}

/**
 * Wrapped SOL, of the Token program and of Token-2022: their token accounts' amounts are lamports they hold, which
 * `SyncNative` counts in at any time.
 */
const NATIVE_MINTS: ReadonlySet<string> = new Set(['So11111111111111111111111111111111111111112', '9pan9bMn5HatX4EJdBwg9VgCa7Uz5HL8N1m5D3NdXejP'])

function tokenTransfers(meta: BalanceMeta, feePayer: string): TokenTransfer[] {
  // A token account handed to another owner (SetAuthority) moved no tokens: read by owner, it was a transfer of all
  // it held, and a wallet that gave the vault an account of its own was recorded as depositing into it.
  const preOwner = new Map((meta.preTokenBalances ?? []).map((b) => [b.accountIndex, b.owner]))
  const handedOver = new Set((meta.postTokenBalances ?? []).filter((b) => preOwner.has(b.accountIndex) && preOwner.get(b.accountIndex) !== b.owner).map((b) => b.accountIndex))
  const accounts = new Map<number, { mint: string; owner: string; delta: bigint }>()
  const add = (b: TokenBalanceLike, sign: 1n | -1n) => {
    // Nodes name the owner since v1.9; a balance without one cannot be said to be anyone's transfer.
    if (!b.owner || handedOver.has(b.accountIndex)) return
    const account = accounts.get(b.accountIndex) ?? { mint: b.mint, owner: b.owner, delta: 0n }
    account.delta += sign * BigInt(b.uiTokenAmount.amount)
    accounts.set(b.accountIndex, account)
  }
  for (const b of meta.preTokenBalances ?? []) add(b, -1n)
  for (const b of meta.postTokenBalances ?? []) add(b, 1n)
  const deltas = new Map<string, Map<string, bigint>>()
  for (const [index, { mint, owner, delta }] of accounts) {
    const byOwner = deltas.get(mint) ?? new Map<string, bigint>()
    deltas.set(mint, byOwner)
    byOwner.set(owner, (byOwner.get(owner) ?? 0n) + (NATIVE_MINTS.has(mint) ? backedByLamports(delta, meta, index) : delta))
  }
  return [...deltas].flatMap(([mint, byOwner]) => pairUp(mint, byOwner, feePayer))
}

/**
 * A wrapped-SOL account's gain counts only as far as lamports came into it in the transaction: `SyncNative` (anyone
 * may call it) turns lamports sent there earlier into tokens no one in the transaction paid, and a wallet closing
 * its own wrapped-SOL account shows a loss of tokens that went back to it as SOL. Balances alone read the two
 * together as the wallet paying the vault (an audit: a deposit never made was verified so). A transfer between
 * wrapped-SOL accounts moves the lamports with the tokens, so it reads as before.
 */
function backedByLamports(delta: bigint, meta: BalanceMeta, index: number): bigint {
  if (delta <= 0n) return delta
  const pre = meta.preBalances[index]
  const post = meta.postBalances[index]
  const came = pre === undefined || post === undefined ? 0n : BigInt(post) - BigInt(pre)
  return came <= 0n ? 0n : came < delta ? came : delta
}

function lamportTransfers(meta: BalanceMeta, keys: readonly string[], feePayer: string): TokenTransfer[] {
  const byKey = new Map<string, bigint>()
  keys.forEach((key, i) => {
    const pre = meta.preBalances[i]
    const post = meta.postBalances[i]
    if (pre === undefined || post === undefined) return
    // The payer's fee is burnt and rewarded, not sent to anyone in the transaction.
    byKey.set(key, (byKey.get(key) ?? 0n) + BigInt(post) - BigInt(pre) + (i === 0 ? BigInt(meta.fee) : 0n))
  })
  return pairUp(NATIVE_TOKEN, byKey, feePayer)
}

/**
 * For each loser and gainer, the least the loser can have paid the gainer: the gain less every other loser's loss
 * (they may have paid the rest), at most the loser's own loss. Pairing gains with losses in account order credited
 * a wallet with what another account paid: a delegate moving a victim's tokens to the vault while sending its own
 * elsewhere in the same transaction was recorded as depositing them (a stream was funded so too). Where one owner
 * lost and every other only gained, this is each gain, as before; where several lost, what is not certain is left out.
 *
 * The fee payer's own losses are not counted against another loser: it signed the transaction, and what it pays
 * beside a wallet's transfer (a relayer's tip, the rent of an account it creates) would otherwise be read as
 * possibly that transfer, reading a relayed stream funding short of its amount. What it pays a gainer itself is
 * still bounded by every other loser's loss.
 */
function pairUp(token: string, deltas: ReadonlyMap<string, bigint>, feePayer: string): TokenTransfer[] {
  const losses = [...deltas].filter(([, d]) => d < 0n).map(([owner, d]) => ({ owner, lost: -d }))
  const lostInAll = losses.reduce((sum, l) => sum + l.lost, 0n)
  const payerLost = losses.find((l) => l.owner === feePayer)?.lost ?? 0n
  const transfers: TokenTransfer[] = []
  for (const [to, gained] of deltas) {
    if (gained <= 0n) continue
    for (const { owner, lost } of losses) {
      const othersLost = lostInAll - lost - (owner === feePayer ? 0n : payerLost)
      const least = gained - othersLost
      const amount = least < lost ? least : lost
      if (amount > 0n) transfers.push({ token, from: owner, to, amount })
    }
  }
  return transfers
}
