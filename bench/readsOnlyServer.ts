/**
 * The ceiling of any batched build, for bench/preflight.ts: an Elysia server that makes a deposit build's four chain
 * reads (the wallet's token balance, one more one-word read as the allowance is, and the vault's maxDeposit and
 * previewDeposit through the plugin's own check) through the EVM plugin, so through its Multicall3 batcher with the
 * server's wait and size, and answers them as JSON. No key check, meter, store, builder or action row. What separates the server from it is everything a build does
 * besides reading the chain; what separates it from the naive build is the batching alone.
 */
import { evm } from '@earn/plugin-evm'
import type { Address } from 'viem'
// The plugin's own check, from its source: the bench measures the build's reads, which the package does not export.
import { checkDepositTaken } from '../plugins/evm/src/limits.ts'
import { Elysia, t } from 'elysia'

const client = evm.connect(process.env)
const [chainId] = client.chainIds
if (chainId === undefined) throw new Error('EVM_RPC_URLS names no chain')
const secondToken = process.env.READS_ONLY_SECOND_TOKEN
if (!secondToken) throw new Error('READS_ONLY_SECOND_TOKEN is not set')
// As the server's catalog refresh does at start: the vault and its asset read once, so the batcher vouches for them
// and reads them in one batch (contracts it does not vouch for go in batches of their own).
await evm.balance.vault(client, { chainId, vaultAddress: secondToken })

const app = new Elysia()
  .get('/readyz', () => ({ checks: { ecosystems: 'ok' } }))
  .post(
    '/v2/actions/deposit/:opportunityId',
    async ({ body }) => {
      const owner = body.userAddress as Address
      const [balance, second] = await Promise.all([
        evm.balance.read(client, { chainId, owner, token: body.tokenIn }),
        evm.balance.read(client, { chainId, owner, token: secondToken }),
        checkDepositTaken(client, { chainId, owner, vault: secondToken as Address, asset: body.tokenIn as Address, tag: '' }, BigInt(body.amount)),
      ])
      return { balance: balance.toString(), second: second.toString(), amount: body.amount }
    },
    { body: t.Object({ userAddress: t.String(), tokenIn: t.String(), amount: t.String(), distributorId: t.String() }) },
  )
app.listen({ port: 0, hostname: '127.0.0.1' })
console.log(JSON.stringify({ msg: 'listening', url: `http://127.0.0.1:${app.server!.port}` }))
process.on('SIGTERM', async () => {
  await app.stop()
  process.exit(0)
})
