/**
 * The plugin's configuration variables, parsed once by `connect`. Errors name the variable and the entry and never
 * echo a URL, which may hold an API key.
 */
import { namesOneHost } from '@earn/core'
import type { Address } from 'viem'
import { isValid } from './address.ts'

export const RPC_URLS_VARIABLE = 'EVM_RPC_URLS'
export const SWAP_ROUTERS_VARIABLE = 'EVM_SWAP_ROUTERS'
export const LOGS_BLOCK_RANGE_VARIABLE = 'EVM_LOGS_BLOCK_RANGE'
/** Blocks per eth_getLogs call unless `EVM_LOGS_BLOCK_RANGE` says otherwise: within what most RPC providers accept. */
export const DEFAULT_LOGS_BLOCK_RANGE = 10_000n

export const CONFIRMATIONS_VARIABLE = 'EVM_CONFIRMATIONS'
/** The most confirmations a chain may be given: ~3.4 hours of Ethereum blocks, past any reorganisation seen. */
export const MAX_CONFIRMATIONS = 1_000

export const RPC_TIMEOUT_VARIABLE = 'EVM_RPC_TIMEOUT_MS'
/**
 * How long one RPC request may take before it fails (it is tried twice): a node that accepts connections but never
 * answers then fails a build with 503 in about twice this, not viem's default of four 10 s attempts (~41 s).
 */
export const DEFAULT_RPC_TIMEOUT_MS = 5_000

/** Milliseconds from 100 to 60000; empty or absent: the default. */
export function parseRpcTimeout(value: string | undefined): number {
  const text = value?.trim() ?? ''
  if (text === '') return DEFAULT_RPC_TIMEOUT_MS
  const ms = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN
  if (!(ms >= 100 && ms <= 60_000)) throw new Error(`${RPC_TIMEOUT_VARIABLE} must be a whole number of milliseconds from 100 to 60000`)
  return ms
}

/** `chainId=url,...` to a map. */
export function parseRpcUrls(value: string | undefined): Map<string, string> {
  return parseEntries(RPC_URLS_VARIABLE, value, 'url', 'for example 1=https://rpc.example,8453=https://base.example', (url, where, chainId) => {
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      throw new Error(`${where}: the URL for chain ${chainId} is not a valid URL`)
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error(`${where}: the URL for chain ${chainId} must be http or https`)
    if (!namesOneHost(parsed)) throw new Error(`${where}: the URL for chain ${chainId} names no single host (one URL per chain; entries are separated by commas)`)
    return url
  })
}

/** The largest block range one eth_getLogs call may ask for (providers cap it); empty or absent: the default. */
export function parseLogsBlockRange(value: string | undefined): bigint {
  const text = value?.trim() ?? ''
  if (text === '') return DEFAULT_LOGS_BLOCK_RANGE
  if (!/^[1-9]\d{0,9}$/.test(text)) throw new Error(`${LOGS_BLOCK_RANGE_VARIABLE} must be a whole number of blocks from 1 to 9999999999`)
  return BigInt(text)
}

/**
 * `chainId=N,...`: how many confirmations (its block and those after it) a transaction needs before verify and stream
 * confirm count it; a chain not named needs 1 (mined).
 */
export function parseConfirmations(value: string | undefined): Map<string, number> {
  return parseEntries(CONFIRMATIONS_VARIABLE, value, 'confirmations', 'for example 1=12,8453=1', (text, where, chainId) => {
    const n = /^\d{1,4}$/.test(text) ? Number(text) : Number.NaN
    if (!(n >= 1 && n <= MAX_CONFIRMATIONS)) throw new Error(`${where}: the confirmations for chain ${chainId} must be a whole number from 1 to ${MAX_CONFIRMATIONS}`)
    return n
  })
}

/** `chainId=routerAddress,...` (Uniswap V2 router interface) to a map of canonical addresses. */
export function parseSwapRouters(value: string | undefined): Map<string, Address> {
  return parseEntries(SWAP_ROUTERS_VARIABLE, value, 'router', 'for example 1=0x7a25...488D', (router, where, chainId) => {
    if (!isValid(router)) throw new Error(`${where}: the router for chain ${chainId} is not an EVM address`)
    return router.toLowerCase() as Address
  })
}

function parseEntries<T>(
  variable: string,
  value: string | undefined,
  what: string,
  example: string,
  parseValue: (text: string, where: string, chainId: string) => T,
): Map<string, T> {
  const entries = new Map<string, T>()
  const text = value?.trim() ?? ''
  if (text === '') return entries
  // A trailing or doubled comma is a harmless slip, so empty entries are skipped.
  text.split(',').forEach((raw, i) => {
    const entry = raw.trim()
    if (entry === '') return
    const where = `${variable} entry ${i + 1}`
    const eq = entry.indexOf('=')
    if (eq < 0) throw new Error(`${where} is not chainId=${what} (${example})`)
    const chainId = entry.slice(0, eq).trim()
    if (!/^[1-9]\d*$/.test(chainId) || !Number.isSafeInteger(Number(chainId)))
      throw new Error(`${where}: chain id must be a positive decimal integer`)
    if (entries.has(chainId)) throw new Error(`${where}: chain ${chainId} is listed twice`)
    entries.set(chainId, parseValue(entry.slice(eq + 1).trim(), where, chainId))
  })
  return entries
}
