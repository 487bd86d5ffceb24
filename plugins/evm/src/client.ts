/**
 * The EVM client: one lazily made viem public client per configured chain, the swap router per chain, and the
 * client's working state. The plugin's capabilities take it as their first argument, the way a viem action takes a
 * viem client, so tests can hand in one bound to anvil and two clients never share a cache.
 */
import { type ChainEnv, type InTurn, inTurn, NoChainRpcError } from '@earn/core'
import { createPublicClient, defineChain, http, type Address, type Chain, type HttpTransport, type PublicClient } from 'viem'
import * as knownChains from 'viem/chains'
import {
  CONFIRMATIONS_VARIABLE,
  DEFAULT_LOGS_BLOCK_RANGE,
  DEFAULT_RPC_TIMEOUT_MS,
  LOGS_BLOCK_RANGE_VARIABLE,
  parseConfirmations,
  parseLogsBlockRange,
  parseRpcTimeout,
  parseRpcUrls,
  parseSwapRouters,
  RPC_TIMEOUT_VARIABLE,
  RPC_URLS_VARIABLE,
  SWAP_ROUTERS_VARIABLE,
} from './env.ts'
import { checkedFetch } from './checkedFetch.ts'
import type { Measure } from './gas.ts'
import { BUDGET_TIMEOUTS } from './budget.ts'
import { type CallBatcher, createCallBatcher } from './multicall.ts'
import { createJsonRpcPost, postFor, type JsonRpcPost } from './post.ts'

export interface EvmClient {
  /** Chain ids that have an RPC, as the API spells them (decimal strings), in configuration order. */
  readonly chainIds: readonly string[]
  /** The chain's public client, or `undefined` when no RPC is configured for it. */
  publicClient(chainId: string): PublicClient | undefined
  /** The Uniswap-V2-style router swap mode trades through on this chain, canonical; `undefined` when none. */
  swapRouter(chainId: string): Address | undefined
  /**
   * HTTP requests sent to the chain's RPC so far, for benches and tests. `undefined` for a client wrapping public
   * clients it did not make (their transport is the caller's to count).
   */
  rpcRequests(chainId: string): number | undefined
  /** How the chain's Multicall3 batches are posted (see `post.ts`); `undefined` sends them through the public client. */
  rpcPost(chainId: string): JsonRpcPost | undefined
  /** Milliseconds since the epoch; sets swap deadlines. */
  now(): number
  /** The largest block range one eth_getLogs call asks for (`EVM_LOGS_BLOCK_RANGE`). */
  readonly logsBlockRange: bigint
  /** How long one answer may spend reading a wallet's settled vault history (portfolio.ts); the rest waits for the next. */
  readonly flowsScanMs: number
  /** How long one capability may take with the chain, all its calls together (budget.ts). */
  readonly budgetMs: number
  /** Confirmations a transaction needs on the chain before verify and stream confirm count it (`EVM_CONFIRMATIONS`; 1: mined). */
  confirmations(chainId: string): number
  readonly state: EvmClientState
}

/** What the client remembers between calls. Never a settled balance or allowance: those are read every time. */
export interface EvmClientState {
  /** Reads and measurements under way, keyed by what they ask; removed when they settle (see `shared.ts`). */
  readonly inFlight: Map<string, Promise<unknown>>
  /** Gas measured per opportunity and step, and the largest amount it was measured moving (see `gas.ts`). */
  readonly gasMeasured: Map<string, Measure>
  /** Gas measures in flight, per build sequence and round: the amount each moves and its `shared` key (see `gas.ts`). */
  readonly measuring: Map<string, { amount: bigint; key: string }>
  /** Chain ids whose RPC has no `eth_simulateV1` (see `gas.ts`). */
  readonly cannotSimulate: Set<string>
  /** The Multicall3 batcher per chain id (see `multicall.ts`); `null` where the public client does not batch. */
  readonly batchers: Map<string, CallBatcher | null>
  /** A wallet's vault flows summed over history deep enough to be settled (see `portfolio.ts`). */
  readonly settledFlows: Map<string, SettledFlows>
  /** `chainId|address` of the contracts the catalog names, read as its vaults and tokens (see `vouch`). */
  readonly vouched: Set<string>
  /** `chainId|address` of catalog vaults (and their assets) the chain refused: read apart until one reads right. */
  readonly refused: Set<string>
  /** When each chain's RPC was last found to serve that chain (`performance.now()`; see `servedChain.ts`). */
  readonly servedChecked: Map<string, number>
}

/** Deposited and withdrawn assets over the blocks up to `through`, inclusive. */
export interface SettledFlows {
  through: bigint
  deposited: bigint
  withdrawn: bigint
}

export interface EvmClientOptions {
  /** Router per chain id, as `EVM_SWAP_ROUTERS` gives them. */
  swapRouters?: Readonly<Record<string, string>>
  now?: () => number
  /** As `EVM_LOGS_BLOCK_RANGE`; default `DEFAULT_LOGS_BLOCK_RANGE`. */
  logsBlockRange?: bigint
  /** Default `FLOWS_SCAN_MS`. */
  flowsScanMs?: number
  /** As `EVM_CONFIRMATIONS`, per chain id; 1 where absent. */
  confirmations?: Readonly<Record<string, number>>
  /** Default `BUDGET_TIMEOUTS` times `DEFAULT_RPC_TIMEOUT_MS` (budget.ts). */
  budgetMs?: number
}

/**
 * Concurrent eth_calls on one chain wait this long to leave together as one Multicall3 call, so the balance and
 * allowance reads of many simultaneous requests cost one round trip. Under load one millisecond gathers dozens of
 * builds' reads; a longer wait only leaves the server idle while its builds wait (bench/preflight.ts: 5 ms served
 * ~3,900 builds/s, 1 ms ~6,500, both well under 0.05 RPC calls per build).
 */
export const MULTICALL_WAIT_MS = 1
/**
 * How long one portfolio answer reads a wallet's settled vault history (its eth_getLogs rounds, each remembered): a
 * vault with no `eventsFromBlock` on Ethereum is ~2,100 ranges, ~50 s of a healthy node and most of an hour of a slow
 * one, for one wallet's first answer. What is not read by then is read by the next answers, from where this one stopped.
 */
export const FLOWS_SCAN_MS = 5_000

/** Calldata bytes per Multicall3 call: room for ~450 balanceOf reads, far under any node's eth_call gas cap. */
export const MULTICALL_BATCH_BYTES = 16_384
/**
 * The same where viem sends Multicall3's creation code with each call (deployless), which nodes cap as init code at
 * 49,152 bytes. viem counts only the calls' own bytes, while aggregate3 spends ~190 bytes on each call whatever its
 * size: 768 bytes of 4-byte calls (`asset()`, `decimals()`) encode to ~37 KB, the creation code included. At 16 KiB
 * a catalog import of ~60 vaults was one call the node refused ("max initcode size exceeded").
 */
export const DEPLOYLESS_BATCH_BYTES = 768

/**
 * Reads `EVM_RPC_URLS` (`chainId=url,chainId=url`), `EVM_SWAP_ROUTERS` (`chainId=address,...`) and `EVM_CONFIRMATIONS`
 * (`chainId=N,...`), empty or absent meaning none, `EVM_LOGS_BLOCK_RANGE` and `EVM_RPC_TIMEOUT_MS`. Makes no request: a public client is created on first use of its chain.
 */
export function connect(env: ChainEnv): EvmClient {
  const urls = parseRpcUrls(env[RPC_URLS_VARIABLE])
  const routers = parseSwapRouters(env[SWAP_ROUTERS_VARIABLE])
  const logsBlockRange = parseLogsBlockRange(env[LOGS_BLOCK_RANGE_VARIABLE])
  const timeoutMs = parseRpcTimeout(env[RPC_TIMEOUT_VARIABLE])
  const confirmations = parseConfirmations(env[CONFIRMATIONS_VARIABLE])
  for (const [variable, chainIds] of [[SWAP_ROUTERS_VARIABLE, routers.keys()], [CONFIRMATIONS_VARIABLE, confirmations.keys()]] as const)
    for (const chainId of chainIds)
      if (!urls.has(chainId)) throw new Error(`${variable} names chain ${chainId}, which has no RPC in ${RPC_URLS_VARIABLE}`)
  const clients = new Map<string, PublicClient>()
  const posts = new Map<string, JsonRpcPost>()
  const requests = new Map<string, number>()
  const count = (chainId: string) => () => {
    requests.set(chainId, (requests.get(chainId) ?? 0) + 1)
  }
  return {
    ...baseClient(Object.fromEntries(routers), Date.now, logsBlockRange, Object.fromEntries(confirmations), FLOWS_SCAN_MS, BUDGET_TIMEOUTS * timeoutMs),
    chainIds: [...urls.keys()],
    publicClient(chainId) {
      const url = urls.get(chainId)
      if (url === undefined) return undefined
      let client = clients.get(chainId)
      if (!client) {
        requests.set(chainId, 0)
        const lookups = inTurn(LOOKUPS_IN_FLIGHT)
        client = createRpcClient(Number(chainId), url, timeoutMs, count(chainId), lookups)
        clients.set(chainId, client)
        // The same endpoint, timeout and one retry as the public client's transport below, counted alike, in the
        // same queue as its lookups.
        posts.set(chainId, createJsonRpcPost({ url, timeoutMs, retryCount: 1, onRequest: count(chainId), inTurn: lookups }))
      }
      return client
    },
    rpcRequests: (chainId) => (urls.has(chainId) ? (requests.get(chainId) ?? 0) : undefined),
    rpcPost: (chainId) => posts.get(chainId),
  }
}

/**
 * Wraps public clients that already exist (tests bind them to anvil), keyed by chain id. Make them with
 * `ccipRead: false`, as `connect` does (see createRpcClient).
 */
export function evmClientFromPublicClients(
  clients: Readonly<Record<string, PublicClient>>,
  options: EvmClientOptions = {},
): EvmClient {
  const map = new Map(Object.entries(clients))
  const posts = new Map<string, JsonRpcPost | undefined>()
  const routers = parseSwapRouters(Object.entries(options.swapRouters ?? {}).map(([id, a]) => `${id}=${a}`).join(','))
  return {
    ...baseClient(
      Object.fromEntries(routers),
      options.now ?? Date.now,
      options.logsBlockRange ?? DEFAULT_LOGS_BLOCK_RANGE,
      options.confirmations ?? {},
      options.flowsScanMs ?? FLOWS_SCAN_MS,
      options.budgetMs ?? BUDGET_TIMEOUTS * DEFAULT_RPC_TIMEOUT_MS,
    ),
    chainIds: [...map.keys()],
    publicClient: (chainId) => map.get(chainId),
    rpcRequests: () => undefined,
    rpcPost(chainId) {
      const publicClient = map.get(chainId)
      if (publicClient && !posts.has(chainId)) posts.set(chainId, postFor(publicClient))
      return posts.get(chainId)
    },
  }
}

function baseClient(
  routers: Record<string, Address>,
  now: () => number,
  logsBlockRange: bigint,
  confirmations: Record<string, number>,
  flowsScanMs: number,
  budgetMs: number,
): Pick<EvmClient, 'swapRouter' | 'now' | 'logsBlockRange' | 'flowsScanMs' | 'budgetMs' | 'confirmations' | 'state'> {
  return {
    swapRouter: (chainId) => routers[chainId],
    now,
    logsBlockRange,
    flowsScanMs,
    budgetMs,
    confirmations: (chainId) => (Object.hasOwn(confirmations, chainId) ? confirmations[chainId]! : 1),
    state: { inFlight: new Map(), gasMeasured: new Map(), measuring: new Map(), cannotSimulate: new Set(), batchers: new Map(), settledFlows: new Map(), vouched: new Set(), refused: new Set(), servedChecked: new Map() },
  }
}

/** The chain's public client, or the 400 every capability gives for a chain this server has no RPC for. */
export function requirePublicClient(client: EvmClient, chainId: string): PublicClient {
  const publicClient = client.publicClient(chainId)
  if (!publicClient)
    throw new NoChainRpcError(`EVM chain ${chainId} is not supported by this server (no RPC configured for it)`, {
      chainId: `no RPC configured for chain ${chainId}`,
    })
  return publicClient
}

/**
 * viem's timeout covers a request until its headers arrive, not its body: a node that sends a body a byte at a time
 * held a request for good. Its fetch gets a deadline of its own that covers the body too.
 */
function wholeAnswerWithin(timeoutMs: number, inner: typeof fetch): typeof fetch {
  if (timeoutMs <= 0) return inner
  return ((input: RequestInfo | URL, init?: RequestInit) => {
    const deadline = AbortSignal.timeout(timeoutMs)
    return inner(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, deadline]) : deadline })
  }) as typeof fetch
}

/**
 * Methods that run code a caller can name (a wallet signing in, a reward token, a transaction to trace): the node may
 * take seconds over one, and a JSON-RPC batch is answered only when all of it is, so one client's slow wallet held
 * another's sign-in in the same batch past its timeout (an audit: 32 ms alone, a 503 after 10 s beside it).
 */
const RUNS_CALLERS_CODE = new Set(['eth_call', 'eth_estimateGas', 'eth_simulateV1', 'eth_createAccessList', 'debug_traceTransaction', 'debug_traceCall'])

/**
 * How many requests running a caller's code one chain's client sends at once, the rest waiting their turn within
 * their deadline: fetch's kept-alive connections to a host. Each goes alone, and past that pool each opened a
 * connection of its own: 300 contract-wallet sign-ins at once overflowed the node's listen queue (an audit: ~1,700
 * connections opened for ~2,400 sign-ins, dropped ones waiting ~1 s to try again). It bounds them at ~64 / the
 * node's round trip a second (an audit: at 100 ms, 32 served ~270 contract-wallet sign-ins a second where 64 served
 * ~490; on a local node both were bound by the server's CPU).
 */
export const ALONE_IN_FLIGHT = 64

/**
 * How many lookups (JSON-RPC batches, Multicall3 posts) one chain's client sends at once, the rest waiting their turn
 * within their timeout. Bun's fetch holds 256 requests in flight for the whole process and queues the rest, another
 * chain's too: a node that hangs under load had every other chain's requests wait behind its own. Concurrent builds'
 * reads leave together in one Multicall3 post a tick, so an audit's 300 builds at once had at most ~28 in flight.
 */
export const LOOKUPS_IN_FLIGHT = 64

/** How many log-scan requests (batches of `eth_getLogs`, see LOG_SCANS) one chain's client sends at once. */
export const LOG_SCANS_IN_FLIGHT = 16

/**
 * Lookups a batch. viem's default is 1,000, and a batch is answered only when its slowest request is: a tick of a
 * thousand verifies would wait on one receipt. Nodes cap batches too (hosted ones at 100 or 50); a node refusing a
 * batch for its size has the later ones cut to what it takes (checkedFetch.ts).
 */
export const LOOKUP_BATCH = 32

/**
 * Log scans a batch: a tick's scans from every portfolio would otherwise leave as one batch (viem's default is 1,000;
 * an audit's 150 portfolios made one of 300), which a node capping batches refuses whole.
 */
export const LOG_SCAN_BATCH = 32

/**
 * Whether a request runs code a caller can name. viem's own reads through the chain's Multicall3 (a coin balance, a
 * swap quote from the operator's router) do not, and stay lookups: queued behind 64 wallets slow to answer, a build's
 * balance read had waited its whole timeout. A call carrying an authorization list or state overrides runs what they
 * set (an EIP-7702 account's delegate).
 */
export function runsCallersCode(method: string, params: unknown, multicall3: string | undefined): boolean {
  if (!RUNS_CALLERS_CODE.has(method)) return false
  if (method !== 'eth_call' || multicall3 === undefined || !Array.isArray(params)) return true
  const [call, , overrides] = params as [{ to?: unknown; authorizationList?: unknown } | undefined, unknown, unknown]
  const ownMulticall = typeof call?.to === 'string' && call.to.toLowerCase() === multicall3.toLowerCase()
  return !(ownMulticall && call?.authorizationList === undefined && overrides === undefined)
}

/**
 * Log scans, which a node may take seconds over and a portfolio asks for any wallet's vault history: a batch is
 * answered only when all of it is, and a node taking its timeout over one had the head and receipts of verifies sent
 * in the same tick time out with it (503s). Sent each alone in the lookups' queue instead, 150 portfolios' scans on a
 * node taking 3 s filled it, and verifies waited ~4–5 s (an audit): they are batched among themselves, in a queue of
 * their own (`LOG_SCANS_IN_FLIGHT`).
 */
const LOG_SCANS = new Set(['eth_getLogs'])

/**
 * Requests that run a caller's code go through `alone`, each in an HTTP request of its own; log scans through `scans`;
 * the rest through `batched`.
 */
function routedByMethod(batched: HttpTransport, scans: HttpTransport, alone: HttpTransport, multicall3: string | undefined): HttpTransport {
  return ((params) => {
    const [b, s, a] = [batched(params), scans(params), alone(params)]
    const route = (method: string, params: unknown) => (runsCallersCode(method, params, multicall3) ? a : LOG_SCANS.has(method) ? s : b)
    return { ...b, request: ((args, options) => route(args.method, args.params).request(args, options)) as typeof b.request }
  }) as HttpTransport
}

function createRpcClient(chainId: number, url: string, timeoutMs: number, onRequest: () => void, lookups: InTurn): PublicClient {
  const chain = chainFor(chainId, url)
  // Counted as it leaves (its turn come), not as viem hands it over: one that waited out its time never reached the
  // node, and each request a malformed batch is split into does.
  const counted = ((input: RequestInfo | URL, init?: RequestInit) => (onRequest(), fetch(input, init))) as typeof fetch
  const whole = wholeAnswerWithin(timeoutMs, counted)
  // One retry: a dropped connection is worth a second try; a node that hangs fails within ~2 × timeoutMs.
  const options = { timeout: timeoutMs, retryCount: 1 }
  return createPublicClient({
    chain,
    // Lookups that still leave separately in one tick (receipts, transactions, balances) go in JSON-RPC batches of up
    // to LOOKUP_BATCH, sent again one request at a time where an answer is too large or malformed as a whole, and in
    // halves where the node refuses a batch for its size (checkedFetch); log scans go in batches of their own, and
    // what runs a caller's code each in an HTTP request of its own.
    transport: routedByMethod(
      // The turn is each HTTP request's, until its answer is read: a batch sent again one request at a time
      // (checkedFetch) waits a turn for each.
      http(url, { ...options, fetchFn: checkedFetch(whole, lookups), batch: { batchSize: LOOKUP_BATCH } }),
      // Log scans, batched among themselves: viem keeps one batch per URL, hence a fragment of their own (never sent).
      // At most LOG_SCAN_BATCH a batch, so a burst of portfolios spreads over the queue's slots.
      http(`${url}#log-scans`, { ...options, fetchFn: checkedFetch(whole, inTurn(LOG_SCANS_IN_FLIGHT)), batch: { batchSize: LOG_SCAN_BATCH } }),
      // At most ALONE_IN_FLIGHT at once, in a queue of their own (a client's slow wallets must not hold lookups).
      http(url, { ...options, fetchFn: checkedFetch(whole, inTurn(ALONE_IN_FLIGHT)), batch: false }),
      chain.contracts?.multicall3?.address,
    ),
    // viem's own eth_calls (those not asked with `batch: false`) fold into one Multicall3 call first. Where viem does
    // not know the chain's Multicall3, the call carries Multicall3's code (deployless) instead of assuming a contract
    // the chain may lack.
    batch: {
      multicall: {
        wait: MULTICALL_WAIT_MS,
        batchSize: chain.contracts?.multicall3 === undefined ? DEPLOYLESS_BATCH_BYTES : MULTICALL_BATCH_BYTES,
        deployless: chain.contracts?.multicall3 === undefined,
      },
    },
    // No CCIP-Read (EIP-3668): on a call that reverts with `OffchainLookup`, viem fetches the URLs the revert names,
    // with no time limit. Contracts here are often the client's to name (a wallet signing in, a token), so a revert
    // made the server send requests anywhere it can reach (its own network's addresses) and hold the call for good.
    ccipRead: false,
  }) as PublicClient
}

/**
 * Marks contracts the operator's catalog names (a vault, its asset, its deposit tokens), as the catalog's reads
 * find them: the batcher then reads them together, and reads of any other contract (one a caller names) apart.
 */
export function vouch(client: EvmClient, chainId: string, addresses: readonly string[]): void {
  for (const a of addresses) client.state.vouched.add(`${chainId}|${a.toLowerCase()}`)
}

/**
 * A catalog vault, its asset or a token of its entry the chain refused: no vault or token there, or one whose reads
 * fail as a whole (a gas burner, a return bomb). Vouched for, its reads shared every build's batch (an audit: a pass over 100 vaults with two hostile
 * ones made 44 requests where 8 did), so it is read apart, as a contract a caller names is, until it reads right.
 */
export function refuse(client: EvmClient, chainId: string, addresses: readonly string[]): void {
  for (const a of addresses) {
    client.state.vouched.delete(`${chainId}|${a.toLowerCase()}`)
    client.state.refused.add(`${chainId}|${a.toLowerCase()}`)
  }
}

/** Catalog contracts that read right: vouched for again from their next read (see `refuse`). */
export function readRight(client: EvmClient, chainId: string, addresses: readonly string[]): void {
  for (const a of addresses) client.state.refused.delete(`${chainId}|${a.toLowerCase()}`)
}

/** Whether the chain refused this catalog contract's last read (see `refuse`). */
export const refused = (client: EvmClient, chainId: string, address: string): boolean => client.state.refused.has(`${chainId}|${address.toLowerCase()}`)

/** Where Multicall3 is deployed on nearly every EVM chain (the same address everywhere, by a keyless deployment). */
export const MULTICALL3_ADDRESS: Address = '0xcA11bde05977b3631167028862bE2a173976CA11'

/**
 * The chain's call batcher, made on first use with the public client's own `batch.multicall` settings (wait and
 * size); `null` for a public client without them, whose calls then go one by one (the bench's naive build). Its
 * Multicall3 is the one viem's chain definition names, else the canonical address if the chain has code there
 * (asked once; a failed probe is asked again next time), else none: viem's deployless batching takes over.
 */
export function callBatcher(client: EvmClient, chainId: string, publicClient: PublicClient): CallBatcher | null {
  let batcher = client.state.batchers.get(chainId)
  if (batcher === undefined) {
    const multicall = publicClient.batch?.multicall
    const settings = typeof multicall === 'object' ? multicall : {}
    const known = publicClient.chain?.contracts?.multicall3?.address
    let probe: Promise<Address | null> | undefined
    const multicall3 = () => {
      if (known && !settings.deployless) return Promise.resolve(known)
      probe ??= publicClient.getCode({ address: MULTICALL3_ADDRESS }).then(
        (code) => (code && code !== '0x' ? MULTICALL3_ADDRESS : null),
        (error) => {
          probe = undefined
          throw error
        },
      )
      return probe
    }
    batcher = multicall
      ? createCallBatcher(publicClient, {
          waitMs: settings.wait ?? 0,
          // This batcher calls a deployed Multicall3 (known or found), never sends its code: the deployless size
          // limit is viem's, for the calls it batches where none is found.
          maxBytes: settings.deployless ? MULTICALL_BATCH_BYTES : (settings.batchSize ?? 1024),
          multicall3,
          post: client.rpcPost(chainId),
          vouched: (to) => {
            const address = to.toLowerCase()
            return client.state.vouched.has(`${chainId}|${address}`) || client.swapRouter(chainId)?.toLowerCase() === address
          },
        })
      : null
    client.state.batchers.set(chainId, batcher)
  }
  return batcher
}

/** viem's definition when it knows the chain (Multicall3 address, fee and format rules); a bare one otherwise. */
function chainFor(id: number, url: string): Chain {
  const known = Object.values(knownChains as Record<string, unknown>).find(
    (c): c is Chain => typeof c === 'object' && c !== null && (c as Chain).id === id,
  )
  return (
    known ??
    defineChain({
      id,
      name: `EVM chain ${id}`,
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [url] } },
    })
  )
}
