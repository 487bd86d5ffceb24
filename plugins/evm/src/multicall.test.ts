/** The Multicall3 batcher: its hand-written aggregate3 coding against viem's, and its calls against anvil. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  createPublicClient,
  encodeFunctionData,
  encodeFunctionResult,
  erc20Abi,
  http,
  multicall3Abi,
  RawContractError,
  type Address,
  type Hex,
} from 'viem'
import { closedPortUrl, deployHostile, deployToken, mintToken, recordingProxy, startAnvil, type Anvil } from '../../../test/chains/evm.ts'
import { balanceOfData, decodeUint256, SELECTORS } from './calldata.ts'
import { thrown } from '../../../test/thrown.ts'
import { classifyRpcError, MalformedAnswerError } from './rpc.ts'
import { createCallBatcher, decodeAggregate3, encodeAggregate3 } from './multicall.ts'
import { createJsonRpcPost } from './post.ts'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'

const A = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' as Address
const B = '0x0000000000000000000000000000000000414243' as Address

describe('aggregate3 coding equals viem’s', () => {
  test('calls of every length, including empty calldata and calldata that is not whole words', () => {
    const calls = [
      { to: A, data: balanceOfData(B) },
      { to: B, data: '0x' as Hex },
      { to: A, data: `0x${'ab'.repeat(33)}` as Hex },
      { to: B, data: SELECTORS.symbol as Hex },
    ]
    for (let n = 0; n <= calls.length; n++) {
      const some = calls.slice(0, n)
      expect(encodeAggregate3(some)).toBe(
        encodeFunctionData({
          abi: multicall3Abi,
          functionName: 'aggregate3',
          args: [some.map((c) => ({ target: c.to, allowFailure: true, callData: c.data }))],
        }),
      )
    }
  })

  test("answers decode as viem encodes them; an answer of another shape is the node's fault (unavailable)", () => {
    const results = [
      { success: true, returnData: `0x${'00'.repeat(31)}2a` as Hex },
      { success: false, returnData: '0x08c379a0' as Hex },
      { success: true, returnData: '0x' as Hex },
      { success: true, returnData: `0x${'cd'.repeat(45)}` as Hex },
    ]
    const encoded = encodeFunctionResult({ abi: multicall3Abi, functionName: 'aggregate3', result: results })
    expect(decodeAggregate3(encoded, results.length)).toEqual(results)
    expect(() => decodeAggregate3(encoded, 3)).toThrow('4 results for 3 calls')
    const malformed = [encoded.slice(0, encoded.length - 64), '0x', '0x12', null, 5, { data: encoded }, `${encoded}0`, `${encoded.slice(0, -2)}zz`, encoded.slice(2)]
    for (const answer of malformed) {
      const error = thrown(() => decodeAggregate3(answer, results.length))
      expect(error, String(answer).slice(0, 20)).toBeInstanceOf(MalformedAnswerError)
      expect(classifyRpcError(error)).toBe('unavailable')
    }
  })

  test('an answer of megabytes (a contract answering them) decodes: hex is checked in one pass, not as byte pairs', () => {
    const results = [{ success: true, returnData: `0x${'00'.repeat(3_000_000)}` as Hex }]
    const encoded = encodeFunctionResult({ abi: multicall3Abi, functionName: 'aggregate3', result: results })
    // JSC answers false for `^0x(?:[0-9a-fA-F]{2})*$` on a string this long.
    expect(/^0x(?:[0-9a-fA-F]{2})*$/.test(encoded)).toBe(false)
    expect(decodeAggregate3(encoded, 1)[0]!.returnData.length).toBe(2 + 6_000_000)
  })
})

describe('batched calls on anvil', () => {
  let anvil: Anvil
  let token: Address
  beforeAll(async () => {
    anvil = await startAnvil()
    token = await deployToken(anvil, { symbol: 'tUSD', decimals: 6 })
  })
  afterAll(() => anvil?.stop())

  const batcherFor = (url: string, multicall3: Address | null = anvil.chain.contracts.multicall3.address) =>
    createCallBatcher(createPublicClient({ chain: anvil.chain, transport: http(url) }), { waitMs: 5, maxBytes: 16_384, multicall3: async () => multicall3 })

  test('concurrent calls leave as one eth_call; each gets its own answer, refusal or nothing', async () => {
    const holders = [A, B]
    await mintToken(anvil, token, A, 7n)
    const proxy = recordingProxy(anvil.url)
    try {
      const batcher = batcherFor(proxy.url)
      const [a, b, noCode, reverted] = await Promise.allSettled([
        batcher.call(token, balanceOfData(holders[0]!)),
        batcher.call(token, balanceOfData(holders[1]!)),
        batcher.call(B, balanceOfData(A)),
        // transfer(0x0, 1) from Multicall3, which holds nothing: the token reverts.
        batcher.call(token, `0xa9059cbb${'0'.repeat(64)}${'0'.repeat(63)}1`),
      ])
      expect(a.status === 'fulfilled' && decodeUint256(a.value)).toBe(7n)
      expect(b.status === 'fulfilled' && decodeUint256(b.value)).toBe(0n)
      // No contract at B: the call succeeds with no data, which the decoder refuses as viem's would.
      expect(noCode).toEqual({ status: 'fulfilled', value: undefined })
      expect(reverted.status).toBe('rejected')
      const error = (reverted as PromiseRejectedResult).reason
      expect(error).toBeInstanceOf(RawContractError)
      expect(classifyRpcError(error)).toBe('refused')
      // The batch, then the failed call alone (it might only have run short of gas beside the others).
      expect(proxy.requests).toEqual([['eth_call'], ['eth_call']])
    } finally {
      await proxy.stop()
    }
  })

  test('calls past the size limit start the next batch', async () => {
    const proxy = recordingProxy(anvil.url)
    try {
      const batcher = createCallBatcher(createPublicClient({ chain: anvil.chain, transport: http(proxy.url) }), {
        waitMs: 5,
        // Two balanceOf calls (36 bytes each) fit, a third does not.
        maxBytes: 80,
        multicall3: async () => anvil.chain.contracts.multicall3.address,
      })
      const answers = await Promise.all([A, B, A, B, A].map((h) => batcher.call(token, balanceOfData(h))))
      expect(answers.map(decodeUint256)).toEqual([7n, 0n, 7n, 0n, 7n])
      expect(proxy.count('eth_call')).toBe(3)
    } finally {
      await proxy.stop()
    }
  })

  test("a contract that fails the whole batch (megabytes of answer) or starves it of gas fails its own call only", async () => {
    const held = await anvil.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [A] })
    expect(held).toBeGreaterThan(0n)
    const bomb = await deployHostile(anvil, 'TestReturnBomb')
    const burners = [await deployHostile(anvil, 'TestGasBurner'), await deployHostile(anvil, 'TestGasBurner')]
    const proxy = recordingProxy(anvil.url)
    try {
      const batcher = batcherFor(proxy.url)
      const honest = () => Array.from({ length: 6 }, (_, i) => batcher.call(token, balanceOfData(i % 2 ? A : B)))
      for (const hostile of [[bomb], burners]) {
        const calls = honest()
        // Hostile calls first: a burner leaves the calls after it 1/64 of the gas.
        const bad = hostile.map((h) => batcher.call(h, balanceOfData(A)))
        const answers = await Promise.all(calls)
        expect(answers.map(decodeUint256)).toEqual([0n, held, 0n, held, 0n, held])
        for (const outcome of await Promise.allSettled(bad)) {
          expect(outcome.status).toBe('rejected')
          expect(classifyRpcError((outcome as PromiseRejectedResult).reason)).toBe('refused')
        }
      }
      // Honest batches never pay for this: one eth_call each.
      const before = proxy.count('eth_call')
      await Promise.all(honest())
      expect(proxy.count('eth_call') - before).toBe(1)
    } finally {
      await proxy.stop()
    }
  })

  test('a chain that does not answer fails every call of the batch as unavailable', async () => {
    const batcher = batcherFor(await closedPortUrl())
    const outcomes = await Promise.allSettled([batcher.call(token, balanceOfData(A)), batcher.call(token, balanceOfData(B))])
    for (const o of outcomes) {
      expect(o.status).toBe('rejected')
      expect(classifyRpcError((o as PromiseRejectedResult).reason)).toBe('unavailable')
    }
  })

  test("a contract nobody vouches for is read in a batch of its own: one that never answers fails only its own calls", async () => {
    const held = await anvil.publicClient.readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [A] })
    // Stands for a caller's token that runs past the node's time limit: any eth_call naming it is never answered.
    const slow = privateKeyToAccount(generatePrivateKey()).address
    const hanging = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(req) {
        const body = await req.text()
        if (body.toLowerCase().includes(slow.slice(2).toLowerCase())) return new Promise<Response>(() => {})
        return fetch(anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      },
    })
    try {
      const url = `http://127.0.0.1:${hanging.port}`
      const batcher = createCallBatcher(createPublicClient({ chain: anvil.chain, transport: http(url) }), {
        waitMs: 5,
        maxBytes: 16_384,
        multicall3: async () => anvil.chain.contracts.multicall3.address,
        post: createJsonRpcPost({ url, timeoutMs: 300, retryCount: 0 }),
        vouched: (to) => to.toLowerCase() === token.toLowerCase(),
      })
      const honest = Array.from({ length: 6 }, (_, i) => batcher.call(token, balanceOfData(i % 2 ? A : B)))
      const bad = [batcher.call(slow, balanceOfData(A)), batcher.call(slow, SELECTORS.decimals)]
      expect((await Promise.all(honest)).map(decodeUint256)).toEqual([0n, held, 0n, held, 0n, held])
      for (const outcome of await Promise.allSettled(bad)) {
        expect(outcome.status).toBe('rejected')
        expect(classifyRpcError((outcome as PromiseRejectedResult).reason)).toBe('unavailable')
      }
    } finally {
      hanging.stop(true)
    }
  })

  test('without a Multicall3 the calls go through viem one by one and still answer', async () => {
    const bare = await startAnvil({ multicall3: false })
    try {
      const bareToken = await deployToken(bare, { symbol: 'tUSD', decimals: 6 })
      await mintToken(bare, bareToken, A, 3n)
      const batcher = createCallBatcher(createPublicClient({ chain: bare.chain, transport: http(bare.url) }), {
        waitMs: 5,
        maxBytes: 16_384,
        multicall3: async () => null,
      })
      const [a, b] = await Promise.all([batcher.call(bareToken, balanceOfData(A)), batcher.call(bareToken, balanceOfData(B))])
      expect([decodeUint256(a), decodeUint256(b)]).toEqual([3n, 0n])

      // viem batches them itself there (deployless, as `connect` sets it up), and one call's failure failed its whole
      // batch: honest reads beside a return bomb answered "not an ERC-20". A failed call is asked again alone.
      const bomb = await deployHostile(bare, 'TestReturnBomb')
      const deployless = createPublicClient({ chain: bare.chain, transport: http(bare.url), batch: { multicall: { wait: 5, deployless: true } } })
      const viaViem = createCallBatcher(deployless, { waitMs: 5, maxBytes: 16_384, multicall3: async () => null })
      const honest = Array.from({ length: 4 }, (_, i) => viaViem.call(bareToken, balanceOfData(i % 2 ? A : B)))
      const bad = viaViem.call(bomb, balanceOfData(A))
      expect((await Promise.all(honest)).map(decodeUint256)).toEqual([0n, 3n, 0n, 3n])
      // Alone, the bomb's megabytes are just its own answer.
      expect(await bad.then(() => 'answered', (error: unknown) => classifyRpcError(error))).not.toBe('unavailable')

      // A call's own revert in a batch that answered is final: not asked again (one eth_call for both).
      const proxy = recordingProxy(bare.url)
      try {
        const counted = createCallBatcher(createPublicClient({ chain: bare.chain, transport: http(proxy.url), batch: { multicall: { wait: 5, deployless: true } } }), {
          waitMs: 5,
          maxBytes: 16_384,
          multicall3: async () => null,
        })
        const transfer = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [A, 1n] })
        const [held, refused] = await Promise.allSettled([counted.call(bareToken, balanceOfData(A)), counted.call(bareToken, transfer)])
        expect(held.status === 'fulfilled' && decodeUint256(held.value)).toBe(3n)
        expect(refused.status === 'rejected' && classifyRpcError(refused.reason)).toBe('refused')
        expect(proxy.count('eth_call')).toBe(1)
      } finally {
        await proxy.stop()
      }
    } finally {
      await bare.stop()
    }
  })
})
