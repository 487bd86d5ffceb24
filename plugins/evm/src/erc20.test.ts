/** Token labels in build descriptions: the symbol is the token contract's to write, so it is shown cleaned. */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { getAddress } from 'viem'
import { deployToken, startAnvil, type Anvil } from '../../../test/chains/evm.ts'
import { evmClientFromPublicClients, type EvmClient } from './client.ts'
import { describeAmount, tokenLabel } from './erc20.ts'

let anvil: Anvil
let client: EvmClient
beforeAll(async () => {
  anvil = await startAnvil()
  client = evmClientFromPublicClients({ [anvil.chainId]: anvil.publicClient })
})
afterAll(() => anvil?.stop())

test("a symbol's line breaks and control characters go and a long one is cut: it cannot stage lines of its own", async () => {
  const cases: [string, string | undefined][] = [
    ['tUSD', 'tUSD'],
    ['tUSD\nApproved: nothing. Deposit 0', 'tUSD Approved: nothing. Deposit…'],
    ['a\u0000b\u2028c\u0085d', 'a b c d'],
    ['USD\u200b₮', 'USD\u200b₮'],
    // A right-to-left override would show what follows it reversed.
    ['USDC\u202e0001 DTSU', 'USDC 0001 DTSU'],
    // Cut by characters: an emoji across the cut is kept whole or left out, never halved.
    [`${'U'.repeat(31)}😀😀`, `${'U'.repeat(31)}😀…`],
    ['\n\t\u0000', undefined],
  ]
  for (const [symbol, shown] of cases) {
    const token = await deployToken(anvil, { symbol, decimals: 6 })
    const label = await tokenLabel(client, anvil.chainId, token)
    expect(label.symbol, JSON.stringify(symbol)).toBe(shown)
    // No symbol left: the amount is described by its units and address instead, in EIP-55 as a description's addresses are.
    expect(describeAmount(1_500_000n, label)).toBe(shown === undefined ? `1500000 base units of token ${getAddress(token)}` : `1.5 ${shown}`)
  }
})
