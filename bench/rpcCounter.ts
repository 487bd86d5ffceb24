/**
 * A JSON-RPC proxy in front of anvil that counts what passes: HTTP requests, JSON-RPC calls (a batch holds
 * several), eth_calls, and the reads inside them (each Multicall3 aggregate3 sub-call is one read).
 */
import { parseAbi, type Hex } from 'viem'

export const aggregate3Abi = parseAbi([
  'struct Call3 { address target; bool allowFailure; bytes callData; }',
  'function aggregate3(Call3[] calls) payable returns ((bool success, bytes returnData)[])',
])

export interface RpcCounts {
  httpRequests: number
  rpcCalls: number
  ethCalls: number
  /** Contract reads answered: sub-calls of aggregate3, plus plain eth_calls. */
  reads: number
  methods: Record<string, number>
}

const zero = (): RpcCounts => ({ httpRequests: 0, rpcCalls: 0, ethCalls: 0, reads: 0, methods: {} })

const AGGREGATE3 = '82ad56cb'
const UPSTREAM_CONNECTIONS = 32
const ARRAY_AT_0X20 = '20'.padStart(64, '0')

/**
 * Sub-calls of an aggregate3 call. Where viem does not know the chain's Multicall3 it sends the call "deployless":
 * Multicall3's creation code with the aggregate3 calldata appended as a constructor argument, so the calldata is
 * looked for from the end (the creation code contains the selector too, in its dispatcher).
 */
function readsIn(data: Hex | undefined): number {
  if (!data) return 1
  for (let at = data.lastIndexOf(AGGREGATE3); at > 1; at = data.lastIndexOf(AGGREGATE3, at - 1)) {
    if (at % 2 !== 0) continue
    // Only the array's length word (after the selector and the array's offset), not a decode of every sub-call:
    // the proxy shares the machine with the server it measures, so it should cost as little as it can.
    const body = data.slice(at + 8)
    if (body.slice(0, 64) !== ARRAY_AT_0X20) continue
    const count = Number.parseInt(body.slice(64, 128), 16)
    if (Number.isSafeInteger(count) && body.length >= 128 + 64 * count) return count
  }
  return 1
}

export function startRpcCounter(target: string) {
  let counts = zero()
  // At most UPSTREAM_CONNECTIONS calls to anvil at once, the rest queued. Bun's fetch keeps 64 connections to a host
  // alive and opens (then closes) a new one for every call above that: the naive build's ~250 calls in flight made
  // ~1,000 connections a second to anvil, whose listen queue (128) then overflowed, and a dropped connection waits
  // ~1 s to try again. That cost belongs to this proxy, not to the build it measures.
  let inFlight = 0
  const queue: (() => void)[] = []
  const slot = () => (inFlight < UPSTREAM_CONNECTIONS ? (inFlight++, Promise.resolve()) : new Promise<void>((resolve) => queue.push(resolve)))
  const release = () => {
    const next = queue.shift()
    if (next) next()
    else inFlight--
  }
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const body = await req.text()
      const parsed = JSON.parse(body) as { method: string; params?: unknown[] } | { method: string; params?: unknown[] }[]
      const calls = Array.isArray(parsed) ? parsed : [parsed]
      counts.httpRequests++
      counts.rpcCalls += calls.length
      for (const c of calls) {
        counts.methods[c.method] = (counts.methods[c.method] ?? 0) + 1
        if (c.method !== 'eth_call') continue
        counts.ethCalls++
        counts.reads += readsIn((c.params?.[0] as { data?: Hex; input?: Hex } | undefined)?.data ?? (c.params?.[0] as { input?: Hex } | undefined)?.input)
      }
      await slot()
      try {
        const upstream = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
        return new Response(await upstream.arrayBuffer(), { status: upstream.status, headers: { 'content-type': 'application/json' } })
      } finally {
        release()
      }
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    /** The counts since the last reset, and a fresh start. */
    take(): RpcCounts {
      const c = counts
      counts = zero()
      return c
    },
    stop: () => server.stop(true),
  }
}
