import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { UnavailableError } from '@earn/core'
import { createPublicClient, encodeFunctionData, http, parseAbi, type Address } from 'viem'
import { closedPortUrl, deployHostile, deployToken, startAnvil, type Anvil } from '../../../test/chains/evm.ts'
import { rejection } from '../../../test/thrown.ts'
import { ask, classifyRpcError } from './rpc.ts'

const probeAbi = parseAbi([
  'function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)',
  'function balanceOf(address) view returns (uint256)',
])

/** The error a real request raises, to classify. */
const failure = (request: () => Promise<unknown>) => rejection(request())

describe('classifyRpcError on real failures', () => {
  let anvil: Anvil
  let token: Address

  beforeAll(async () => {
    anvil = await startAnvil()
    token = await deployToken(anvil)
  })
  afterAll(() => anvil?.stop())

  const args = ['0x'.padEnd(66, '0') as `0x${string}`, '0x'] as const

  // With and without Multicall3 batching, since reads take either path depending on the chain.
  for (const batched of [false, true]) {
    const client = () =>
      batched ? anvil.publicClient : createPublicClient({ chain: anvil.chain, transport: http(anvil.url) })

    test(`a revert is a refusal (${batched ? 'multicall' : 'plain'} eth_call)`, async () => {
      // The token has no isValidSignature: its dispatcher reverts.
      const e = await failure(() =>
        client().readContract({ address: token, abi: probeAbi, functionName: 'isValidSignature', args }),
      )
      expect(classifyRpcError(e)).toBe('refused')
    })

    test(`no code at the address is a refusal (${batched ? 'multicall' : 'plain'} eth_call)`, async () => {
      const e = await failure(() =>
        client().readContract({ address: anvil.deployer.address, abi: probeAbi, functionName: 'balanceOf', args: [token] }),
      )
      expect(classifyRpcError(e)).toBe('refused')
    })
  }

  test('a call the contract fails without a revert (out of memory, an invalid opcode) is a refusal, not an outage', async () => {
    const plain = createPublicClient({ chain: anvil.chain, transport: http(anvil.url, { retryCount: 0 }) })
    for (const kind of ['TestReturnBomb', 'TestGasBurner'] as const) {
      const hostile = await deployHostile(anvil, kind)
      // A limited gas allowance, as a wallet check gives: the bomb's 2 MB return cannot be paid for.
      const data = encodeFunctionData({ abi: probeAbi, functionName: 'isValidSignature', args })
      const e = await failure(() => plain.call({ to: hostile, data, gas: 1_000_000n }))
      expect(classifyRpcError(e)).toBe('refused')
    }
  })

  test('a closed port is unavailable', async () => {
    const down = createPublicClient({ chain: anvil.chain, transport: http(await closedPortUrl(), { retryCount: 0 }) })
    expect(classifyRpcError(await failure(() => down.getChainId()))).toBe('unavailable')
    expect(
      classifyRpcError(
        await failure(() => down.readContract({ address: token, abi: probeAbi, functionName: 'balanceOf', args: [token] })),
      ),
    ).toBe('unavailable')
  })

  test('an HTTP error from the RPC is unavailable', async () => {
    const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('rate limited', { status: 429 }) })
    try {
      const limited = createPublicClient({ transport: http(`http://127.0.0.1:${server.port}`, { retryCount: 0 }) })
      expect(classifyRpcError(await failure(() => limited.getBalance({ address: token })))).toBe('unavailable')
    } finally {
      await server.stop(true)
    }
  })

  test('a JSON-RPC error that is not a revert is unavailable', async () => {
    const server = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: async (req) => {
        const { id } = (await req.json()) as { id: number }
        return Response.json({ jsonrpc: '2.0', id, error: { code: -32005, message: 'limit exceeded' } })
      },
    })
    try {
      const limited = createPublicClient({ transport: http(`http://127.0.0.1:${server.port}`, { retryCount: 0 }) })
      expect(
        classifyRpcError(
          await failure(() => limited.readContract({ address: token, abi: probeAbi, functionName: 'balanceOf', args: [token] })),
        ),
      ).toBe('unavailable')
    } finally {
      await server.stop(true)
    }
  })

  test('an error that did not come from a chain is left alone', () => {
    expect(classifyRpcError(new TypeError('bug'))).toBeUndefined()
  })
})

describe('ask', () => {
  test('turns no answer into UnavailableError, keeping the cause for logs', async () => {
    const down = createPublicClient({ transport: http(await closedPortUrl(), { retryCount: 0 }) })
    const e = await failure(() => ask('10', () => down.getChainId(), () => 0))
    expect(e).toBeInstanceOf(UnavailableError)
    expect(e).toMatchObject({ status: 503, context: { chainId: '10' } })
    expect((e as Error).cause).toBeDefined()
  })

  test('rethrows our own bugs unchanged', async () => {
    const bug = new TypeError('bug')
    expect(await failure(() => ask('10', () => Promise.reject(bug), () => 0))).toBe(bug)
  })
})
