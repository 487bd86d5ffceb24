/**
 * Gas limits for built steps, within the hot path's RPC budget.
 *
 * Policy (this package's README repeats it):
 * - Gas is measured once per client, opportunity and step kind (a vault's deposit or redeem, an approval of one
 *   token to one spender, a swap on one router pair) and reused by every later build of at most the measure's amount
 *   (below), so a burst of builds sends no estimate per request. Builds arriving while a measure of at least their
 *   amount is under way wait for it.
 * - The measure simulates the build's whole sequence (approve, then deposit; or approve, swap, approve, deposit) in
 *   one `eth_simulateV1` call from the wallet, so a step is measured even when it could not run before the step
 *   ahead of it is mined.
 * - Where the RPC has no `eth_simulateV1`, or the simulated sequence fails, each step that can run on its own
 *   (an approval, a deposit with the allowance in place, a redeem) is measured with `eth_estimateGas`; a step
 *   that cannot (a deposit behind its approve or its swap) takes a conservative default (`DEFAULT_GAS`).
 * - Where the RPC has no `eth_simulateV1`, that is remembered for the client's life (asking again on each build would
 *   spend the budget the measure exists to save), and a step that cannot run alone takes its default until a build
 *   finds it able to (the wallet's allowance already in place): that build estimates it, and the measure then serves
 *   every build of at most its amount, behind an approve or not. A default fixed for good would fail every deposit
 *   into a vault dearer than it, as an audit showed with a 400 000-gas vault.
 * - Where the sequence failed, that may be the request's own doing (a token that takes a fee on transfer, a wallet
 *   the token blocks, a wallet short of funds, which is measured before the preflight refuses it): nothing is
 *   recorded for the steps it did not measure, so it cannot fix a default on the opportunity's honest builds, which
 *   share those steps. The builds that joined such a measure share one more, from the wallet of whichever of them
 *   asks first, and so on until a measure holds or each has measured from its own wallet: a build takes the default
 *   only where its own sequence failed (an audit had an honest build behind two short wallets' take it, and its
 *   deposit into a 350 000-gas vault revert). A wave's honest builds behind k failing ones cost k + 1 measures. A
 *   sequence that fails for every wallet is measured on every build, whose transactions would revert on chain anyway.
 * - A measure serves later builds that move at most the amount it was measured with (a deposit's assets, a redeem's
 *   shares); a build moving more measures again, beside any smaller measure in flight, and the measure kept is the
 *   larger. A vault that spreads a deposit over several markets, or pulls a redeem back from them, spends gas in step
 *   with the amount: an audit's 70-unit deposit and 75-unit redeem into such a vault reverted, out of gas, on the
 *   limits of 1-unit measures. Builds of one amount, a bench's, still share one measure.
 * - A measure is taken in one state and reused in others, so the limit (`reusedGasLimit`) allows for a dearer
 *   state than the measured one: the measure may be after refunds (nodes without `maxUsedGas` report `gasUsed`), and
 *   the slots the step writes may all have been non-zero when measured and all be zero later (a wallet's first
 *   deposit, a vault emptied since: up to 20 000 gas more per slot, EIP-2200). A limit is never under the step's
 *   default either: a vault's paths may differ by state past any headroom (a redeem paid from idle assets, or pulled
 *   back from markets). Unused gas is not paid for; a limit too low is a reverted transaction the user pays for.
 * - Each step's `metadata.gasLimitSource` says which: 'estimated' (measured for this request), 'measured-once'
 *   (an earlier or concurrent request's measure) or 'default'.
 */
import { BaseError, HttpRequestError, MethodNotFoundRpcError, MethodNotSupportedRpcError, RpcRequestError, TimeoutError, type Address, type Hex, type PublicClient } from 'viem'
import { requirePublicClient, type EvmClient } from './client.ts'
import { recall, remember } from './lru.ts'
import { chainUnavailable, classifyRpcError } from './rpc.ts'
import { shared } from './shared.ts'

export type GasStep = 'approve' | 'swap' | 'deposit' | 'withdraw'
export type GasLimitSource = 'estimated' | 'measured-once' | 'default'

/** Above what these steps cost on common contracts (approve ~46k, V2 swap ~80-150k, ERC-4626 ~70-180k). */
export const DEFAULT_GAS: Readonly<Record<GasStep, bigint>> = {
  approve: 80_000n,
  swap: 300_000n,
  deposit: 250_000n,
  withdraw: 250_000n,
}

const MIN_HEADROOM = 50_000n

/** An estimate taken for this very sender and call: 20% more, and at least 50 000 gas. */
export const withHeadroom = (measured: bigint): bigint => {
  const fifth = measured / 5n
  return measured + (fifth > MIN_HEADROOM ? fifth : MIN_HEADROOM)
}

/**
 * Storage slots a step may find at zero where its measure found them set: an approval's allowance; a deposit's
 * share balance, total supply and the vault's balance of its asset; a redeem's and a swap's receiving balances (a
 * swap also the pair's reserve slot, kept whole in one word).
 */
const SLOTS_FROM_ZERO: Readonly<Record<GasStep, bigint>> = { approve: 1n, swap: 2n, deposit: 3n, withdraw: 1n }
/** Writing a zero slot costs 20 000 gas where a set one costs 2 900 (EIP-2200, EIP-2929). */
const SLOT_FROM_ZERO_GAS = 20_000n

/**
 * The limit for a step from a measure taken in another state: the peak (a measure after refunds is at least 4/5 of
 * it, EIP-3529), every slot the step may write from zero, and 10% for what nested calls withhold (EIP-150's 1/64)
 * and contracts whose paths differ by state.
 */
export const reusedGasLimit = (step: GasStep, measured: bigint): bigint => {
  const worst = measured + measured / 4n + SLOTS_FROM_ZERO[step] * SLOT_FROM_ZERO_GAS
  return worst + worst / 10n
}

/** One step of a build as the measure sees it. */
export interface GasCall {
  step: GasStep
  /** What the measure holds for besides chain and step: the contract called, and for an approval its spender. */
  subject: string
  to: Address
  data: Hex
  /** True when the call can run now on its own, i.e. nothing before it must be mined first. */
  standalone: boolean
  /**
   * What the step moves, where its gas may grow with it (a deposit's assets, a redeem's shares); a measure serves
   * builds of at most the amount it was taken with. None for an approval or a swap, whose gas does not.
   */
  amount?: bigint
}

/** A step's measure: the most gas it took, and the largest amount it was measured moving (0 for an approval). */
export interface Measure {
  gas: bigint
  upTo: bigint
}

/** Whether a measure kept serves this call (see `GasCall.amount`). */
const serves = (measure: Measure | undefined, call: GasCall): boolean => measure !== undefined && measure.upTo >= (call.amount ?? 0n)

export interface GasLimit {
  gasLimit: bigint
  source: GasLimitSource
}

/**
 * Measures a client keeps; past it, the one used longest ago goes (and is measured again if asked for). A catalog's
 * steps are a few per opportunity, but a swap names any token its router can trade, each a measure of its own.
 */
export const MAX_MEASURED = 10_000

/** Gas limits for a build's steps, in order, sent from `from`. */
export async function gasLimits(client: EvmClient, chainId: string, from: Address, calls: GasCall[]): Promise<GasLimit[]> {
  const measured = client.state.gasMeasured
  const keys = calls.map((c) => `${chainId}|gas|${c.step}|${c.subject}`)
  let fresh = new Set<string>()
  // A measure joined was another wallet's, and where it did not serve this build (its sequence failed, maybe its own
  // doing: a wallet short of funds is measured before the preflight refuses it), one of the builds that joined it
  // measures from its own wallet and the others join that, round after round, rather than take the default, which a
  // dearer vault reverts on. A build leaves once a measure serves it or it has measured itself, so each round has one
  // fewer waiting. A build joins only a measure moving at least its amount; one moving more measures beside it, so a
  // wave of ever larger amounts measures at once (an audit's 30 ascending builds took 3 s behind 100 ms measures).
  const amount = calls.reduce((most, c) => (c.amount !== undefined && c.amount > most ? c.amount : most), 0n)
  for (let round = 0; calls.some((c, i) => !serves(measured.get(keys[i]!), c)); round++) {
    const sequence = `${chainId}|measure${round}|${keys.join(',')}`
    const running = client.state.measuring.get(sequence)
    const key = running !== undefined && running.amount >= amount ? running.key : `${sequence}|${amount}`
    if (key !== running?.key) client.state.measuring.set(sequence, { amount, key })
    const result = await shared(client, key, () => measure(client, chainId, from, calls, keys)).finally(() => {
      if (client.state.measuring.get(sequence)?.key === key) client.state.measuring.delete(sequence)
    })
    if (result.first) {
      fresh = result.value
      break
    }
  }
  return keys.map((key, i) => {
    const call = calls[i]!
    const kept = recall(measured, key)
    // Never under the default: a measure covers the state it was taken in, and a step may meet a dearer one than the
    // headroom allows for (an audit's whole-balance redeem paid from the vault's idle assets measured 110 000 gas; a
    // smaller one, pulled back from its markets, took 174 000 and ran out on that measure's limit).
    if (kept !== undefined && serves(kept, call)) return { gasLimit: atLeastDefault(call.step, reusedGasLimit(call.step, kept.gas)), source: fresh.has(key) ? 'estimated' : 'measured-once' }
    // Not measured for its amount (its sequence failed, or it cannot run alone where the node cannot simulate):
    // what a smaller amount took is still a floor.
    return { gasLimit: atLeastDefault(call.step, kept === undefined ? 0n : reusedGasLimit(call.step, kept.gas)), source: 'default' }
  })
}

const atLeastDefault = (step: GasStep, gas: bigint): bigint => (gas > DEFAULT_GAS[step] ? gas : DEFAULT_GAS[step])

/**
 * Measures the steps no kept measure serves (`serves`) and records them, the larger on both counts (see the policy
 * above); resolves to the keys it measured.
 */
async function measure(client: EvmClient, chainId: string, from: Address, calls: GasCall[], keys: string[]): Promise<Set<string>> {
  const publicClient = requirePublicClient(client, chainId)
  const simulated = client.state.cannotSimulate.has(chainId) ? 'unsupported' : await simulate(publicClient, chainId, from, calls)
  if (simulated === 'unsupported') client.state.cannotSimulate.add(chainId)
  const measured = client.state.gasMeasured
  const gas = await Promise.all(
    calls.map((call, i) => {
      if (serves(measured.get(keys[i]!), call)) return undefined
      if (Array.isArray(simulated)) return simulated[i]
      return call.standalone ? estimate(publicClient, chainId, from, call) : undefined
    }),
  )
  const done = new Set<string>()
  keys.forEach((key, i) => {
    const call = calls[i]!
    const kept = measured.get(key)
    const g = gas[i]
    if (serves(kept, call) || g === undefined) return
    // Kept the larger on both counts: a concurrent build may have measured a larger amount meanwhile.
    const amount = call.amount ?? 0n
    const next = kept === undefined ? { gas: g, upTo: amount } : { gas: g > kept.gas ? g : kept.gas, upTo: amount > kept.upTo ? amount : kept.upTo }
    remember(measured, key, next, MAX_MEASURED)
    done.add(key)
  })
  return done
}

/**
 * Gas per call of the sequence run in order on the current state; 'unsupported' where the RPC has no simulation,
 * 'failed' where a call failed (or the RPC did). `maxUsedGas` (the peak before refunds) is what a limit must cover;
 * nodes that omit it give `gasUsed`.
 */
async function simulate(publicClient: PublicClient, chainId: string, from: Address, calls: GasCall[]): Promise<bigint[] | 'unsupported' | 'failed'> {
  try {
    const [block] = await publicClient.simulateBlocks({
      blocks: [{ calls: calls.map((c) => ({ from, to: c.to, data: c.data })) }],
    })
    const results = block?.calls ?? []
    if (results.length !== calls.length || results.some((r) => r.status !== 'success')) return 'failed'
    return results.map((r) => (r as { maxUsedGas?: bigint }).maxUsedGas ?? r.gasUsed)
  } catch (error) {
    if (lacksMethod(error)) return 'unsupported'
    // No answer at all: the estimates would wait out the same timeout again (a build took ~4x it), so the chain is
    // down now. A node that answered with an error may only refuse the simulation: the estimates below still try.
    if (noAnswer(error)) throw chainUnavailable(chainId, error)
    return 'failed'
  }
}

/** The request timed out or found no node (no HTTP answer at all), as opposed to an answer that is an error. */
export function noAnswer(error: unknown): boolean {
  return error instanceof BaseError && error.walk((e) => e instanceof TimeoutError || (e instanceof HttpRequestError && e.status === undefined)) !== null
}

/** The RPC does not have the method (JSON-RPC -32601, or a provider's own words for it). */
export function lacksMethod(error: unknown): boolean {
  if (!(error instanceof BaseError)) return false
  const rpc = error.walk((e) => e instanceof RpcRequestError) as RpcRequestError | null
  if (error.walk((e) => e instanceof MethodNotFoundRpcError || e instanceof MethodNotSupportedRpcError)) return true
  return rpc !== null && (rpc.code === -32601 || /not (exist|found|supported|available)|unsupported|unknown method/i.test(rpc.details))
}

async function estimate(publicClient: PublicClient, chainId: string, from: Address, call: GasCall): Promise<bigint | undefined> {
  try {
    return await publicClient.estimateGas({ account: from, to: call.to, data: call.data, value: 0n })
  } catch (error) {
    if (classifyRpcError(error) === 'unavailable') throw chainUnavailable(chainId, error)
    // The call would revert now; the step keeps its default.
    return undefined
  }
}
