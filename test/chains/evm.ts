/**
 * A real EVM chain for tests: anvil on a free port, our Solidity test contracts compiled offline with solc-js,
 * and deploy helpers. Any test that touches an EVM chain imports this file; nothing here is mocked.
 *
 *   const chain = await startAnvil()            // Multicall3 already installed
 *   const token = await deployToken(chain)      // compiles test/contracts/ once per process
 *   afterAll(() => chain.stop())
 */
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  concatHex,
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  encodeAbiParameters,
  encodeFunctionData,
  erc20Abi,
  erc4626Abi,
  http,
  keccak256,
  parseAbi,
  parseAbiParameters,
  type Abi,
  type Address,
  type Hash,
  type Hex,
  type HttpTransport,
  type PublicClient,
  type TestClient,
  type TransactionReceipt,
  type WalletClient,
} from 'viem'
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { foundry } from 'viem/chains'

const require = createRequire(import.meta.url)
const here = dirname(fileURLToPath(import.meta.url))
const CONTRACTS_DIR = join(here, '..', 'contracts')
const ARTIFACTS_DIR = join(here, '..', '.artifacts')

/** Where Multicall3 lives on nearly every EVM chain; viem's call batching sends `aggregate3` here. */
export const MULTICALL3_ADDRESS: Address = '0xcA11bde05977b3631167028862bE2a173976CA11'

/** anvil's chain, with the Multicall3 that `startAnvil` installs, so viem's multicall batching has a target. */
export const anvilChain = defineChain({ ...foundry, contracts: { multicall3: { address: MULTICALL3_ADDRESS } } })
export type AnvilChain = typeof anvilChain

/** anvil's first dev account (mnemonic "test test ... junk"): funded with 10 000 ETH; deploys and mints. */
export const ANVIL_DEPLOYER_KEY: Hex = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80'

// Typed ABIs for the calls tests make; the compiled ABI is only used to deploy.
export const testTokenAbi = [...erc20Abi, ...parseAbi(['function mint(address to, uint256 amount)'])] as const
export const testVaultAbi = erc4626Abi
export const testSmartWalletAbi = parseAbi([
  'function owner() view returns (address)',
  'function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)',
  'function execute(address to, uint256 value, bytes data) returns (bytes)',
  'function executeSigned(address to, uint256 value, bytes data, bytes signature) returns (bytes)',
  'function executeBatch(address[] to, bytes[] data)',
  'function nonce() view returns (uint256)',
])
export const testSmartWalletFactoryAbi = parseAbi([
  'function deploy(address owner, bytes32 salt) returns (address)',
  'function predict(address owner, bytes32 salt) view returns (address)',
])
export const testBundlerAbi = parseAbi(['struct Call { address to; bytes data; }', 'function run(Call[] calls)'])
export const testSwapRouterAbi = parseAbi([
  'function getPair(address tokenA, address tokenB) view returns (address)',
  'function createPair(address tokenA, address tokenB) returns (address)',
  'function addLiquidity(address tokenA, address tokenB, uint256 amountA, uint256 amountB) returns (address)',
  'function getAmountsOut(uint256 amountIn, address[] path) view returns (uint256[])',
  'function swapExactTokensForTokens(uint256 amountIn, uint256 amountOutMin, address[] path, address to, uint256 deadline) returns (uint256[])',
])
export const testSwapPairAbi = parseAbi([
  'function token0() view returns (address)',
  'function token1() view returns (address)',
  'function getReserves() view returns (uint256, uint256)',
])

// ---------------------------------------------------------------------------------------------------------------
// anvil

export interface Anvil {
  url: string
  port: number
  /** The chain id as the API spells it (a decimal string). */
  chainId: string
  chain: AnvilChain
  publicClient: PublicClient<HttpTransport, AnvilChain>
  walletClient: WalletClient<HttpTransport, AnvilChain, PrivateKeyAccount>
  testClient: TestClient<'anvil', HttpTransport, AnvilChain>
  /** Funded account that sends every helper transaction. */
  deployer: PrivateKeyAccount
  stop(): Promise<void>
}

export interface StartAnvilOptions {
  /** Install MiniMulticall3 at `MULTICALL3_ADDRESS` (default true). */
  multicall3?: boolean
  /** Extra anvil flags, e.g. ['--chain-id', '8453']. */
  args?: string[]
}

/** The real anvil binary: the npm wrapper (`.bin/anvil`, a node script) would sit between us and the signals. */
export function anvilBinary(): string {
  const arch = process.arch === 'x64' ? 'amd64' : process.arch
  const wrapper = dirname(require.resolve('@foundry-rs/anvil/package.json'))
  // With bun's isolated installs the platform package is a sibling of the wrapper, not a dependency of ours.
  const fromWrapper = createRequire(join(wrapper, 'package.json'))
  const pkg = dirname(fromWrapper.resolve(`@foundry-rs/anvil-${process.platform}-${arch}/package.json`))
  return join(pkg, 'bin', 'anvil')
}

export async function startAnvil(options: StartAnvilOptions = {}): Promise<Anvil> {
  const proc = spawn(anvilBinary(), ['--host', '127.0.0.1', '--port', '0', ...(options.args ?? [])], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()))
  const kill = () => proc.kill('SIGTERM')
  // A test process that dies without stop() must not leave anvil running.
  process.once('exit', kill)

  const port = await new Promise<number>((resolve, reject) => {
    let output = ''
    const timer = setTimeout(() => reject(new Error(`anvil did not start within 15 s:\n${output}`)), 15_000)
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const m = output.match(/Listening on 127\.0\.0\.1:(\d+)/)
      if (m) {
        clearTimeout(timer)
        resolve(Number(m[1]))
      }
    }
    proc.stdout!.on('data', onData)
    proc.stderr!.on('data', onData)
    proc.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`anvil exited with code ${code} before listening:\n${output}`))
    })
    proc.once('error', (e) => {
      clearTimeout(timer)
      reject(e)
    })
  }).catch((e) => {
    kill()
    process.off('exit', kill)
    throw e
  })
  // anvil logs every request; keep draining so a full pipe never blocks it.
  proc.stdout!.removeAllListeners('data').resume()
  proc.stderr!.removeAllListeners('data').resume()

  const url = `http://127.0.0.1:${port}`
  const transport = http(url)
  // A `--chain-id` flag makes another chain: its clients must sign for it (the type stays anvil's).
  const flag = options.args?.indexOf('--chain-id') ?? -1
  const chain = flag >= 0 ? ({ ...anvilChain, id: Number(options.args![flag + 1]) } as AnvilChain) : anvilChain
  const publicClient = createPublicClient({ chain, transport, pollingInterval: 50, batch: { multicall: true }, ccipRead: false })
  const deployer = privateKeyToAccount(ANVIL_DEPLOYER_KEY)
  const walletClient = createWalletClient({ chain, transport, account: deployer, pollingInterval: 50 })
  const testClient = createTestClient({ mode: 'anvil', chain, transport, pollingInterval: 50 })

  const anvil: Anvil = {
    url,
    port,
    chainId: String(chain.id),
    chain,
    publicClient,
    walletClient,
    testClient,
    deployer,
    async stop() {
      process.off('exit', kill)
      if (proc.exitCode === null && proc.signalCode === null) kill()
      await exited
    },
  }
  if (options.multicall3 ?? true) {
    const { MiniMulticall3 } = await compileContracts()
    await testClient.setCode({ address: MULTICALL3_ADDRESS, bytecode: MiniMulticall3.deployedBytecode })
  }
  return anvil
}

// ---------------------------------------------------------------------------------------------------------------
// Solidity

export interface Artifact {
  abi: Abi
  bytecode: Hex
  deployedBytecode: Hex
}

export const CONTRACT_NAMES = [
  'TestToken',
  'TestStrictApproveToken',
  'TestFeeToken',
  'TestPausableToken',
  'TestVault',
  'TestOffsetVault',
  'TestLimitedVault',
  'TestMarketsVault',
  'TestSmartWallet',
  'TestSmartWalletFactory',
  'TestBundler',
  'MiniMulticall3',
  'TestSwapRouter',
  'TestSwapPair',
  'TestReturnBomb',
  'TestGasBurner',
  'TestDepositSpammer',
  'TestLyingFeeToken',
  'TestSwitchedFeeToken',
  'TestIndexedToken',
  'TestFalseToken',
  'TestWideDecimals',
  'TestEcho',
  'TestEoaDelegate',
] as const
export type ContractName = (typeof CONTRACT_NAMES)[number]
export type Artifacts = Record<ContractName, Artifact>

const SOLC_SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: 'cancun',
  outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
}

let compiled: Promise<Artifacts> | undefined

/**
 * Compiles every `.sol` file in test/contracts/ with solc-js (no download: soljson ships in the package).
 * Memoized per process, and on disk under test/.artifacts/ keyed by sources, compiler and settings, because
 * loading solc and compiling OpenZeppelin takes about a second.
 */
export function compileContracts(): Promise<Artifacts> {
  compiled ??= compile().catch((e) => {
    compiled = undefined
    throw e
  })
  return compiled
}

async function compile(): Promise<Artifacts> {
  const sources: Record<string, { content: string }> = {}
  for (const file of readdirSync(CONTRACTS_DIR).filter((f) => f.endsWith('.sol')).sort())
    sources[file] = { content: readFileSync(join(CONTRACTS_DIR, file), 'utf8') }

  const solcVersion: string = require('solc/package.json').version
  const ozVersion: string = require('@openzeppelin/contracts/package.json').version
  const key = createHash('sha256')
    .update(JSON.stringify({ sources, solcVersion, ozVersion, SOLC_SETTINGS, CONTRACT_NAMES }))
    .digest('hex')
    .slice(0, 16)
  const cacheFile = join(ARTIFACTS_DIR, `evm-${key}.json`)
  if (existsSync(cacheFile)) return JSON.parse(readFileSync(cacheFile, 'utf8')) as Artifacts

  const solc = (await import('solc')).default
  const ozRoot = dirname(require.resolve('@openzeppelin/contracts/package.json'))
  const findImports = (path: string) => {
    const prefix = '@openzeppelin/contracts/'
    const file = path.startsWith(prefix) ? join(ozRoot, path.slice(prefix.length)) : join(CONTRACTS_DIR, path)
    return existsSync(file) ? { contents: readFileSync(file, 'utf8') } : { error: `not found: ${path}` }
  }
  const input = { language: 'Solidity', sources, settings: SOLC_SETTINGS }
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports })) as {
    errors?: { severity: string; formattedMessage: string }[]
    contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>>
  }
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error')
  if (errors.length) throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join('\n')}`)

  const byName = new Map(
    Object.values(output.contracts ?? {}).flatMap((contracts) => Object.entries(contracts)),
  )
  const artifacts = {} as Artifacts
  for (const name of CONTRACT_NAMES) {
    const c = byName.get(name)
    if (!c) throw new Error(`solc output has no contract ${name}; is it in test/contracts/?`)
    artifacts[name] = {
      abi: c.abi,
      bytecode: `0x${c.evm.bytecode.object}`,
      deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
    }
  }
  try {
    mkdirSync(ARTIFACTS_DIR, { recursive: true })
    writeFileSync(cacheFile, JSON.stringify(artifacts))
  } catch {
    // A read-only checkout still works; it only compiles every run.
  }
  return artifacts
}

// ---------------------------------------------------------------------------------------------------------------
// Deploying and funding

/** Deploys a compiled contract from the deployer and waits for it; resolves to its address. */
export async function deploy(anvil: Anvil, name: ContractName, args: readonly unknown[] = []): Promise<Address> {
  const { abi, bytecode } = (await compileContracts())[name]
  const hash = await anvil.walletClient.deployContract({ abi, bytecode, args: [...args] })
  const receipt = await anvil.publicClient.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success' || !receipt.contractAddress) throw new Error(`deploying ${name} failed (${hash})`)
  return receipt.contractAddress
}

export const deployToken = (anvil: Anvil, p: { name?: string; symbol?: string; decimals?: number } = {}) =>
  deploy(anvil, 'TestToken', [p.name ?? 'Test USD', p.symbol ?? 'tUSD', p.decimals ?? 6])

/** 6 decimals, sUSD; like USDT, its `approve` changes a non-zero allowance only to zero. */
export const deployStrictApproveToken = (anvil: Anvil) => deploy(anvil, 'TestStrictApproveToken')

/** A 6-decimal token taking 1% of every transfer between holders (see TestToken.sol); `mint` as TestToken's. */
export const deployFeeToken = (anvil: Anvil) => deploy(anvil, 'TestFeeToken')

/** A 6-decimal token its deployer (anvil's first account) can `pause()`, after which every transfer reverts "token paused". */
export const deployPausableToken = (anvil: Anvil) => deploy(anvil, 'TestPausableToken')

export const deployVault = (anvil: Anvil, asset: Address, p: { name?: string; symbol?: string } = {}) =>
  deploy(anvil, 'TestVault', [asset, p.name ?? 'Test Vault Share', p.symbol ?? 'vtUSD'])

/** A vault whose shares have 12 more decimals than its asset. */
export const deployOffsetVault = (anvil: Anvil, asset: Address) => deploy(anvil, 'TestOffsetVault', [asset, 'Offset Vault Share', 'ovtUSD'])

/** A vault spreading deposits over `count` markets of `cap` assets each, so its gas grows with the amount (TestVault.sol). */
export const deployMarketsVault = (anvil: Anvil, asset: Address, count: number, cap: bigint) =>
  deploy(anvil, 'TestMarketsVault', [asset, BigInt(count), cap])

/** A vault with a cap, a pause and a redeem limit, set by `setLimits(cap, redeemLimit, paused)` (TestVault.sol). */
export const deployLimitedVault = (anvil: Anvil, asset: Address) => deploy(anvil, 'TestLimitedVault', [asset])
export const testLimitedVaultAbi = parseAbi(['function setLimits(uint256 cap, uint256 redeemLimit, bool paused)'])

/** An ERC-1271 wallet that accepts signatures by `owner`. */
export const deploySmartWallet = (anvil: Anvil, owner: Address) => deploy(anvil, 'TestSmartWallet', [owner])

export const deploySmartWalletFactory = (anvil: Anvil) => deploy(anvil, 'TestSmartWalletFactory')

/** Waits for a transaction the deployer sent and fails loudly if it reverted. */
export async function confirm(anvil: Anvil, hash: Hash): Promise<void> {
  const receipt = await anvil.publicClient.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error(`transaction ${hash} reverted`)
}

export async function mintToken(anvil: Anvil, token: Address, to: Address, amount: bigint): Promise<void> {
  await confirm(anvil, await anvil.walletClient.writeContract({ address: token, abi: testTokenAbi, functionName: 'mint', args: [to, amount] }))
}

/** Sets an account's native balance outright (anvil_setBalance). */
export async function setNativeBalance(anvil: Anvil, address: Address, value: bigint): Promise<void> {
  await anvil.testClient.setBalance({ address, value })
}

/** A Uniswap-V2-style router (0.3% constant-product pools); swap mode is configured with its address. */
export const deploySwapRouter = (anvil: Anvil) => deploy(anvil, 'TestSwapRouter')

/** Contracts a client may name as a token to hurt others' reads batched with its own (test/contracts/TestHostile.sol). */
export const deployBundler = (anvil: Anvil) => deploy(anvil, 'TestBundler')

export const deployHostile = (anvil: Anvil, kind: 'TestReturnBomb' | 'TestGasBurner' | 'TestEcho') => deploy(anvil, kind)

/** Tokens whose transfer does other than its logs or its answer say (TestHostile.sol); `mint(to, amount)` as TestToken's. */
export const deployDishonestToken = (anvil: Anvil, kind: 'TestLyingFeeToken' | 'TestSwitchedFeeToken' | 'TestIndexedToken' | 'TestFalseToken') => deploy(anvil, kind)

/** Makes zero deposits into a vault as itself, each call padded: `go(vault, n, pad)` (TestHostile.sol). */
export const deployDepositSpammer = (anvil: Anvil) => deploy(anvil, 'TestDepositSpammer')
export const testDepositSpammerAbi = parseAbi(['function go(address vault, uint256 n, uint256 pad)'])

/** A vault-shaped contract over `asset` whose `decimals()` answers 300 (see TestHostile.sol). */
export const deployWideDecimals = (anvil: Anvil, asset: Address) => deploy(anvil, 'TestWideDecimals', [asset])

/**
 * Opens (or deepens) the `tokenA`/`tokenB` pool with the given amounts; resolves to the pair's address. The
 * deployer mints both amounts first, so both tokens must be TestTokens.
 */
export async function createPair(
  anvil: Anvil,
  router: Address,
  tokenA: Address,
  tokenB: Address,
  amountA: bigint,
  amountB: bigint,
): Promise<Address> {
  const write = anvil.walletClient.writeContract
  for (const [token, amount] of [[tokenA, amountA], [tokenB, amountB]] as const) {
    await mintToken(anvil, token, anvil.deployer.address, amount)
    await confirm(anvil, await write({ address: token, abi: erc20Abi, functionName: 'approve', args: [router, amount] }))
  }
  await confirm(
    anvil,
    await write({ address: router, abi: testSwapRouterAbi, functionName: 'addLiquidity', args: [tokenA, tokenB, amountA, amountB] }),
  )
  return anvil.publicClient.readContract({ address: router, abi: testSwapRouterAbi, functionName: 'getPair', args: [tokenA, tokenB] })
}

/** The API's unsigned EVM transaction: what `transactions.build` returns in each step's `transaction`. */
export interface UnsignedEvmTransaction {
  to: string
  data: string
  value: string
  gasLimit: string
  chainId: number
}

/**
 * Signs and sends one built transaction as the user would, with exactly the gas limit the API chose, and waits for
 * it. Resolves to the receipt whatever its status, so a test can assert a revert as well as a success.
 */
export async function sendUnsigned(
  anvil: Anvil,
  account: PrivateKeyAccount | Hex,
  tx: UnsignedEvmTransaction | Record<string, unknown>,
): Promise<TransactionReceipt> {
  const t = tx as UnsignedEvmTransaction
  if (t.chainId !== anvil.chain.id) throw new Error(`transaction is for chain ${t.chainId}, anvil serves ${anvil.chain.id}`)
  const hash = await anvil.walletClient.sendTransaction({
    account: typeof account === 'string' ? privateKeyToAccount(account) : account,
    to: t.to as Address,
    data: t.data as Hex,
    value: BigInt(t.value),
    gas: BigInt(t.gasLimit),
  })
  return anvil.publicClient.waitForTransactionReceipt({ hash })
}

/**
 * An unsigned transaction carried out by a contract wallet (TestSmartWallet): its owner sends `execute`, and the
 * wallet makes the call. The gas is estimated for the outer call: the built `gasLimit` is the inner call's.
 */
export async function sendThroughWallet(anvil: Anvil, owner: PrivateKeyAccount, wallet: Address, tx: UnsignedEvmTransaction | Record<string, unknown>): Promise<TransactionReceipt> {
  const t = tx as UnsignedEvmTransaction
  const hash = await anvil.walletClient.writeContract({
    account: owner,
    address: wallet,
    abi: testSmartWalletAbi,
    functionName: 'execute',
    args: [t.to as Address, BigInt(t.value), t.data as Hex],
  })
  return anvil.publicClient.waitForTransactionReceipt({ hash })
}

/**
 * The `executeSigned` calldata of TestSmartWallet for an unsigned transaction, signed by its owner: what anyone may
 * submit for the wallet, as a Safe relayer or an ERC-4337 bundler does.
 */
export async function signedWalletCall(
  anvil: Anvil,
  owner: PrivateKeyAccount,
  wallet: Address,
  tx: UnsignedEvmTransaction | Record<string, unknown>,
  // The wallet's next by default; a later one for a second call in the same transaction.
  nonceAfter = 0n,
): Promise<Hex> {
  const t = tx as UnsignedEvmTransaction
  const call = [t.to as Address, BigInt(t.value), t.data as Hex] as const
  const nonce = nonceAfter + (await anvil.publicClient.readContract({ address: wallet, abi: testSmartWalletAbi, functionName: 'nonce' }))
  const digest = keccak256(
    encodeAbiParameters(parseAbiParameters('address, uint256, uint256, address, uint256, bytes32'), [wallet, BigInt(anvil.chainId), nonce, call[0], call[1], keccak256(call[2])]),
  )
  const signature = await owner.signMessage({ message: { raw: digest } })
  return encodeFunctionData({ abi: testSmartWalletAbi, functionName: 'executeSigned', args: [...call, signature] })
}

/** A wallet's signed call submitted by `relayer`, with `appended` bytes after the wallet's arguments (which it ignores). */
export async function relayThroughWallet(
  anvil: Anvil,
  p: { owner: PrivateKeyAccount; relayer: PrivateKeyAccount; wallet: Address; tx: UnsignedEvmTransaction | Record<string, unknown>; appended?: Hex },
): Promise<TransactionReceipt> {
  const data = concatHex([await signedWalletCall(anvil, p.owner, p.wallet, p.tx), p.appended ?? '0x'])
  const hash = await anvil.walletClient.sendTransaction({ account: p.relayer, to: p.wallet, data })
  return anvil.publicClient.waitForTransactionReceipt({ hash })
}

/**
 * An RPC in front of `target` that records the JSON-RPC methods of each HTTP request it forwards. Calls `refuse`
 * picks are not forwarded but answered with an error, as a node without that method or parameter answers them;
 * `delayMs` holds each answer (a function: per call).
 */
export function recordingProxy(
  target: string,
  options: { refuse?: (call: { method: string; params: unknown[] }) => boolean; delayMs?: number | ((call: { method: string; params: unknown[] }) => number) } = {},
) {
  type Call = { id?: unknown; method: string; params?: unknown[] }
  const requests: string[][] = []
  const calls: { method: string; params: unknown[] }[] = []
  let [inFlight, maxInFlight] = [0, 0]
  const forward = (body: string) => fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  const answer = async (call: Call) =>
    options.refuse?.({ method: call.method, params: call.params ?? [] })
      ? { jsonrpc: '2.0', id: call.id, error: { code: -32602, message: `${call.method}: not supported by this node` } }
      : (await forward(JSON.stringify(call))).json()
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      inFlight++
      maxInFlight = Math.max(maxInFlight, inFlight)
      try {
        return await forwarded(req)
      } finally {
        inFlight--
      }
    },
  })
  async function forwarded(req: Request) {
    const body = await req.text()
    const parsed = JSON.parse(body) as Call | Call[]
    const batch = Array.isArray(parsed) ? parsed : [parsed]
    requests.push(batch.map((r) => r.method))
    for (const r of batch) calls.push({ method: r.method, params: r.params ?? [] })
    const answered = options.refuse ? Response.json(Array.isArray(parsed) ? await Promise.all(parsed.map(answer)) : await answer(parsed)) : await forward(body)
    // The node has answered; the answer comes back late, as a remote node's may (a batch's as late as its slowest call's).
    const { delayMs } = options
    const delay = typeof delayMs === 'function' ? Math.max(...batch.map((r) => delayMs({ method: r.method, params: r.params ?? [] }))) : delayMs
    if (delay) await Bun.sleep(delay)
    return answered
  }
  return {
    url: `http://127.0.0.1:${server.port}`,
    /** One entry per HTTP request: the methods it carried (several for a JSON-RPC batch). */
    requests,
    /** Every JSON-RPC call, in the order they arrived. */
    calls,
    /** How many JSON-RPC calls of `method` went through. */
    count: (method: string) => requests.flat().filter((m) => m === method).length,
    /** The most HTTP requests it was answering at once. */
    maxInFlight: () => maxInFlight,
    stop: () => server.stop(true),
  }
}

/** A URL where nothing listens: an RPC that is down. */
export async function closedPortUrl(): Promise<string> {
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const url = `http://127.0.0.1:${server.port}`
  await server.stop(true)
  return url
}
