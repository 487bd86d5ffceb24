/**
 * The bench's naive build: the same server, but its EVM client sends one eth_call per read (no Multicall3
 * folding, no JSON-RPC batching). Identical reads in flight are still shared by the plugin. Bench only.
 */
import { parseConfig } from '@earn/core'
import { evmClientFromPublicClients, parseRpcUrls, parseSwapRouters } from '@earn/plugin-evm'
import { createApp } from '@earn/server/app'
import { composeDeps } from '@earn/server/compose'
import { loadEcosystems } from '@earn/server/ecosystems'
import { createPublicClient, defineChain, http, type PublicClient } from 'viem'

const config = parseConfig(process.env)
const deps = await composeDeps(config)
const clients: Record<string, PublicClient> = {}
for (const [chainId, url] of parseRpcUrls(process.env.EVM_RPC_URLS)) {
  const chain = defineChain({ id: Number(chainId), name: `chain ${chainId}`, nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [url] } } })
  clients[chainId] = createPublicClient({ chain, transport: http(url) }) as PublicClient
}
const swapRouters = Object.fromEntries(parseSwapRouters(process.env.EVM_SWAP_ROUTERS))
deps.ecosystems = loadEcosystems(config, { evm: evmClientFromPublicClients(clients, { swapRouters }) })
await deps.ecosystems.warm()
const app = createApp(deps)
app.listen({ port: config.port, hostname: config.host })
console.log(JSON.stringify({ msg: 'listening', url: `http://${config.host}:${app.server!.port}` }))
process.on('SIGTERM', async () => {
  await app.stop()
  await deps.meter.close()
  await deps.store.close()
  process.exit(0)
})
