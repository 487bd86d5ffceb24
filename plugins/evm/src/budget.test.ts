import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { UnavailableError } from '@earn/core'
import { parseUnits } from 'viem'
import { recordingProxy } from '../../../test/chains/evm.ts'
import { connect } from './client.ts'
import { startEarnChain, type EarnChain } from './fixtures.ts'
import { evm } from './index.ts'

let chain: EarnChain
beforeAll(async () => {
  chain = await startEarnChain()
})
afterAll(() => chain?.anvil.stop())

describe('a capability answers within its budget', () => {
  test('four request limits: 20 s at the default EVM_RPC_TIMEOUT_MS, scaled with it', () => {
    const url = `${chain.anvil.chainId}=${chain.anvil.url}`
    expect(connect({ EVM_RPC_URLS: url }).budgetMs).toBe(20_000)
    expect(connect({ EVM_RPC_URLS: url, EVM_RPC_TIMEOUT_MS: '300' }).budgetMs).toBe(1_200)
  })

  test('a node answering each call just inside its limit fails a build with 503 once the budget is spent', async () => {
    // Every answer comes back 400 ms late, inside the request limit: each call succeeds, but a deposit build makes
    // several one after another (the reads, then the gas measurement), so it takes longer than an 800 ms budget.
    const lagging = recordingProxy(chain.anvil.url, { delayMs: 400 })
    try {
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${lagging.url}` })
      const owner = await chain.user(parseUnits('10', 6))
      const deposit = chain.deposit({ owner, amount: parseUnits('10', 6) })

      // With room to finish, the build succeeds, only slowly.
      let started = performance.now()
      expect((await evm.transactions.build(client, deposit)).map((s) => s.type)).toEqual(['approve', 'deposit'])
      expect(performance.now() - started).toBeGreaterThan(1_100)

      // A fresh client (nothing measured yet), its budget shorter than the build takes: a 503 when it is spent.
      const budgeted = { ...connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${lagging.url}` }), budgetMs: 800 }
      // Its chain's identity known (that check runs before the budget starts: servedChain.ts).
      budgeted.state.servedChecked.set(chain.anvil.chainId, performance.now())
      started = performance.now()
      const error = await evm.transactions.build(budgeted, deposit).catch((e: unknown) => e)
      const took = performance.now() - started
      expect(error).toBeInstanceOf(UnavailableError)
      expect((error as UnavailableError).message).toBe(`the RPC for EVM chain ${chain.anvil.chainId} did not answer within 0.8 s; try again later`)
      expect((error as UnavailableError).context).toEqual({ chainId: chain.anvil.chainId })
      expect(took).toBeGreaterThanOrEqual(790)
      expect(took).toBeLessThan(1_000)
    } finally {
      await lagging.stop()
    }
  })
})
