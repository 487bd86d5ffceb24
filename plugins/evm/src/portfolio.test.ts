import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { InvalidAddressError, InvalidArgumentError, UnavailableError } from '@earn/core'
import { createPublicClient, erc4626Abi, http, parseUnits, type Address } from 'viem'
import { closedPortUrl, deploy, deployHostile, mintToken, recordingProxy } from '../../../test/chains/evm.ts'
import { connect, evmClientFromPublicClients, vouch } from './client.ts'
import { startEarnChain, type EarnChain } from './fixtures.ts'
import { recall, remember } from './lru.ts'
import { assets, flows, FLOWS_SETTLED_DEPTH, servesChain } from './portfolio.ts'
import { build } from './transactions.ts'
import { evm } from './index.ts'

let chain: EarnChain
beforeAll(async () => {
  chain = await startEarnChain()
})
afterAll(() => chain?.anvil.stop())

const convertToAssets = (shares: bigint) =>
  chain.anvil.publicClient.readContract({ address: chain.vault, abi: erc4626Abi, functionName: 'convertToAssets', args: [shares] })
const where = () => ({ chainId: chain.anvil.chainId, vaultAddress: chain.vault })

test('remembered settled flows: past the bound the entry used longest ago goes, not them all', () => {
  const map = new Map<string, number>()
  for (const k of ['a', 'b', 'c']) remember(map, k, k.charCodeAt(0), 3)
  // `a` asked again: now the most recent.
  expect(recall(map, 'a')).toBe(97)
  remember(map, 'd', 100, 3)
  expect([...map.keys()]).toEqual(['c', 'a', 'd'])
  expect(recall(map, 'b')).toBeUndefined()
  // Updating one keeps the size.
  remember(map, 'c', 1, 3)
  expect([...map.entries()]).toEqual([['a', 97], ['d', 100], ['c', 1]])
})

describe('balance.assets (anvil)', () => {
  test("is the vault's convertToAssets, and follows the assets the vault holds", async () => {
    const owner = await chain.user(parseUnits('100', 6))
    await chain.sendAll(owner, await build(chain.client(), chain.deposit({ owner, amount: parseUnits('100', 6) })))
    const shares = await chain.read.balance(chain.vault, owner.address)
    const before = await assets(chain.client(), { ...where(), shares })
    expect(before).toBe(await convertToAssets(shares))
    // Yield: assets arrive at the vault without new shares.
    await mintToken(chain.anvil, chain.asset, chain.vault, parseUnits('7', 6))
    const after = await assets(chain.client(), { ...where(), shares })
    expect(after).toBe(await convertToAssets(shares))
    expect(after).toBeGreaterThan(before)
    expect(await assets(chain.client(), { ...where(), shares: 0n })).toBe(0n)
  })

  test('concurrent valuations leave as one Multicall3 eth_call', async () => {
    const proxy = recordingProxy(chain.anvil.url)
    try {
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${proxy.url}` })
      const values = await Promise.all([1n, 10n ** 6n, 10n ** 9n].map((shares) => assets(client, { ...where(), shares })))
      expect(values).toEqual(await Promise.all([1n, 10n ** 6n, 10n ** 9n].map(convertToAssets)))
      // The client asks once whether Multicall3 is at its usual address (anvil's chain definition names none).
      expect(proxy.requests).toEqual([['eth_getCode'], ['eth_call']])
    } finally {
      await proxy.stop()
    }
  })

  test("a vault that fails its whole batch (a return bomb) fails its own valuation only, not the others' beside it", async () => {
    const bomb = await deployHostile(chain.anvil, 'TestReturnBomb')
    const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${chain.anvil.url}` })
    // Both vouched, as the catalog's vaults are once read: one batch, the harder case.
    vouch(client, chain.anvil.chainId, [chain.vault, bomb])
    const [good, bad] = await Promise.allSettled([chain.vault, bomb].map((vaultAddress) => assets(client, { chainId: chain.anvil.chainId, vaultAddress, shares: 10n ** 6n })))
    expect(good?.status === 'fulfilled' && good.value).toBe(await convertToAssets(10n ** 6n))
    expect(bad?.status === 'rejected' && bad.reason).toBeInstanceOf(InvalidArgumentError)
  })

  test('an address that is not a vault is a 400 naming vaultAddress; a malformed one an InvalidAddressError', async () => {
    const e = await assets(chain.client(), { chainId: chain.anvil.chainId, vaultAddress: chain.asset, shares: 1n }).catch((e: unknown) => e)
    expect(e).toBeInstanceOf(InvalidArgumentError)
    expect(e).toMatchObject({ status: 400, context: { vaultAddress: expect.stringContaining('ERC-4626') } })
    await expect(assets(chain.client(), { chainId: chain.anvil.chainId, vaultAddress: '0x12', shares: 1n })).rejects.toBeInstanceOf(InvalidAddressError)
  })
})

describe('balance.flows (anvil)', () => {
  test("sums the wallet's own Deposit and Withdraw events, in assets", async () => {
    const owner = await chain.user(parseUnits('500', 6))
    const wallet = owner.address.toLowerCase()
    expect(await flows(chain.client(), { ...where(), owner: wallet })).toEqual({ deposited: 0n, withdrawn: 0n })

    await chain.sendAll(owner, await build(chain.client(), chain.deposit({ owner, amount: parseUnits('120', 6) })))
    await chain.sendAll(owner, await build(chain.client(), chain.deposit({ owner, amount: parseUnits('30.5', 6) })))
    expect(await flows(chain.client(), { ...where(), owner: wallet })).toEqual({ deposited: parseUnits('150.5', 6), withdrawn: 0n })

    await mintToken(chain.anvil, chain.asset, chain.vault, parseUnits('3', 6))
    const shares = (await chain.read.balance(chain.vault, owner.address)) / 3n
    const held = await chain.read.balance(chain.asset, owner.address)
    const steps = await build(chain.client(), { ...chain.deposit({ owner, amount: shares }), kind: 'withdraw', tokenOut: undefined })
    await chain.sendAll(owner, steps)
    // What the withdrawal paid out is what the wallet's asset balance grew by.
    const received = (await chain.read.balance(chain.asset, owner.address)) - held
    expect(received).toBeGreaterThan(0n)
    expect(await flows(chain.client(), { ...where(), owner: wallet.toUpperCase().replace('0X', '0x') })).toEqual({
      deposited: parseUnits('150.5', 6),
      withdrawn: received,
    })
  })

  test("another wallet's deposits do not count", async () => {
    const depositor = await chain.user(parseUnits('10', 6))
    await chain.sendAll(depositor, await build(chain.client(), chain.deposit({ owner: depositor, amount: parseUnits('10', 6) })))
    const bystander = (await chain.user()).address.toLowerCase() as Address
    expect(await flows(chain.client(), { ...where(), owner: depositor.address.toLowerCase() })).toEqual({ deposited: parseUnits('10', 6), withdrawn: 0n })
    expect(await flows(chain.client(), { ...where(), owner: bystander })).toEqual({ deposited: 0n, withdrawn: 0n })
  })

  test('the scan starts at fromBlock, inclusive: events before it are not history, events from it on are', async () => {
    const owner = await chain.user(parseUnits('20', 6))
    const wallet = owner.address.toLowerCase()
    const first = await chain.sendAll(owner, await build(chain.client(), chain.deposit({ owner, amount: parseUnits('5', 6) })))
    const firstBlock = Number((await chain.anvil.publicClient.getTransactionReceipt({ hash: first.at(-1)! })).blockNumber)
    await chain.sendAll(owner, await build(chain.client(), chain.deposit({ owner, amount: parseUnits('7', 6) })))
    expect(await flows(chain.client(), { ...where(), owner: wallet })).toEqual({ deposited: parseUnits('12', 6), withdrawn: 0n })
    expect(await flows(chain.client(), { ...where(), owner: wallet, fromBlock: firstBlock })).toEqual({ deposited: parseUnits('12', 6), withdrawn: 0n })
    expect(await flows(chain.client(), { ...where(), owner: wallet, fromBlock: firstBlock + 1 })).toEqual({ deposited: parseUnits('7', 6), withdrawn: 0n })
  })

  test('history is walked in ranges of at most EVM_LOGS_BLOCK_RANGE blocks, covering fromBlock to the head once', async () => {
    const owner = await chain.user(parseUnits('30', 6))
    const wallet = owner.address.toLowerCase()
    const fromBlock = Number(await chain.anvil.publicClient.getBlockNumber({ cacheTime: 0 }))
    for (const amount of ['4', '5', '6']) {
      await chain.sendAll(owner, await build(chain.client(), chain.deposit({ owner, amount: parseUnits(amount, 6) })))
      await chain.anvil.testClient.mine({ blocks: 4 })
    }
    const proxy = recordingProxy(chain.anvil.url)
    try {
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${proxy.url}`, EVM_LOGS_BLOCK_RANGE: '3' })
      expect(await flows(client, { ...where(), owner: wallet, fromBlock })).toEqual({ deposited: parseUnits('15', 6), withdrawn: 0n })
      const head = await chain.anvil.publicClient.getBlockNumber({ cacheTime: 0 })
      const ranges = proxy.calls
        .filter((c) => c.method === 'eth_getLogs')
        .map((c) => c.params[0] as { fromBlock: string; toBlock: string; topics: string[] })
      const events = new Set(ranges.map((r) => r.topics[0]))
      expect(events.size).toBe(2) // Deposit and Withdraw
      for (const event of events) {
        const mine = ranges.filter((r) => r.topics[0] === event).map((r) => [BigInt(r.fromBlock), BigInt(r.toBlock)] as const)
        mine.sort((x, y) => (x[0] < y[0] ? -1 : 1))
        expect(mine[0]![0]).toBe(BigInt(fromBlock))
        expect(mine.at(-1)![1]).toBe(head)
        for (const [i, [a, b]] of mine.entries()) {
          expect(b - a).toBeLessThan(3n)
          if (i > 0) expect(a).toBe(mine[i - 1]![1] + 1n)
        }
      }
    } finally {
      await proxy.stop()
    }
  })

  test("one wallet's flows in many vaults, asked at once, are read together: two eth_getLogs a range, not two a range per vault", async () => {
    const owner = await chain.user(parseUnits('40', 6))
    const wallet = owner.address.toLowerCase()
    const fromBlock = Number(await chain.anvil.publicClient.getBlockNumber({ cacheTime: 0 }))
    const vaults = [chain.vault]
    // One at a time: the deployer's nonces.
    for (const n of [1, 2, 3, 4]) vaults.push(await deploy(chain.anvil, 'TestVault', [chain.asset, `Vault ${n}`, `v${n}`]))
    // Deposits into three of the five, one of them twice; vault 3 only from a later block (its eventsFromBlock).
    const into = async (vault: Address, amount: string) =>
      chain.sendAll(owner, await build(chain.client(), { ...chain.deposit({ owner, amount: parseUnits(amount, 6) }), opportunity: { ...chain.opportunity, vaultAddress: vault } }))
    await into(vaults[0]!, '1')
    await into(vaults[1]!, '2')
    await into(vaults[3]!, '3')
    const later = Number(await chain.anvil.publicClient.getBlockNumber({ cacheTime: 0 })) + 1
    await into(vaults[3]!, '4')
    const proxy = recordingProxy(chain.anvil.url)
    try {
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${proxy.url}`, EVM_LOGS_BLOCK_RANGE: '5' })
      const answers = await Promise.all(
        vaults.map((vaultAddress, i) => flows(client, { chainId: chain.anvil.chainId, vaultAddress, owner: wallet, fromBlock: i === 3 ? later : fromBlock })),
      )
      expect(answers.map((a) => a?.deposited)).toEqual([parseUnits('1', 6), parseUnits('2', 6), 0n, parseUnits('4', 6), 0n])
      const head = await chain.anvil.publicClient.getBlockNumber({ cacheTime: 0 })
      const getLogs = proxy.calls.filter((c) => c.method === 'eth_getLogs').map((c) => c.params[0] as { address: string[] })
      const ranges = Math.ceil(Number(head - BigInt(fromBlock) + 1n) / 5)
      expect(getLogs.length).toBe(2 * ranges)
      for (const call of getLogs) expect([...call.address].sort()).toEqual([...vaults].map((v) => v.toLowerCase()).sort())
    } finally {
      await proxy.stop()
    }
  })

  test("servesChain: an RPC that serves another chain is refused (503); the right one passes", async () => {
    const misrouted = connect({ EVM_RPC_URLS: `5=${chain.anvil.url}` })
    const e = await servesChain(misrouted, '5').catch((e: unknown) => e)
    expect(e).toBeInstanceOf(UnavailableError)
    expect((e as UnavailableError).message).toBe(`the RPC configured for EVM chain 5 serves chain ${chain.anvil.chainId}`)
    expect(await servesChain(chain.client(), chain.anvil.chainId)).toBeUndefined()
  })

  /** A wallet's deposit of 8 tUSD from `fromBlock`, then `blocks` mined after it. */
  const depositedLongAgo = async (blocks: number) => {
    const owner = await chain.user(parseUnits('30', 6))
    const fromBlock = Number(await chain.anvil.publicClient.getBlockNumber({ cacheTime: 0 }))
    await chain.sendAll(owner, await build(chain.client(), chain.deposit({ owner, amount: parseUnits('8', 6) })))
    await chain.anvil.testClient.mine({ blocks })
    return { owner, wallet: owner.address.toLowerCase(), fromBlock }
  }

  test('settled history is scanned once; later answers scan only what came after it', async () => {
    const { owner, wallet, fromBlock } = await depositedLongAgo(Number(FLOWS_SETTLED_DEPTH) + 10)
    const proxy = recordingProxy(chain.anvil.url)
    try {
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${proxy.url}` })
      const getLogsFrom = () => proxy.calls.filter((c) => c.method === 'eth_getLogs').map((c) => BigInt((c.params[0] as { fromBlock: string }).fromBlock))
      expect(await flows(client, { ...where(), owner: wallet, fromBlock })).toEqual({ deposited: parseUnits('8', 6), withdrawn: 0n })
      const settledTo = (await chain.anvil.publicClient.getBlockNumber({ cacheTime: 0 })) - FLOWS_SETTLED_DEPTH
      expect(getLogsFrom()).toContain(BigInt(fromBlock))
      proxy.calls.length = 0

      await chain.sendAll(owner, await build(chain.client(), chain.deposit({ owner, amount: parseUnits('2', 6) })))
      expect(await flows(client, { ...where(), owner: wallet, fromBlock })).toEqual({ deposited: parseUnits('10', 6), withdrawn: 0n })
      // The second answer asked nothing of the blocks it had settled.
      expect(getLogsFrom().length).toBeGreaterThan(0)
      for (const from of getLogsFrom()) expect(from).toBeGreaterThan(settledTo)
    } finally {
      await proxy.stop()
    }
  })

  test("a long settled history is read a budget's worth an answer: flows not known yet (null) until it is all read, each answer reading on from the last", async () => {
    const { wallet, fromBlock } = await depositedLongAgo(Number(FLOWS_SETTLED_DEPTH) + 200)
    const proxy = recordingProxy(chain.anvil.url)
    try {
      // No time at all: each answer reads one round of four 10-block ranges of the ~200 settled blocks.
      const client = evmClientFromPublicClients({ [chain.anvil.chainId]: createPublicClient({ transport: http(proxy.url) }) }, { logsBlockRange: 10n, flowsScanMs: 0 })
      const answers: unknown[] = []
      do answers.push(await flows(client, { ...where(), owner: wallet, fromBlock }))
      while (answers.at(-1) === null && answers.length < 30)
      expect(answers.length).toBeGreaterThan(4)
      expect(answers.slice(0, -1).every((a) => a === null)).toBe(true)
      expect(answers.at(-1)).toEqual({ deposited: parseUnits('8', 6), withdrawn: 0n })
      // Every settled range was asked once for each event: no answer read again what an earlier one had read.
      const settledTo = (await chain.anvil.publicClient.getBlockNumber({ cacheTime: 0 })) - FLOWS_SETTLED_DEPTH
      const froms = proxy.calls.filter((c) => c.method === 'eth_getLogs').map((c) => BigInt((c.params[0] as { fromBlock: string }).fromBlock)).filter((f) => f <= settledTo)
      const asked = new Map<bigint, number>()
      for (const f of froms) asked.set(f, (asked.get(f) ?? 0) + 1)
      expect([...asked.values()].every((n) => n === 2)).toBe(true)
      expect(asked.size).toBeGreaterThan(16)
      // With the default budget, one answer reads it all.
      expect(await flows(chain.client(), { ...where(), owner: wallet, fromBlock })).toEqual({ deposited: parseUnits('8', 6), withdrawn: 0n })
    } finally {
      await proxy.stop()
    }
  })

  test("the walk of a long history takes at most a quarter of the capability's budget: a short budget answers null, not 503", async () => {
    const { wallet, fromBlock } = await depositedLongAgo(Number(FLOWS_SETTLED_DEPTH) + 200)
    // Each answer 50 ms late: ~50 rounds of 1-block ranges would take ~2.5 s, and the budget is 1.2 s.
    const proxy = recordingProxy(chain.anvil.url, { delayMs: 50 })
    try {
      const client = evmClientFromPublicClients({ [chain.anvil.chainId]: createPublicClient({ transport: http(proxy.url) }) }, { logsBlockRange: 1n, budgetMs: 1_200 })
      const started = performance.now()
      expect(await evm.balance.flows(client, { ...where(), owner: wallet, fromBlock })).toBeNull()
      expect(performance.now() - started).toBeLessThan(1_200)
      expect(proxy.count('eth_getLogs')).toBeGreaterThan(0)
    } finally {
      await proxy.stop()
    }
  })

  test("a vault caught up stays known while another of the wallet's is still walking a long history", async () => {
    const { owner, wallet } = await depositedLongAgo(Number(FLOWS_SETTLED_DEPTH) + 10)
    // The second vault's history is read from block 0; the first's only from just before the wallet's deposit.
    const recent = Number(await chain.anvil.publicClient.getBlockNumber({ cacheTime: 0 })) - Number(FLOWS_SETTLED_DEPTH) - 12
    const other = await deploy(chain.anvil, 'TestVault', [chain.asset, 'Other', 'oth'])
    await chain.sendAll(owner, await build(chain.client(), { ...chain.deposit({ owner, amount: parseUnits('3', 6) }), opportunity: { ...chain.opportunity, vaultAddress: other } }))
    await chain.anvil.testClient.mine({ blocks: Number(FLOWS_SETTLED_DEPTH) + 2 })
    const client = evmClientFromPublicClients({ [chain.anvil.chainId]: chain.anvil.publicClient }, { logsBlockRange: 10n, flowsScanMs: 0 })
    const ask = () =>
      Promise.all([flows(client, { ...where(), owner: wallet, fromBlock: recent }), flows(client, { chainId: chain.anvil.chainId, vaultAddress: other, owner: wallet, fromBlock: 0 })])
    // The first vault alone, until it is known.
    let first = await flows(client, { ...where(), owner: wallet, fromBlock: recent })
    for (let i = 0; i < 10 && first === null; i++) first = await flows(client, { ...where(), owner: wallet, fromBlock: recent })
    expect(first).toEqual({ deposited: parseUnits('8', 6), withdrawn: 0n })
    // Then both at once, a few blocks later: the first stays known while the second walks from block 0.
    await chain.anvil.testClient.mine({ blocks: 3 })
    const [known, walking] = await ask()
    expect(known).toEqual({ deposited: parseUnits('8', 6), withdrawn: 0n })
    expect(walking).toBeNull()
  })

  test('a failure in the middle of a long history keeps the rounds read before it: the next answer reads on from there', async () => {
    const { wallet, fromBlock } = await depositedLongAgo(Number(FLOWS_SETTLED_DEPTH) + 200)
    const settledTo = (await chain.anvil.publicClient.getBlockNumber({ cacheTime: 0 })) - FLOWS_SETTLED_DEPTH
    // Ranges from here on are refused, once.
    let failFrom: bigint | undefined = settledTo - 50n
    const proxy = recordingProxy(chain.anvil.url, {
      refuse: (c) => c.method === 'eth_getLogs' && failFrom !== undefined && BigInt((c.params[0] as { fromBlock: string }).fromBlock) >= failFrom,
    })
    try {
      const client = evmClientFromPublicClients({ [chain.anvil.chainId]: createPublicClient({ transport: http(proxy.url, { retryCount: 0 }) }) }, { logsBlockRange: 10n })
      expect(await flows(client, { ...where(), owner: wallet, fromBlock }).catch((e: unknown) => e)).toBeInstanceOf(UnavailableError)
      failFrom = undefined
      proxy.calls.length = 0
      expect(await flows(client, { ...where(), owner: wallet, fromBlock })).toEqual({ deposited: parseUnits('8', 6), withdrawn: 0n })
      // Nothing before the failed round was asked again.
      const froms = proxy.calls.filter((c) => c.method === 'eth_getLogs').map((c) => BigInt((c.params[0] as { fromBlock: string }).fromBlock))
      expect(froms.length).toBeGreaterThan(0)
      expect(froms.every((f) => f >= settledTo - 50n - 40n)).toBe(true)
    } finally {
      await proxy.stop()
    }
  })

  test('where the finalized block lags further, settled history stops there', async () => {
    // Anvil puts `finalized` two epochs behind the head: 200 blocks with 100-slot epochs, more than the depth.
    const lagging = await startEarnChain({ anvilArgs: ['--slots-in-an-epoch', '100'] })
    try {
      const owner = await lagging.user(parseUnits('30', 6))
      const at = { chainId: lagging.anvil.chainId, vaultAddress: lagging.vault, owner: owner.address.toLowerCase() }
      await lagging.sendAll(owner, await build(lagging.client(), lagging.deposit({ owner, amount: parseUnits('6', 6) })))
      await lagging.anvil.testClient.mine({ blocks: 300 })
      const proxy = recordingProxy(lagging.anvil.url)
      try {
        const client = connect({ EVM_RPC_URLS: `${lagging.anvil.chainId}=${proxy.url}` })
        expect(await flows(client, at)).toEqual({ deposited: parseUnits('6', 6), withdrawn: 0n })
        const head = await lagging.anvil.publicClient.getBlockNumber({ cacheTime: 0 })
        const finalized = (await lagging.anvil.publicClient.getBlock({ blockTag: 'finalized' })).number
        expect(finalized).toBeLessThan(head - FLOWS_SETTLED_DEPTH)
        const key = `${at.chainId}|${lagging.vault.toLowerCase()}|${at.owner}|0`
        expect(client.state.settledFlows.get(key)?.through).toBe(finalized)
        proxy.calls.length = 0
        // The next answer scans again everything after the finalized block, the depth notwithstanding.
        expect(await flows(client, at)).toEqual({ deposited: parseUnits('6', 6), withdrawn: 0n })
        const from = proxy.calls.filter((c) => c.method === 'eth_getLogs').map((c) => BigInt((c.params[0] as { fromBlock: string }).fromBlock))
        expect(from).toContain(finalized + 1n)
      } finally {
        await proxy.stop()
      }
    } finally {
      await lagging.anvil.stop()
    }
  })

  test('a node that does not know the finalized tag leaves the depth to decide what is settled', async () => {
    const owner = await chain.user(parseUnits('30', 6))
    const at = { ...where(), owner: owner.address.toLowerCase() }
    await chain.sendAll(owner, await build(chain.client(), chain.deposit({ owner, amount: parseUnits('9', 6) })))
    await chain.anvil.testClient.mine({ blocks: Number(FLOWS_SETTLED_DEPTH) + 10 })
    // Stands in for a node from before the merge (none runs here): it refuses the `finalized` tag.
    const proxy = recordingProxy(chain.anvil.url, { refuse: (c) => c.method === 'eth_getBlockByNumber' && c.params[0] === 'finalized' })
    try {
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${proxy.url}` })
      expect(await flows(client, at)).toEqual({ deposited: parseUnits('9', 6), withdrawn: 0n })
      expect(proxy.count('eth_getBlockByNumber')).toBe(1)
      const head = await chain.anvil.publicClient.getBlockNumber({ cacheTime: 0 })
      expect(client.state.settledFlows.get(`${at.chainId}|${chain.vault.toLowerCase()}|${at.owner}|0`)?.through).toBe(head - FLOWS_SETTLED_DEPTH)
    } finally {
      await proxy.stop()
    }
  })

  test('recent history is read afresh each time: a deposit a reorganisation removed no longer counts', async () => {
    const owner = await chain.user(parseUnits('30', 6))
    const wallet = owner.address.toLowerCase()
    const client = chain.client()
    await chain.sendAll(owner, await build(client, chain.deposit({ owner, amount: parseUnits('3', 6) })))
    expect(await flows(client, { ...where(), owner: wallet })).toEqual({ deposited: parseUnits('3', 6), withdrawn: 0n })
    const snapshot = await chain.anvil.testClient.snapshot()
    await chain.sendAll(owner, await build(client, chain.deposit({ owner, amount: parseUnits('4', 6) })))
    expect(await flows(client, { ...where(), owner: wallet })).toEqual({ deposited: parseUnits('7', 6), withdrawn: 0n })
    await chain.anvil.testClient.revert({ id: snapshot })
    expect(await flows(client, { ...where(), owner: wallet })).toEqual({ deposited: parseUnits('3', 6), withdrawn: 0n })
  })

  test('a fromBlock beyond the head has no history yet', async () => {
    const owner = (await chain.user()).address.toLowerCase()
    const head = Number(await chain.anvil.publicClient.getBlockNumber({ cacheTime: 0 }))
    expect(await flows(chain.client(), { ...where(), owner, fromBlock: head + 1000 })).toEqual({ deposited: 0n, withdrawn: 0n })
  })

  test('EVM_LOGS_BLOCK_RANGE must be a positive whole number of blocks', () => {
    for (const bad of ['0', '-5', '1.5', 'many', '99999999999'])
      expect(() => connect({ EVM_RPC_URLS: '', EVM_LOGS_BLOCK_RANGE: bad })).toThrow('EVM_LOGS_BLOCK_RANGE')
    expect(connect({ EVM_LOGS_BLOCK_RANGE: ' 2000 ' }).logsBlockRange).toBe(2000n)
    expect(connect({}).logsBlockRange).toBe(10_000n)
  })

  test('a chain that is down is a 503 for both reads', async () => {
    const down = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${await closedPortUrl()}` })
    const owner = (await chain.user()).address.toLowerCase()
    await expect(flows(down, { ...where(), owner })).rejects.toBeInstanceOf(UnavailableError)
    await expect(assets(down, { ...where(), shares: 5n })).rejects.toBeInstanceOf(UnavailableError)
  })

  test('a chain without an RPC is a 400 naming the chain', async () => {
    const owner = (await chain.user()).address.toLowerCase()
    const e = await flows(chain.client(), { chainId: '8453', vaultAddress: chain.vault, owner }).catch((e: unknown) => e)
    expect(e).toMatchObject({ status: 400, context: { chainId: expect.stringContaining('8453') } })
  })
})
