/**
 * The EVM client: one lazily made viem public client per configured chain. The plugin's capabilities take it
 * as their first argument, the way a viem action takes a viem client, so tests can hand in one bound to anvil.
 */
import type { ChainEnv } from '@earn/core'
import { createPublicClient, defineChain, http, type Chain, type PublicClient } from 'viem'
import * as knownChains from 'viem/chains'

export const RPC_URLS_VARIABLE = 'EVM_RPC_URLS'

export interface EvmClient {
  /** Chain ids that have an RPC, as the API spells them (decimal strings), in configuration order. */
  readonly chainIds: readonly string[]
  /** The chain's public client, or `undefined` when no RPC is configured for it. */
  publicClient(chainId: string): PublicClient | undefined
}

/**
 * Reads `EVM_RPC_URLS` (`chainId=url,chainId=url`; empty or absent means no chains). Makes no request: a public
 * client is created on first use of its chain.
 */
export function connect(env: ChainEnv): EvmClient {
  const urls = parseRpcUrls(env[RPC_URLS_VARIABLE])
  const clients = new Map<string, PublicClient>()
  return {
    chainIds: [...urls.keys()],
    publicClient(chainId) {
      const url = urls.get(chainId)
      if (url === undefined) return undefined
      let client = clients.get(chainId)
      if (!client) {
        client = createRpcClient(Number(chainId), url)
        clients.set(chainId, client)
      }
      return client
    },
  }
}

/** Wraps public clients that already exist (tests bind them to anvil), keyed by chain id. */
export function evmClientFromPublicClients(clients: Readonly<Record<string, PublicClient>>): EvmClient {
  const map = new Map(Object.entries(clients))
  return { chainIds: [...map.keys()], publicClient: (chainId) => map.get(chainId) }
}

function createRpcClient(chainId: number, url: string): PublicClient {
  return createPublicClient({
    chain: chainFor(chainId, url),
    // Concurrent requests (a portfolio's many balance reads) leave as one JSON-RPC batch...
    transport: http(url, { batch: true }),
    // ...and concurrent eth_calls fold into one Multicall3 call on chains where viem knows its address; where it
    // does not, viem sends them one by one.
    batch: { multicall: true },
  }) as PublicClient
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

/** `chainId=url,...` to a map. Errors name the variable and the entry, never echo a URL (it may hold an API key). */
export function parseRpcUrls(value: string | undefined): Map<string, string> {
  const urls = new Map<string, string>()
  const text = value?.trim() ?? ''
  if (text === '') return urls
  // A trailing or doubled comma is a harmless slip, so empty entries are skipped.
  const entries = text.split(',').map((e) => e.trim())
  entries.forEach((entry, i) => {
    if (entry === '') return
    const where = `${RPC_URLS_VARIABLE} entry ${i + 1}`
    const eq = entry.indexOf('=')
    if (eq < 0) throw new Error(`${where} is not chainId=url (for example 1=https://rpc.example,8453=https://base.example)`)
    const chainId = entry.slice(0, eq).trim()
    const url = entry.slice(eq + 1).trim()
    if (!/^[1-9]\d*$/.test(chainId) || !Number.isSafeInteger(Number(chainId)))
      throw new Error(`${where}: chain id must be a positive decimal integer`)
    if (urls.has(chainId)) throw new Error(`${where}: chain ${chainId} is listed twice`)
    let protocol: string
    try {
      protocol = new URL(url).protocol
    } catch {
      throw new Error(`${where}: the URL for chain ${chainId} is not a valid URL`)
    }
    if (protocol !== 'http:' && protocol !== 'https:')
      throw new Error(`${where}: the URL for chain ${chainId} must be http or https`)
    urls.set(chainId, url)
  })
  return urls
}
