/**
 * Stream tests run against the sample local chain: anvil with tUSD and its vaults, the catalog imported (the
 * direct vault is the streams' target), a treasury configured for chain 31337, and creators funded on chain.
 */
import { expect } from 'bun:test'
import { type Clock, createOrganization, importCatalog, type Tier } from '@earn/core'
import { erc20Abi, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { deploySmartWallet, mintToken, sendUnsigned, setNativeBalance } from '../chains/evm.ts'
import { localCatalog, startLocalChain, type LocalChain } from '../actions/localChain.ts'
import { createHarness, type Harness, type Json } from '../harness.ts'

export interface StreamsEnv {
  chain: LocalChain
  h: Harness
  treasury: Address
  /** A wallet with gas money and `tusd` smallest units of tUSD (or of `token`). */
  creator(amount?: bigint, token?: Address): Promise<PrivateKeyAccount>
  /** A contract wallet (TestSmartWallet) holding `amount` of tUSD (or of `token`), and its owner, who has gas money. */
  walletCreator(amount: bigint, token?: Address): Promise<{ owner: PrivateKeyAccount; wallet: Address }>
  /** Another organization's secret key. */
  organization(tier?: Tier): Promise<string>
  /** A valid token-stream body for `creator`, overridable field by field. */
  tokenBody(creator: PrivateKeyAccount, over?: Json): Json
  pointBody(over?: Json): Json
  /** Sends one built transaction from `wallet`; fails the test if it reverts. */
  send(wallet: PrivateKeyAccount, transaction: Json): Promise<string>
  balanceOf(token: Address, owner: Address): Promise<bigint>
  stop(): Promise<void>
}

const DAY_S = 86_400

export async function startStreamsEnv(options: { clock?: Clock; confirmations?: number } = {}): Promise<StreamsEnv> {
  const chain = await startLocalChain()
  const treasury = privateKeyToAccount(generatePrivateKey()).address
  const h = await createHarness({ clock: options.clock, clients: { evm: chain.evmClient({ confirmations: options.confirmations }) }, env: { STREAM_TREASURIES: `${chain.anvil.chainId}=${treasury}` } })
  const imported = await importCatalog({ store: h.store, ecosystems: h.deps.ecosystems, clock: h.deps.clock }, localCatalog())
  expect(imported.opportunities.map((o) => o.chainFacts)).toEqual(['read', 'read'])
  const nowS = () => Math.floor(h.deps.clock.now() / 1000)
  const creator = async (amount = 0n, token: Address = chain.token) => {
    const wallet = privateKeyToAccount(generatePrivateKey())
    await setNativeBalance(chain.anvil, wallet.address, 10n ** 18n)
    if (amount > 0n) await mintToken(chain.anvil, token, wallet.address, amount)
    return wallet
  }
  return {
    chain,
    h,
    treasury,
    creator,
    async walletCreator(amount, token = chain.token) {
      const owner = await creator()
      const wallet = await deploySmartWallet(chain.anvil, owner.address)
      await mintToken(chain.anvil, token, wallet, amount)
      return { owner, wallet }
    },
    async organization(tier = 'standard') {
      return (await createOrganization({ store: h.store, clock: h.deps.clock }, { name: `Other ${tier} org`, tier })).secretKey
    },
    tokenBody: (creator, over = {}) => ({
      type: 'token',
      chainId: chain.anvil.chainId,
      rewardToken: chain.token,
      creatorAddress: creator.address,
      netBudget: '1000001',
      targetOpportunityId: chain.directId,
      startTime: nowS(),
      endTime: nowS() + 30 * DAY_S,
      ...over,
    }),
    pointBody: (over = {}) => ({
      type: 'point',
      chainId: chain.anvil.chainId,
      pointName: 'Turtle XP',
      netBudget: '5000',
      targetOpportunityId: chain.directId,
      startTime: new Date(h.deps.clock.now()).toISOString(),
      endTime: new Date(h.deps.clock.now() + 7 * DAY_S * 1000).toISOString(),
      ...over,
    }),
    async send(wallet, transaction) {
      const receipt = await sendUnsigned(chain.anvil, wallet, transaction)
      expect(receipt.status).toBe('success')
      return receipt.transactionHash
    },
    balanceOf: (token, owner) => chain.anvil.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [owner] }),
    async stop() {
      await h.close()
      await chain.anvil.stop()
    },
  }
}
