/**
 * The sample catalog's EVM and Solana chains, for trying the API locally: anvil on a free port with the contracts
 * `catalog/local.json` names (tUSD, the two vaults, a swap router and a tEUR/tUSD pool), deployed as the tests deploy
 * them, and LiteSVM behind a JSON-RPC endpoint with the sample Solana vault and its mints. Prints the variables to
 * start the server with; stays up until Ctrl-C. (The sample TON entry has no endpoint to serve it here: the TON
 * sandbox is an emulator without toncenter's HTTP API, so it stays pending.)
 *
 *   bun examples/local-chain.ts [0xWALLET | SOLANA_WALLET ...]
 *
 * Each EVM wallet given gets 10 ETH and 1,000 tUSD (tUSD has 6 decimals and a public `mint(address,uint256)`); each
 * Solana wallet 10 SOL and 1,000 of the sample vault's base token (6 decimals).
 * Then, in another shell: `EVM_RPC_URLS=… EVM_SWAP_ROUTERS=… SOLANA_RPC_URL=… bun run start`, and
 * `EVM_RPC_URLS=… SOLANA_RPC_URL=… bun run cli opportunity import catalog/local.json`.
 */
import { isAddress as isSolanaAddress } from '@solana/kit'
import { type Address, isAddress } from 'viem'
import { mintToken, setNativeBalance } from '../test/chains/evm.ts'
import { deploySampleSolana, startSolana } from '../test/chains/solana.ts'
import { startLocalChain } from '../test/actions/localChain.ts'

const wallets = process.argv.slice(2)
const evmWallets = wallets.filter((w) => isAddress(w)) as Address[]
const solanaWallets = wallets.filter((w) => isSolanaAddress(w))
for (const w of wallets)
  if (!isAddress(w) && !isSolanaAddress(w)) {
    console.error(`${w} is neither an EVM address (0x…, EIP-55 or one case) nor a Solana address (base58)`)
    process.exit(2)
  }

// Installed before anything starts: a signal during the start (a supervisor's, `timeout`'s) stops what has started, and
// exiting runs the exit hook that kills an anvil still starting (by the signal alone, bun died and left it running).
const running: { stop(): Promise<unknown> }[] = []
const stop = async () => {
  await Promise.all(running.map((r) => r.stop()))
  process.exit(0)
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, stop)

const chain = await startLocalChain()
running.push(chain.anvil)
const solana = await startSolana()
running.push(solana)
const sample = await deploySampleSolana(solana)
for (const wallet of evmWallets) {
  await setNativeBalance(chain.anvil, wallet, 10n ** 19n)
  await mintToken(chain.anvil, chain.token, wallet, 1_000n * 10n ** 6n)
}
for (const wallet of solanaWallets) {
  await solana.airdrop(wallet, 10n * 10n ** 9n)
  await sample.fund(wallet, 1_000n * 10n ** 6n)
}
const env: Record<string, string> = { ...chain.env(), SOLANA_RPC_URL: solana.url }
// The server and the CLI must open one store: where this script was given one, both lines name it (an integrator's
// import had gone into ./.data while the server read its DATA_DIR).
const store = ['DATA_DIR', 'DATABASE_URL'].filter((name) => process.env[name]).map((name) => `${name}=${process.env[name]}`)
console.log(`anvil (chain ${chain.anvil.chainId}) at ${chain.anvil.url}, the sample catalog's contracts deployed:`)
console.log(`  tUSD ${chain.token}, vaults ${chain.vault} (direct) and ${chain.swapVault} (swap), tEUR ${chain.otherToken}`)
for (const wallet of evmWallets) console.log(`  ${wallet}: 10 ETH, 1000 tUSD`)
console.log(`Solana (LiteSVM, localnet) at ${solana.url}: vault ${sample.vault}, base token ${sample.baseMint}, receipt token ${sample.receiptMint}`)
for (const wallet of solanaWallets) console.log(`  ${wallet}: 10 SOL, 1000 of the base token`)
console.log('\nstart the server and import the catalog with:')
console.log(`  ${[...store, ...Object.entries(env).map(([k, v]) => `${k}=${v}`)].join(' ')} bun run start`)
console.log(`  ${[...store, `EVM_RPC_URLS=${env.EVM_RPC_URLS}`, `SOLANA_RPC_URL=${env.SOLANA_RPC_URL}`].join(' ')} bun run cli opportunity import catalog/local.json`)
console.log('\nCtrl-C stops both chains (as does SIGTERM or SIGHUP: under a supervisor or `timeout` no anvil is left behind).')
