/**
 * The sample catalog's EVM chain, for trying the API locally: anvil on a free port with the contracts
 * `catalog/local.json` names (tUSD, the two vaults, a swap router and a tEUR/tUSD pool), deployed as the tests deploy
 * them. Prints the variables to start the server with; stays up until Ctrl-C.
 *
 *   bun examples/local-chain.ts [0xWALLET ...]
 *
 * Each wallet given gets 10 ETH and 1,000 tUSD (tUSD has 6 decimals and a public `mint(address,uint256)`).
 * Then, in another shell: `EVM_RPC_URLS=… EVM_SWAP_ROUTERS=… bun run start`, and
 * `EVM_RPC_URLS=… bun run cli opportunity import catalog/local.json`.
 */
import { type Address, isAddress } from 'viem'
import { mintToken, setNativeBalance } from '../test/chains/evm.ts'
import { startLocalChain } from '../test/actions/localChain.ts'

const wallets = process.argv.slice(2)
for (const w of wallets) if (!isAddress(w)) throw new Error(`${w} is not an EVM address`)

const chain = await startLocalChain()
for (const wallet of wallets as Address[]) {
  await setNativeBalance(chain.anvil, wallet, 10n ** 19n)
  await mintToken(chain.anvil, chain.token, wallet, 1_000n * 10n ** 6n)
}
const env = chain.env()
console.log(`anvil (chain ${chain.anvil.chainId}) at ${chain.anvil.url}, the sample catalog's contracts deployed:`)
console.log(`  tUSD ${chain.token}, vaults ${chain.vault} (direct) and ${chain.swapVault} (swap), tEUR ${chain.otherToken}`)
for (const wallet of wallets) console.log(`  ${wallet}: 10 ETH, 1000 tUSD`)
console.log('\nstart the server and import the catalog with:')
console.log(`  ${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' ')} bun run start`)
console.log(`  EVM_RPC_URLS=${env.EVM_RPC_URLS} bun run cli opportunity import catalog/local.json`)
console.log('\nCtrl-C stops the chain.')
process.on('SIGINT', async () => {
  await chain.anvil.stop()
  process.exit(0)
})
