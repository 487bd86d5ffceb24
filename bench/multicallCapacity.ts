/**
 * anvil's own multicall read capacity: Multicall3 aggregate3 calls of `readsPerCall` ERC-20 balanceOf reads
 * (distinct holders), sent straight to anvil at a few concurrencies; the best reads per second wins.
 */
import { encodeFunctionData, erc20Abi, type Address } from 'viem'
import { closedLoop, perSecond } from './load.ts'
import { aggregate3Abi } from './rpcCounter.ts'

const MULTICALL3: Address = '0xcA11bde05977b3631167028862bE2a173976CA11'

export async function multicallCapacity(p: { url: string; token: Address; readsPerCall: number; concurrencies: number[]; durationMs: number }) {
  const k = Math.max(1, Math.round(p.readsPerCall))
  const calls = Array.from({ length: k }, (_, i) => ({
    target: p.token,
    allowFailure: true,
    callData: encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [`0x${(i + 1).toString(16).padStart(40, '0')}` as Address] }),
  }))
  const data = encodeFunctionData({ abi: aggregate3Abi, functionName: 'aggregate3', args: [calls] })
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_call', params: [{ to: MULTICALL3, data }, 'latest'] })
  const runs = []
  for (const connections of p.concurrencies) {
    const r = await closedLoop({
      connections,
      durationMs: p.durationMs,
      send: async () => {
        const res = await fetch(p.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
        const text = await res.text()
        return res.ok && !text.includes('"error"') ? 200 : 500
      },
    })
    runs.push({ connections, readsPerSecond: perSecond((r.statuses[200] ?? 0) * k, r.elapsedMs) })
  }
  const best = runs.reduce((a, b) => (b.readsPerSecond > a.readsPerSecond ? b : a))
  return { readsPerCall: k, best, runs }
}
