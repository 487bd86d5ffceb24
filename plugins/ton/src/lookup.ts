/**
 * Finding a TON transaction by its hash alone. TON names a transaction by (account, lt, hash) and a
 * node serves it only with all three, so production asks an index first: toncenter v3's
 * `GET /api/v3/transactions?hash=` names the account and lt, then the node's `getTransactions`
 * returns the transaction's bytes, which the plugin decodes itself (the index's own JSON decoding of
 * messages is not relied on, so the sandbox and production share one decoder).
 */
import { type InTurn, InvalidArgumentError, MAX_ANSWER_BYTES, readBoundedText } from '@earn/core'
import { Address, type Cell, Dictionary, type Transaction } from '@ton/core'
import { callSignal, inItsTurn, NoTurnError } from './budget.ts'
import { decodeBase64 } from './tonProof.ts'

/** The transaction with this hash (64 lowercase hex digits), or null when the chain has none. */
export type TransactionLookup = (hash: string) => Promise<Transaction | null>

/**
 * The transaction in which the message with this hash (64 lowercase hex digits, the hash of the message's cell) was
 * received, or null while no account has received it: how a jetton transfer is followed to the jetton wallet that
 * carried it out, and how the external message a TON Connect wallet reports leads to the wallet's transaction.
 */
export type MessageLookup = (messageHash: string) => Promise<Transaction | null>

/**
 * Which of an account's transactions to list: those after logical time `afterLt` (the oldest `limit` of them, the rest
 * being the next call's), or else its latest `limit` from unix time `since` on. Either way oldest first.
 */
export interface AccountWindow {
  afterLt?: bigint
  since?: number
  limit: number
}

/** An account's transactions in a window (an index again: a node lists only back from a transaction it is named). */
export type AccountTransactions = (account: Address, window: AccountWindow) => Promise<Transaction[]>

/** The cells of a transaction's messages as they are on chain (their hashes are the messages' hashes). */
export function messageCells(tx: Transaction): { inMessage: Cell | null; outMessages: Map<number, Cell> } {
  // transaction ... ^[ in_msg:(Maybe ^(Message Any)) out_msgs:(HashmapE 15 ^(Message Any)) ] ...
  const slice = tx.raw.beginParse().loadRef().beginParse()
  const inMessage = slice.loadBit() ? slice.loadRef() : null
  const outMessages = slice.loadDict(Dictionary.Keys.Uint(15), { serialize: (cell: Cell, b) => b.storeRef(cell), parse: (s) => s.loadRef() })
  return { inMessage, outMessages: new Map(outMessages) }
}

/**
 * Canonical form of a transaction hash: 64 lowercase hex digits. Explorers show hex (tonviewer,
 * tonscan) or base64/base64url (toncenter, TON Connect tooling); all name the same 32 bytes.
 */
export function parseTxHash(input: string): string {
  const reason = 'expected a TON transaction hash: 64 hex digits, or base64/base64url of 32 bytes'
  if (typeof input !== 'string') throw new InvalidArgumentError(`txHash is not a TON transaction hash`, { txHash: reason })
  if (/^[0-9a-fA-F]{64}$/.test(input)) return input.toLowerCase()
  const bytes = input.length === 43 || input.length === 44 ? decodeBase64(input) : null
  if (bytes?.length === 32) return bytes.toString('hex')
  throw new InvalidArgumentError(`txHash is not a TON transaction hash`, { txHash: reason })
}

/** The part of toncenter v3's `TransactionsResponse` this lookup reads. */
interface IndexResponse {
  transactions: { account: string; hash: string; lt: string }[]
}

function isIndexResponse(v: unknown): v is IndexResponse {
  const txs = (v as { transactions?: unknown } | null)?.transactions
  return (
    Array.isArray(txs) &&
    txs.every(
      (t) =>
        typeof t === 'object' &&
        t !== null &&
        typeof t.account === 'string' &&
        typeof t.hash === 'string' &&
        typeof t.lt === 'string' &&
        /^\d+$/.test(t.lt),
    )
  )
}

export interface ToncenterLookupOptions {
  /** The v3 API root, e.g. `https://toncenter.com/api/v3`. */
  indexUrl: string
  apiKey?: string
  /** The node's transaction by (account, lt, base64 hash): `TonClient.getTransaction` in production. */
  getTransaction(account: Address, lt: string, hashBase64: string): Promise<Transaction | null>
  /**
   * The node's transactions of an account, newest first, from (lt, base64 hash) back: `TonClient.getTransactions` in
   * production (`inclusive`: that one included).
   */
  getTransactions(account: Address, opts: { limit: number; lt: string; hash: string; inclusive: true }): Promise<Transaction[]>
  fetch?: typeof fetch
  timeoutMs?: number
  /** The client's queue of calls in flight (client.ts `TON_IN_FLIGHT`); a call waits its turn within its limit. */
  inTurn?: InTurn
}

/**
 * toncenter's public endpoints share one host: `.../api/v2/jsonRPC` for the node, `.../api/v3` for
 * the index. Any other URL shape gives undefined, and `TON_INDEX_URL` must be set.
 */
export function indexUrlFrom(jsonRpcUrl: string): string | undefined {
  const match = /^(.*\/api)\/v2\/jsonRPC\/?$/.exec(jsonRpcUrl)
  return match ? `${match[1]}/v3` : undefined
}

/** The index (TON_INDEX_URL), not the node, failed to answer: the 503 names that setting. */
export class IndexUnavailableError extends Error {
  override name = 'IndexUnavailableError'
}

/**
 * The most transactions one `recent` call lists: each is in one node answer (a `getTransactions` of them all, a few KB
 * each), and the stream watch's look at a treasury is bounded by it.
 */
export const MAX_LISTED_TRANSACTIONS = 100

/**
 * The lookups through toncenter v3: `GET /transactions?hash=` by the transaction's hash,
 * `GET /transactionsByMessage?msg_hash=&direction=in|out` by a message it received or sent, and
 * `GET /transactions?account=` for an account's in a window. The index names the account and lt; the node serves the
 * transactions, which are checked to be the ones asked for before they are believed.
 */
export function toncenterLookups(o: ToncenterLookupOptions): {
  byHash: TransactionLookup
  byInMessage: MessageLookup
  byOutMessage: MessageLookup
  recent: AccountTransactions
} {
  const doFetch = o.fetch ?? fetch
  const base = o.indexUrl.replace(/\/+$/, '')
  const indexAnswer = (query: string) => {
    const signal = callSignal(o.timeoutMs ?? 10_000)
    return o.inTurn ? inItsTurn(o.inTurn, signal, () => readIndex(query, signal)) : readIndex(query, signal)
  }
  const readIndex = async (query: string, signal: AbortSignal) => {
    const response = await doFetch(`${base}/${query}`, {
      headers: { accept: 'application/json', ...(o.apiKey ? { 'x-api-key': o.apiKey } : {}) },
      signal,
    })
    // Errors name the status only: the URL may carry credentials and is never put in a message.
    if (!response.ok) {
      void response.body?.cancel().catch(() => {})
      throw new IndexUnavailableError(`the TON index answered HTTP ${response.status}`)
    }
    const body: unknown = JSON.parse(await readBoundedText(response, () => new IndexUnavailableError(`the TON index answered more than ${MAX_ANSWER_BYTES} bytes`)))
    if (!isIndexResponse(body)) throw new IndexUnavailableError('the TON index answered an unexpected shape')
    return body.transactions
  }
  const listed = async (query: string) => {
    const found = await indexAnswer(query).catch((e: unknown) => {
      // A lookup that never left the client's queue did not reach the index (askChain reports it).
      throw e instanceof IndexUnavailableError || e instanceof NoTurnError ? e : new IndexUnavailableError(`the TON index did not answer (${e instanceof Error ? e.message : String(e)})`, { cause: e })
    })
    // Hex, base64 or base64url as the index writes it; the node is asked in base64.
    try {
      return found.map((t) => ({ account: Address.parse(t.account), lt: BigInt(t.lt), hash: parseTxHash(t.hash) }))
    } catch {
      throw new IndexUnavailableError('the TON index answered a transaction hash or account of an unexpected form')
    }
  }
  const indexed = async (query: string) => {
    const [found] = await listed(query)
    if (!found) return null
    const tx = await o.getTransaction(found.account, found.lt.toString(), Buffer.from(found.hash, 'hex').toString('base64'))
    // Indexed but not served: the node lags the index or has pruned it; a retry may succeed, a 404 would mislead.
    if (!tx) throw new Error('the TON index knows the transaction but the node did not return it')
    return tx
  }
  return {
    async byHash(hash) {
      const tx = await indexed(`transactions?hash=${hash}&limit=1`)
      if (tx && tx.hash().toString('hex') !== hash) throw new Error('the TON node returned a different transaction')
      return tx
    },
    async byInMessage(messageHash) {
      const tx = await indexed(`transactionsByMessage?msg_hash=${messageQuery(messageHash)}&direction=in&limit=1`)
      if (tx && messageCells(tx).inMessage?.hash().toString('hex') !== messageHash)
        throw new Error('the TON node returned a transaction that did not receive that message')
      return tx
    },
    async byOutMessage(messageHash) {
      const tx = await indexed(`transactionsByMessage?msg_hash=${messageQuery(messageHash)}&direction=out&limit=1`)
      if (tx && ![...messageCells(tx).outMessages.values()].some((cell) => cell.hash().toString('hex') === messageHash))
        throw new Error('the TON node returned a transaction that did not send that message')
      return tx
    },
    async recent(account, window) {
      const limit = Math.min(window.limit, MAX_LISTED_TRANSACTIONS)
      const where =
        window.afterLt !== undefined ? `start_lt=${window.afterLt + 1n}&sort=asc` : `start_utime=${Math.max(0, Math.floor(window.since ?? 0))}&sort=desc`
      const found = await listed(`transactions?account=${encodeURIComponent(account.toRawString())}&${where}&limit=${limit}`)
      if (found.length > limit || found.some((t) => !t.account.equals(account) || (window.afterLt !== undefined && t.lt <= window.afterLt)))
        throw new IndexUnavailableError("the TON index answered transactions outside the account's window")
      const named = found.sort((a, b) => (a.lt < b.lt ? -1 : a.lt > b.lt ? 1 : 0))
      const newest = named.at(-1)
      if (!newest) return []
      // One node call for them all: back from the newest the index named, as many as it named. The node's list is
      // the account's own chain of transactions, so it holds exactly those unless the index skipped one.
      const served = await o.getTransactions(account, { limit: named.length, lt: newest.lt.toString(), hash: Buffer.from(newest.hash, 'hex').toString('base64'), inclusive: true })
      const txs = served.slice().reverse()
      if (txs.length !== named.length || txs.some((tx, i) => tx.hash().toString('hex') !== named[i]!.hash))
        throw new Error('the TON node did not return the transactions the index named')
      return txs
    },
  }
}

/** A message hash as the index takes it: base64, in a query string. */
const messageQuery = (messageHash: string) => encodeURIComponent(Buffer.from(messageHash, 'hex').toString('base64'))
