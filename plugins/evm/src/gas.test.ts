import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { parseUnits } from 'viem'
import type { PrivateKeyAccount } from 'viem/accounts'
import { deployMarketsVault, deployOffsetVault, mintToken } from '../../../test/chains/evm.ts'
import { startEarnChain, type EarnChain } from './fixtures.ts'
import { connect } from './client.ts'
import { DEFAULT_GAS, MAX_MEASURED, withHeadroom } from './gas.ts'
import { build } from './transactions.ts'

/** An RPC in front of anvil counting what it is asked; it may refuse eth_simulateV1 or answer it late. */
function rpcProxy(chain: EarnChain, options: { refuseSimulate?: boolean; simulateDelayMs?: number } = {}) {
  const methods: string[] = []
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const body = await req.text()
      const parsed = JSON.parse(body) as { id: number; method: string } | { id: number; method: string }[]
      const list = Array.isArray(parsed) ? parsed : [parsed]
      methods.push(...list.map((r) => r.method))
      const simulates = list.some((r) => r.method === 'eth_simulateV1')
      if (simulates && options.refuseSimulate) {
        const refuse = (r: { id: number }) => ({ jsonrpc: '2.0', id: r.id, error: { code: -32601, message: 'the method eth_simulateV1 does not exist' } })
        return Response.json(Array.isArray(parsed) ? list.map(refuse) : refuse(list[0]!))
      }
      if (simulates && options.simulateDelayMs) await Bun.sleep(options.simulateDelayMs)
      return fetch(chain.anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, methods, stop: () => server.stop(true) }
}

describe('withHeadroom', () => {
  test('adds 20%, and never less than 50 000 gas', () => {
    expect(withHeadroom(46_000n)).toBe(96_000n)
    expect(withHeadroom(250_000n)).toBe(300_000n)
    expect(withHeadroom(1_000_000n)).toBe(1_200_000n)
  })
})

describe('gas where the RPC cannot simulate', () => {
  let chain: EarnChain
  beforeAll(async () => {
    chain = await startEarnChain()
  })
  afterAll(() => chain?.anvil.stop())

  /** An RPC in front of anvil without eth_simulateV1 (as many providers still are), counting what it is asked. */
  const withoutSimulate = () => rpcProxy(chain, { refuseSimulate: true })

  test('steps that can run alone are estimated, a deposit behind its approve takes the default, once', async () => {
    const rpc = withoutSimulate()
    try {
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${rpc.url}` })
      const owner = await chain.user(parseUnits('2', 6))
      const steps = await build(client, chain.deposit({ owner, amount: parseUnits('1', 6) }))
      expect(steps.map((s) => [s.type, s.metadata?.gasLimitSource])).toEqual([
        ['approve', 'estimated'],
        ['deposit', 'default'],
      ])
      expect((steps[1]!.transaction as { gasLimit: string }).gasLimit).toBe(DEFAULT_GAS.deposit.toString())
      expect(rpc.methods.filter((m) => m === 'eth_estimateGas')).toHaveLength(1)

      // The default is kept: no build asks again, and the default does carry the deposit.
      const asked = rpc.methods.length
      const again = await build(client, chain.deposit({ owner, amount: parseUnits('1', 6) }))
      expect(again.map((s) => s.metadata?.gasLimitSource)).toEqual(['measured-once', 'default'])
      expect(rpc.methods.slice(asked).filter((m) => m !== 'eth_call')).toEqual([])
      await chain.sendAll(owner, again)
      expect(await chain.read.balance(chain.vault, owner.address)).toBeGreaterThan(0n)
    } finally {
      await rpc.stop()
    }
  })

  test('a deposit that later runs alone (its allowance in place) is estimated then, and that measure serves builds behind an approve', async () => {
    const rpc = withoutSimulate()
    try {
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${rpc.url}` })
      const first = await chain.user(parseUnits('2', 6))
      const [approve, behind] = await build(client, chain.deposit({ owner: first, amount: parseUnits('1', 6) }))
      expect(behind!.metadata?.gasLimitSource).toBe('default')
      // Only the approve is mined: the wallet's next deposit can run on its own.
      await chain.sendAll(first, [approve!])
      const alone = await build(client, chain.deposit({ owner: first, amount: parseUnits('1', 6) }))
      expect(alone.map((s) => [s.type, s.metadata?.gasLimitSource])).toEqual([['deposit', 'estimated']])
      // eth_simulateV1 was refused once, and not asked again.
      expect(rpc.methods.filter((m) => m === 'eth_simulateV1')).toHaveLength(1)
      const measured = (alone[0]!.transaction as { gasLimit: string }).gasLimit

      const next = await chain.user(parseUnits('1', 6))
      const steps = await build(client, chain.deposit({ owner: next, amount: parseUnits('1', 6) }))
      expect(steps.map((s) => [s.type, s.metadata?.gasLimitSource])).toEqual([
        ['approve', 'measured-once'],
        ['deposit', 'measured-once'],
      ])
      expect((steps[1]!.transaction as { gasLimit: string }).gasLimit).toBe(measured)
      await chain.sendAll(next, steps)
      expect(await chain.read.balance(chain.vault, next.address)).toBeGreaterThan(0n)

      // More than the measure's amount, behind an approve: not measurable here, so the larger of the default and it.
      const larger = await build(client, chain.deposit({ owner: await chain.user(parseUnits('2', 6)), amount: parseUnits('2', 6) }))
      expect(larger.map((s) => [s.type, s.metadata?.gasLimitSource])).toEqual([
        ['approve', 'measured-once'],
        ['deposit', 'default'],
      ])
      const most = BigInt(measured) > DEFAULT_GAS.deposit ? BigInt(measured) : DEFAULT_GAS.deposit
      expect((larger[1]!.transaction as { gasLimit: string }).gasLimit).toBe(most.toString())
    } finally {
      await rpc.stop()
    }
  })

  test('a withdraw, which runs alone, is estimated', async () => {
    const rpc = withoutSimulate()
    try {
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${rpc.url}` })
      const owner = await chain.user(parseUnits('1', 6))
      await chain.sendAll(owner, await build(chain.client(), chain.deposit({ owner, amount: parseUnits('1', 6) })))
      const shares = await chain.read.balance(chain.vault, owner.address)
      const [step] = await build(client, { ...chain.deposit({ owner, amount: shares }), kind: 'withdraw', tokenOut: undefined })
      expect(step!.metadata?.gasLimitSource).toBe('estimated')
      await chain.sendAll(owner, [step!])
      expect(await chain.read.balance(chain.vault, owner.address)).toBe(0n)
    } finally {
      await rpc.stop()
    }
  })
})

describe('gas where the simulated sequence fails for this request alone', () => {
  let chain: EarnChain
  beforeAll(async () => {
    chain = await startEarnChain()
  })
  afterAll(() => chain?.anvil.stop())

  test("it fixes no default on the opportunity: the next wallet's build measures the steps, and its deposit mines", async () => {
    const client = chain.client()
    // A wallet holding none of the token: its transferFrom reverts, so the sequence fails after the approve.
    const empty = await chain.user(0n)
    const failed = await build(client, chain.deposit({ owner: empty, amount: parseUnits('1', 6) }))
    expect(failed.map((s) => [s.type, s.metadata?.gasLimitSource])).toEqual([
      ['approve', 'estimated'],
      ['deposit', 'default'],
    ])
    const owner = await chain.user(parseUnits('2', 6))
    const steps = await build(client, chain.deposit({ owner, amount: parseUnits('1', 6) }))
    expect(steps.map((s) => [s.type, s.metadata?.gasLimitSource])).toEqual([
      ['approve', 'measured-once'],
      ['deposit', 'estimated'],
    ])
    await chain.sendAll(owner, steps)
    expect(await chain.read.balance(chain.vault, owner.address)).toBeGreaterThan(0n)
    // Measured now: later builds reuse it.
    const later = await build(client, chain.deposit({ owner: await chain.user(parseUnits('1', 6)), amount: parseUnits('1', 6) }))
    expect(later.map((s) => s.metadata?.gasLimitSource)).toEqual(['measured-once', 'measured-once'])
  })

  test("a build that joined such a failed measure measures its own sequence, not the default, and its deposit mines", async () => {
    // A vault of its own, so no measure exists yet for it.
    const vault = await deployOffsetVault(chain.anvil, chain.asset)
    const client = chain.client()
    const empty = await chain.user(0n)
    const owner = await chain.user(parseUnits('2', 6))
    const deposit = (who: typeof owner) => {
      const p = chain.deposit({ owner: who, amount: parseUnits('1', 6) })
      return { ...p, opportunity: { ...p.opportunity, id: 'offset', vaultAddress: vault.toLowerCase(), receiptToken: vault.toLowerCase() } }
    }
    // At once: the empty wallet's build starts the measure, the funded one joins it.
    const [failed, honest] = await Promise.all([build(client, deposit(empty)), build(client, deposit(owner))])
    expect(failed.map((s) => [s.type, s.metadata?.gasLimitSource])[1]).toEqual(['deposit', 'default'])
    expect(honest.map((s) => [s.type, s.metadata?.gasLimitSource])[1]).toEqual(['deposit', 'estimated'])
    await chain.sendAll(owner, honest)
    expect(await chain.read.balance(vault, owner.address)).toBeGreaterThan(0n)
  })

  test('behind two such wallets, an honest build still measures its own sequence rather than take the default', async () => {
    const vault = await deployOffsetVault(chain.anvil, chain.asset)
    const client = chain.client()
    const [empty, alsoEmpty] = [await chain.user(0n), await chain.user(0n)]
    const owner = await chain.user(parseUnits('2', 6))
    const deposit = (who: typeof owner) => {
      const p = chain.deposit({ owner: who, amount: parseUnits('1', 6) })
      return { ...p, opportunity: { ...p.opportunity, id: 'offset-2', vaultAddress: vault.toLowerCase(), receiptToken: vault.toLowerCase() } }
    }
    // The first empty wallet's measure fails, the second's (joined by the honest build) too; the honest one's holds.
    const built = await Promise.all([empty, alsoEmpty, owner].map((who) => build(client, deposit(who))))
    expect(built.map((steps) => steps[1]!.metadata?.gasLimitSource)).toEqual(['default', 'default', 'estimated'])
    await chain.sendAll(owner, built[2]!)
    expect(await chain.read.balance(vault, owner.address)).toBeGreaterThan(0n)
  })
})

describe('a vault whose gas grows with the amount', () => {
  let chain: EarnChain
  beforeAll(async () => {
    chain = await startEarnChain()
  })
  afterAll(() => chain?.anvil.stop())

  // Eight markets of 10 tUSD: a 1 tUSD deposit reaches one, a 70 tUSD deposit seven (as MetaMorpho's supply queue).
  const marketsVault = async () => {
    const vault = await deployMarketsVault(chain.anvil, chain.asset, 8, parseUnits('10', 6))
    const target = { ...chain.opportunity, id: `markets-${vault}`, vaultAddress: vault.toLowerCase(), receiptToken: vault.toLowerCase() }
    const deposit = (owner: PrivateKeyAccount, amount: bigint) => ({ ...chain.deposit({ owner, amount }), opportunity: target })
    const withdraw = (owner: PrivateKeyAccount, shares: bigint) => ({ ...deposit(owner, shares), kind: 'withdraw' as const, tokenOut: undefined })
    return { vault, deposit, withdraw }
  }
  const sources = (steps: { type: string; metadata?: Record<string, unknown> }[]) => steps.map((s) => [s.type, s.metadata?.gasLimitSource])

  test("a deposit larger than the one measured is measured again, and mines on its limit; smaller ones share the larger's", async () => {
    const client = chain.client()
    const m = await marketsVault()
    const small = await chain.user(parseUnits('1', 6))
    await chain.sendAll(small, await build(client, m.deposit(small, parseUnits('1', 6))))
    const large = await chain.user(parseUnits('70', 6))
    const steps = await build(client, m.deposit(large, parseUnits('70', 6)))
    // Before: 'measured-once' from the 1 tUSD measure, a limit of 279 675 that the deposit (~330 000) ran out of.
    expect(sources(steps)).toEqual([
      ['approve', 'measured-once'],
      ['deposit', 'estimated'],
    ])
    await chain.sendAll(large, steps)
    expect(await chain.read.balance(m.vault, large.address)).toBeGreaterThan(0n)
    const middle = await chain.user(parseUnits('5', 6))
    expect(sources(await build(client, m.deposit(middle, parseUnits('5', 6))))).toEqual([
      ['approve', 'measured-once'],
      ['deposit', 'measured-once'],
    ])
  })

  test('a redeem of a whole large balance after a small one was measured mines on its limit', async () => {
    const client = chain.client()
    const m = await marketsVault()
    const [small, large] = [await chain.user(parseUnits('1', 6)), await chain.user(parseUnits('75', 6))]
    await chain.sendAll(small, await build(client, m.deposit(small, parseUnits('1', 6))))
    await chain.sendAll(large, await build(client, m.deposit(large, parseUnits('75', 6))))
    await chain.sendAll(small, await build(client, m.withdraw(small, (await chain.read.balance(m.vault, small.address)) / 2n)))
    const steps = await build(client, m.withdraw(large, await chain.read.balance(m.vault, large.address)))
    expect(sources(steps)).toEqual([['withdraw', 'estimated']])
    await chain.sendAll(large, steps)
    expect(await chain.read.balance(m.vault, large.address)).toBe(0n)
    expect(await chain.read.balance(chain.asset, large.address)).toBe(parseUnits('75', 6))
  })

  test("whole-balance redeems, largest first: the smaller ones pull from the markets the largest's measure never reached", async () => {
    const client = chain.client()
    const m = await marketsVault()
    // 160 in: the eight markets full (80), 80 idle in the vault. The first redeem is paid from idle assets alone.
    const holders = [await chain.user(parseUnits('80', 6)), await chain.user(parseUnits('40', 6)), await chain.user(parseUnits('40', 6))]
    for (const [i, h] of [2, 1, 0].map((i) => [i, holders[i]!] as const)) await chain.sendAll(h, await build(client, m.deposit(h, parseUnits(String([80, 40, 40][i]), 6))))
    for (const h of holders) {
      const steps = await build(client, m.withdraw(h, await chain.read.balance(m.vault, h.address)))
      await chain.sendAll(h, steps)
      expect(await chain.read.balance(m.vault, h.address)).toBe(0n)
    }
  })

  test('a wave of ever larger builds measures at once, not one after another', async () => {
    const rpc = rpcProxy(chain, { simulateDelayMs: 200 })
    try {
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${rpc.url}` })
      const m = await marketsVault()
      const owners: PrivateKeyAccount[] = []
      for (let n = 1; n <= 8; n++) owners.push(await chain.user(parseUnits(String(n), 6)))
      const started = performance.now()
      const built = await Promise.all(owners.map((o, i) => build(client, m.deposit(o, parseUnits(String(i + 1), 6)))))
      // One after another, eight 200 ms measures took 1.6 s.
      expect(performance.now() - started).toBeLessThan(1_000)
      // Each measured beside the others; whichever larger measure was kept first serves the smaller ones.
      expect(built.map((steps) => steps.at(-1)!.metadata?.gasLimitSource).filter((s) => s === 'default')).toEqual([])
      expect(rpc.methods.filter((m) => m === 'eth_simulateV1').length).toBeLessThanOrEqual(8)
      for (const [i, o] of owners.entries()) await chain.sendAll(o, built[i]!)
    } finally {
      await rpc.stop()
    }
  })
})

describe('a swap withdrawal from a vault that earns', () => {
  let chain: EarnChain
  beforeAll(async () => {
    chain = await startEarnChain()
  })
  afterAll(() => chain?.anvil.stop())

  test('builds of the same shares share one measure, though the swap sells more each time', async () => {
    const rpc = rpcProxy(chain)
    try {
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${rpc.url}`, EVM_SWAP_ROUTERS: `${chain.anvil.chainId}=${chain.router}` })
      const owner = await chain.user(parseUnits('10', 6))
      await chain.sendAll(owner, await build(chain.client(), chain.deposit({ owner, amount: parseUnits('10', 6) })))
      const shares = await chain.read.balance(chain.vault, owner.address)
      const swapOut = { ...chain.deposit({ owner, amount: shares }), kind: 'withdraw' as const, tokenOut: chain.other }
      for (let i = 0; i < 5; i++) {
        // The vault earns between builds: the redeem pays more, so the swap sells more.
        await mintToken(chain.anvil, chain.asset, chain.vault, parseUnits('0.01', 6))
        expect((await build(client, swapOut)).map((s) => s.type)).toEqual(['withdraw', 'approve', 'swap'])
      }
      expect(rpc.methods.filter((m) => m === 'eth_simulateV1')).toHaveLength(1)
    } finally {
      await rpc.stop()
    }
  })
})

describe('measures kept', () => {
  let chain: EarnChain
  beforeAll(async () => {
    chain = await startEarnChain()
  })
  afterAll(() => chain?.anvil.stop())

  test(`at most MAX_MEASURED: a new measure pushes out the one used longest ago, and one in use stays`, async () => {
    const client = chain.client()
    const measured = client.state.gasMeasured
    // Stand-ins for measures of tokens swaps named earlier (each a key of its own), the map full.
    for (let i = 0; i < MAX_MEASURED; i++) measured.set(`${chain.anvil.chainId}|gas|approve|0x${i.toString(16).padStart(40, '0')}|router`, { gas: 50_000n, upTo: 0n })
    const oldest = measured.keys().next().value!
    const owner = await chain.user(parseUnits('1', 6))
    const first = await build(client, chain.deposit({ owner, amount: parseUnits('1', 6) }))
    expect(first.map((s) => s.metadata?.gasLimitSource)).toEqual(['estimated', 'estimated'])
    expect(measured.size).toBe(MAX_MEASURED)
    expect(measured.has(oldest)).toBe(false)
    const ours = [...measured.keys()].slice(-2)
    expect(ours.every((k) => k.includes(chain.vault.toLowerCase()) || k.includes(chain.asset.toLowerCase()))).toBe(true)

    // A build using its measures makes them the most recent: a sweep of other keys then goes past them.
    for (let i = 0; i < 10; i++) measured.set(`filler${i}`, { gas: 1n, upTo: 0n })
    const again = await build(client, chain.deposit({ owner, amount: parseUnits('1', 6) }))
    expect(again.map((s) => s.metadata?.gasLimitSource)).toEqual(['measured-once', 'measured-once'])
    expect([...measured.keys()].slice(-2).sort()).toEqual([...ours].sort())
  })
})
