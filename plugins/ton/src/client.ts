/**
 * The TON client is nothing but a ContractProvider factory: @ton/ton's TonClient, TonClient4 and
 * @ton/sandbox's Blockchain all hand out the same @ton/core `ContractProvider`, so the plugin's reads
 * run unchanged against a toncenter endpoint in production and an in-process chain in tests.
 */
import { type ChainEnv, type InTurn, ApiError, ChainNotConfiguredError, inTurn, MAX_ANSWER_BYTES, namesOneHost, readBoundedText, UnavailableError } from '@earn/core'
import type { Address, ContractProvider, StateInit, Transaction } from '@ton/core'
import { TonClient } from '@ton/ton'
import { callSignal, inItsTurn, NoTurnError } from './budget.ts'
import { type AccountTransactions, IndexUnavailableError, indexUrlFrom, type MessageLookup, toncenterLookups, type TransactionLookup } from './lookup.ts'
import { networkOfZeroState } from './network.ts'

export type ProviderFactory = (address: Address, init?: StateInit | null) => ContractProvider

export interface TonChainClient {
  provider: ProviderFactory
  /**
   * The transaction with this hash (64 lowercase hex digits), or null when the chain has none.
   * A ContractProvider cannot do this: TON names a transaction by (account, lt, hash), and the
   * verify endpoint is given the hash alone, so finding it takes an index (toncenter v3 in
   * production, the harness's record of every sandbox transaction in tests).
   */
  findTransaction: TransactionLookup
  /** The transaction that received a message, by the message's hash (an index again; see `lookup.ts`). */
  findTransactionByMessage: MessageLookup
  /** The transaction that sent a message, by the message's hash: how the stream watch goes back from what a treasury received. */
  findSendingTransaction: MessageLookup
  /** An account's transactions in a window, oldest first (an index again): what reached a treasury lately. */
  listTransactions: AccountTransactions
  /** Milliseconds since the epoch; TON Connect requests expire relative to it. */
  now(): number
  /** The global id of the public network the endpoint serves (network.ts); undefined where it cannot tell. */
  network?: () => Promise<string | undefined>
}

export interface TonClientOptions {
  findTransaction?: TransactionLookup
  findTransactionByMessage?: MessageLookup
  findSendingTransaction?: MessageLookup
  listTransactions?: AccountTransactions
  now?: () => number
  network?: () => Promise<string | undefined>
}

/** Wraps any provider factory (TonClient's, sandbox's, a test double) as the plugin's client. */
export function createTonClient(provider: ProviderFactory, options: TonClientOptions = {}): TonChainClient {
  return {
    provider,
    findTransaction:
      options.findTransaction ??
      // A host wiring mistake, not the caller's: a client made for reads only was asked to verify.
      (() => Promise.reject(new ApiError('INTERNAL', 'this TON client was made without a transaction lookup'))),
    findTransactionByMessage:
      options.findTransactionByMessage ??
      (() => Promise.reject(new ApiError('INTERNAL', 'this TON client was made without a message lookup'))),
    findSendingTransaction:
      options.findSendingTransaction ??
      (() => Promise.reject(new ApiError('INTERNAL', 'this TON client was made without a lookup of sent messages'))),
    listTransactions:
      options.listTransactions ??
      (() => Promise.reject(new ApiError('INTERNAL', 'this TON client was made without a way to list transactions'))),
    // The system clock is the default only here, at the edge where a client is made; tests pass their own.
    now: options.now ?? (() => Date.now()),
    ...(options.network ? { network: options.network } : {}),
  }
}

/**
 * Reads `TON_API_URL` (a toncenter-style JSON-RPC endpoint), optional `TON_API_KEY`, and optional
 * `TON_INDEX_URL` (a toncenter v3 index, for finding transactions by hash; by default derived from
 * `TON_API_URL` when that ends in `/api/v2/jsonRPC`). Nothing is contacted here; without a URL the
 * server still starts and only TON calls that need the chain fail; a value that is not an http(s) URL throws.
 */
/** An http(s) URL, or a refusal naming the variable: a typo must stop the start, not read as a network outage. */
function httpUrl(name: string, value: string | undefined): string | undefined {
  if (!value) return undefined
  let parsed: URL
  try {
    parsed = new URL(value)
  } catch {
    // The value itself stays out of the message: endpoint URLs often carry an API key.
    throw new Error(`${name} is not a valid URL; expected an http(s) toncenter endpoint`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error(`${name} must be an http(s) URL, not ${parsed.protocol}`)
  if (!namesOneHost(parsed)) throw new Error(`${name} names no single host: give one endpoint URL`)
  return value
}

export function connectTon(env: ChainEnv): TonChainClient {
  const endpoint = httpUrl('TON_API_URL', env.TON_API_URL?.trim())
  const apiKey = env.TON_API_KEY?.trim() || undefined
  const indexUrl = httpUrl('TON_INDEX_URL', env.TON_INDEX_URL?.trim()) || (endpoint ? indexUrlFrom(endpoint) : undefined)
  // One queue for every call this client makes (the API, the index, the network ask): see TON_IN_FLIGHT.
  const limit = inTurn(TON_IN_FLIGHT)
  let tonClient: TonClient | undefined
  const api = () => {
    // The deployment's configuration, not the request, is what is missing: a server-side 503, as on Solana.
    if (!endpoint)
      throw new ChainNotConfiguredError('TON_API_URL is not configured: this server cannot read the TON chain', {
        TON_API_URL: 'set it to a toncenter-style JSON-RPC endpoint, e.g. https://toncenter.com/api/v2/jsonRPC',
      })
    // A hung endpoint should fail the request as unavailable, not hold it open (see `fetchWithDeadline`).
    tonClient ??= new TonClient({ endpoint, apiKey, timeout: API_TIMEOUT_MS, httpAdapter: fetchWithDeadline(limit) as never })
    return tonClient
  }
  const lookups = indexUrl
    ? toncenterLookups({
        indexUrl,
        apiKey,
        inTurn: limit,
        // The index names the transaction; the node serves its bytes, parsed by TonClient.
        getTransaction: (account, lt, hash) => api().getTransaction(account, lt, hash),
        getTransactions: (account, opts) => api().getTransactions(account, opts),
      })
    : undefined
  const noIndex = (): never => {
    api() // a missing TON_API_URL is the error to report first
    throw new ChainNotConfiguredError('TON_INDEX_URL is not configured: this server cannot find TON transactions by hash', {
      TON_INDEX_URL: 'set it to a toncenter v3 endpoint, e.g. https://toncenter.com/api/v3',
    })
  }
  // Asked once; a failed ask is not remembered, so the next request asks again.
  let network: Promise<string | undefined> | undefined
  const askNetwork = () => {
    if (!endpoint) return Promise.resolve(undefined) // the read itself says TON_API_URL is missing
    if (!network) {
      const asked = askChain('the network it serves', () => zeroStateNetwork(limit, endpoint, apiKey))
      network = asked
      asked.catch(() => network === asked && (network = undefined))
    }
    return network
  }
  return createTonClient((address, init) => checkedState(api().provider(address, init)), {
    network: askNetwork,
    findTransaction: async (hash: string): Promise<Transaction | null> => (lookups ? lookups.byHash(hash) : noIndex()),
    findTransactionByMessage: async (hash: string): Promise<Transaction | null> => (lookups ? lookups.byInMessage(hash) : noIndex()),
    findSendingTransaction: async (hash: string): Promise<Transaction | null> => (lookups ? lookups.byOutMessage(hash) : noIndex()),
    listTransactions: async (account, window) => (lookups ? lookups.recent(account, window) : noIndex()),
  })
}

/** One TON API call's limit, its wait for a turn included. */
const API_TIMEOUT_MS = 10_000

/**
 * At most this many calls of one client in flight, the rest waiting their turn inside their own limit. Every read is a
 * call of its own (a jetton balance four), and Bun's fetch holds 256 requests in flight for the whole process
 * (core's `inTurn`): an audit's portfolio over 3,000 TON entries on an endpoint answering in 9.5 s had ~5,000 calls
 * open and held an unrelated EVM portfolio ~10 s.
 */
export const TON_IN_FLIGHT = 128

/** What TonClient's axios hands its adapter, and what it takes back (its own response parsing runs after). */
interface AxiosRequest {
  url?: string
  method?: string
  headers?: { toJSON?(): Record<string, unknown> } & Record<string, unknown>
  data?: unknown
}

/**
 * TonClient's HTTP through fetch, with a deadline over the whole answer: axios's own timeout restarts with each byte,
 * so a body sent a byte at a time held a request for good, and a call given up on kept its connection reading.
 */
const fetchWithDeadline = (limit: InTurn) => (config: AxiosRequest) => {
  const signal = callSignal(API_TIMEOUT_MS)
  return inItsTurn(limit, signal, () => fetchAnswer(config, signal))
}

async function fetchAnswer(config: AxiosRequest, signal: AbortSignal) {
  const headers = new Headers()
  const given = typeof config.headers?.toJSON === 'function' ? config.headers.toJSON() : (config.headers ?? {})
  for (const [name, value] of Object.entries(given)) if (value !== undefined && value !== null) headers.set(name, String(value))
  const response = await fetch(config.url!, {
    method: (config.method ?? 'get').toUpperCase(),
    headers,
    body: typeof config.data === 'string' ? config.data : undefined,
    signal,
  })
  const data = await readBoundedText(response, () => new Error(`the TON API answered more than ${MAX_ANSWER_BYTES} bytes`))
  // As axios's own adapters settle: anything but a 2xx is a failed request (the endpoint's), never a contract's answer,
  // whatever its body says (an `exit_code` in an error page is no get-method's).
  if (response.status < 200 || response.status >= 300) throw new Error(`the TON API answered HTTP ${response.status}`)
  if (typeof config.data === 'string' && config.data.includes('"getAddressInformation"')) checkBalanceText(data)
  if (typeof config.data === 'string' && config.data.includes('"runGetMethod"')) checkStackNumbers(data)
  return { data, status: response.status, statusText: response.statusText, headers: response.headers.toJSON(), config, request: null }
}

/** The answer's `result`, or undefined where there is none to check (not JSON, an error answer): TonClient reports those. */
function resultOf(data: string): { balance?: unknown; stack?: unknown } | undefined {
  try {
    const result = (JSON.parse(data) as { result?: unknown } | null)?.result
    return typeof result === 'object' && result !== null ? result : undefined
  } catch {
    return undefined
  }
}

/**
 * TonClient reads the balance with `BigInt(…)`, which takes `""` for 0 and `"0x10"` for 16: a balance written otherwise
 * than in decimal digits is the endpoint's fault (a 503), not an amount to believe. The range is checkedState's.
 */
function checkBalanceText(data: string): void {
  const balance = resultOf(data)?.balance
  if (balance === undefined) return
  if (!(typeof balance === 'string' && /^\d{1,40}$/.test(balance)) && !(typeof balance === 'number' && Number.isSafeInteger(balance)))
    throw new Error('the TON API answered an account balance that is not a whole number of nanotons')
}

/**
 * TonClient reads a get-method's numbers with `BigInt(…)` too: `["num", ""]` for a jetton wallet's balance was believed
 * as 0 (a deposit refused for want of tokens the wallet holds). A number written otherwise than as toncenter writes one
 * (hex, or decimal digits, signed) is the endpoint's fault.
 */
function checkStackNumbers(data: string): void {
  const stack = resultOf(data)?.stack
  if (!Array.isArray(stack)) return
  for (const entry of stack)
    if (Array.isArray(entry) && entry[0] === 'num' && !(typeof entry[1] === 'string' && /^-?(?:0x[0-9a-f]+|\d+)$/i.test(entry[1])))
      throw new Error('the TON API answered a get-method number that is not one')
}

/** A coin amount is a VarUInteger 16: below 2^120. */
const COINS_LIMIT = 2n ** 120n

/**
 * TonClient reads an account's balance as the endpoint writes it (`"-5"` is -5n): an amount no account can hold is
 * the endpoint's fault, a 503 (askChain), not a balance to build on or show.
 */
function checkedState(provider: ContractProvider): ContractProvider {
  return Object.assign(Object.create(provider) as ContractProvider, {
    async getState() {
      const state = await provider.getState()
      if (typeof state.balance !== 'bigint' || state.balance < 0n || state.balance >= COINS_LIMIT)
        throw new Error('the TON API answered an account balance no account can hold')
      return state
    },
  })
}

/** The network of a toncenter-style endpoint, by the zero state its `getMasterchainInfo` reports (network.ts). */
async function zeroStateNetwork(limit: InTurn, endpoint: string, apiKey: string | undefined): Promise<string | undefined> {
  const signal = callSignal(API_TIMEOUT_MS)
  return inItsTurn(limit, signal, () => askZeroState(endpoint, apiKey, signal))
}

async function askZeroState(endpoint: string, apiKey: string | undefined, signal: AbortSignal): Promise<string | undefined> {
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(apiKey ? { 'X-API-Key': apiKey } : {}) },
    body: JSON.stringify({ id: '1', jsonrpc: '2.0', method: 'getMasterchainInfo', params: {} }),
    signal,
  })
  const body = response.ok
    ? (JSON.parse(await readBoundedText(response, () => new Error(`getMasterchainInfo answered more than ${MAX_ANSWER_BYTES} bytes`))) as { ok?: unknown; result?: { init?: { root_hash?: unknown } } })
    : void response.body?.cancel().catch(() => {})
  // As TonClient reads toncenter: anything but HTTP 200 with `ok: true` is a failure, asked again on the next read.
  if (body?.ok !== true) throw new Error(`getMasterchainInfo answered HTTP ${response.status}${body ? ' without ok' : ''}`)
  const root = body.result?.init?.root_hash
  // toncenter reports the zero state in every answer (a private network's too, which then names no public network):
  // an answer without it is not getMasterchainInfo's, and must not pass for a network that cannot be told.
  if (typeof root !== 'string') throw new Error('getMasterchainInfo answered without the zero state (result.init.root_hash)')
  return networkOfZeroState(root)
}

/**
 * Both TonClient and the sandbox report a get-method that ran and failed (no such method, a throw in
 * the contract) as "Unable to execute get method. Got exit_code: N"; the sandbox also sets `exitCode`.
 * That is an answer from the contract, not a transport fault, so callers must tell the two apart.
 */
export function getMethodExitCode(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined
  const code = (error as { exitCode?: unknown }).exitCode
  if (typeof code === 'number') return code
  // Only that message itself: an endpoint's error text quoted in another ("Received error: {…exit_code: -13…}", toncenter
  // failing to run the method) is the endpoint failing, not the contract answering.
  const match = /^Unable to execute get method\. Got exit_code: (-?\d+)$/.exec(String((error as { message?: unknown }).message ?? ''))
  return match ? Number(match[1]) : undefined
}

/**
 * Runs one chain read; anything that is neither our own error nor a contract's answer means the
 * endpoint could not be asked, which the caller should retry rather than treat as a verdict.
 */
export async function askChain<T>(what: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (e) {
    if (e instanceof ApiError || getMethodExitCode(e) !== undefined) throw e
    if (e instanceof NoTurnError)
      throw new UnavailableError(
        `every one of this server's ${TON_IN_FLIGHT} calls to the TON endpoints was in flight while reading ${what} (they answer slowly); retry later`,
        { TON_API_URL: 'answering slowly: every call in flight' },
        { cause: e },
      )
    // The context names the setting the operator checks: the index's, where it was the index that failed.
    if (e instanceof IndexUnavailableError)
      throw new UnavailableError(`the TON index did not answer while reading ${what}; retry later`, { TON_INDEX_URL: 'did not answer' }, { cause: e })
    throw new UnavailableError(`the TON API did not answer while reading ${what}; retry later`, { TON_API_URL: 'did not answer' }, { cause: e })
  }
}
