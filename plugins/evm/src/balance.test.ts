import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { InvalidAddressError, InvalidArgumentError, UnavailableError } from '@earn/core'
import { createPublicClient, encodeFunctionData, erc20Abi, http, parseEther, parseUnits, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import {
  closedPortUrl,
  deploySmartWallet,
  deployToken,
  mintToken,
  recordingProxy as recordingProxyTo,
  sendUnsigned,
  setNativeBalance,
  startAnvil,
  type Anvil,
} from '../../../test/chains/evm.ts'
import { read } from './balance.ts'
import { connect, evmClientFromPublicClients, type EvmClient } from './client.ts'

describe('balance.read (anvil)', () => {
  let anvil: Anvil
  let client: EvmClient
  let token: Address
  const holder = privateKeyToAccount(generatePrivateKey()).address
  const owner = holder.toLowerCase()

  beforeAll(async () => {
    anvil = await startAnvil()
    client = evmClientFromPublicClients({ [anvil.chainId]: anvil.publicClient })
    token = await deployToken(anvil, { decimals: 6 })
    await mintToken(anvil, token, holder, parseUnits('1234.5', 6))
    await setNativeBalance(anvil, holder, parseEther('1.25'))
  })
  afterAll(() => anvil?.stop())

  test('native balance, as a bigint in wei', async () => {
    const balance = await read(client, { chainId: anvil.chainId, owner, token: 'native' })
    expect(typeof balance).toBe('bigint')
    expect(balance).toBe(parseEther('1.25'))
  })

  test('ERC-20 balance, in smallest units, whatever case the token address is in', async () => {
    expect(await read(client, { chainId: anvil.chainId, owner, token })).toBe(1_234_500_000n)
    expect(await read(client, { chainId: anvil.chainId, owner, token: token.toLowerCase() })).toBe(1_234_500_000n)
  })

  test('an empty wallet reads zero', async () => {
    const nobody = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
    expect(await read(client, { chainId: anvil.chainId, owner: nobody, token })).toBe(0n)
    expect(await read(client, { chainId: anvil.chainId, owner: nobody, token: 'native' })).toBe(0n)
  })

  const recordingProxy = () => recordingProxyTo(anvil.url)

  test('concurrent token reads fold into one Multicall3 eth_call where the chain has Multicall3', async () => {
    const holders: string[] = []
    for (const n of [1n, 2n, 3n, 4n]) {
      const a = privateKeyToAccount(generatePrivateKey()).address
      await mintToken(anvil, token, a, n)
      holders.push(a.toLowerCase())
    }
    const proxy = recordingProxy()
    try {
      const viaProxy = evmClientFromPublicClients({
        [anvil.chainId]: createPublicClient({ chain: anvil.chain, transport: http(proxy.url), batch: { multicall: true } }),
      })
      const balances = await Promise.all(holders.map((h) => read(viaProxy, { chainId: anvil.chainId, owner: h, token })))
      expect(balances).toEqual([1n, 2n, 3n, 4n])
      expect(proxy.requests).toEqual([['eth_call']])
    } finally {
      await proxy.stop()
    }
  })

  test('concurrent reads through connect() fold token reads into one eth_call, even without a known Multicall3', async () => {
    const proxy = recordingProxy()
    try {
      const viaEnv = connect({ EVM_RPC_URLS: `${anvil.chainId}=${proxy.url}` })
      const reads = await Promise.all([
        read(viaEnv, { chainId: anvil.chainId, owner, token }),
        read(viaEnv, { chainId: anvil.chainId, owner, token: 'native' }),
        read(viaEnv, { chainId: anvil.chainId, owner: anvil.deployer.address.toLowerCase(), token }),
      ])
      expect(reads).toEqual([1_234_500_000n, parseEther('1.25'), 0n])
      // viem knows no Multicall3 for chain 31337, so the first token read asks once whether the chain has it at its
      // usual address (this anvil does); the two token reads then travel as one aggregate3 call. The native read
      // leaves at once, while the token reads wait a few ms for company.
      expect(proxy.requests.flat().toSorted()).toEqual(['eth_call', 'eth_getBalance', 'eth_getCode'])
      expect(viaEnv.rpcRequests(anvil.chainId)).toBe(proxy.requests.length)
    } finally {
      await proxy.stop()
    }
  })

  test('identical reads waiting in one batch share it; a read arriving after that batch left reads the chain afresh', async () => {
    const wallet = privateKeyToAccount(generatePrivateKey())
    await setNativeBalance(anvil, wallet.address, parseEther('1'))
    await mintToken(anvil, token, wallet.address, 500n)
    // The node runs each call at once; its answer then takes 300 ms to come back, as a remote RPC's may.
    let asked = 0
    const lagging = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(req) {
        asked++
        const answer = await fetch(anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: await req.text() })
        const body = await answer.text()
        await Bun.sleep(300)
        return new Response(body, { headers: { 'content-type': 'application/json' } })
      },
    })
    try {
      const viaLag = evmClientFromPublicClients({
        [anvil.chainId]: createPublicClient({ chain: anvil.chain, transport: http(`http://127.0.0.1:${lagging.port}`), batch: { multicall: true } }),
      })
      const balance = () => read(viaLag, { chainId: anvil.chainId, owner: wallet.address, token })
      const [a, b] = [balance(), balance()]
      while (asked === 0) await Bun.sleep(5)
      await Bun.sleep(50)
      // Mined while the first read's answer is on its way: a read made now must see it.
      const data = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [anvil.deployer.address, 500n] })
      expect((await sendUnsigned(anvil, wallet, { to: token, data, value: '0', gasLimit: '100000', chainId: Number(anvil.chainId) })).status).toBe('success')
      const after = balance()
      expect(await Promise.all([a, b, after])).toEqual([500n, 500n, 0n])
      // The first two went out as one call; the third as its own.
      expect(asked).toBe(2)
    } finally {
      lagging.stop(true)
    }
  })

  test('an RPC that accepts but never answers is a 503 within twice EVM_RPC_TIMEOUT_MS, for native and token reads', async () => {
    let asked = 0
    const hanging = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: () => {
        asked++
        return new Promise<Response>(() => {})
      },
    })
    try {
      const slow = connect({ EVM_RPC_URLS: `${anvil.chainId}=http://127.0.0.1:${hanging.port}`, EVM_RPC_TIMEOUT_MS: '300' })
      const started = performance.now()
      const errors = await Promise.all(['native', token].map((t) => read(slow, { chainId: anvil.chainId, owner, token: t }).catch((e: unknown) => e)))
      const took = performance.now() - started
      for (const e of errors) expect(e).toMatchObject({ status: 503, context: { chainId: anvil.chainId } })
      // Two attempts of 300 ms and viem's short pause between them; viem's defaults took ~41 s.
      expect(took).toBeGreaterThan(550)
      expect(took).toBeLessThan(3_000)
      expect(asked).toBeGreaterThanOrEqual(2)
    } finally {
      hanging.stop(true)
    }
    for (const bad of ['0', '99', '60001', '1.5', 'soon'])
      expect(() => connect({ EVM_RPC_URLS: '', EVM_RPC_TIMEOUT_MS: bad })).toThrow('EVM_RPC_TIMEOUT_MS must be a whole number of milliseconds from 100 to 60000')
  })

  test('a chain with no RPC is a 400 naming the chain', async () => {
    const e = await read(client, { chainId: '8453', owner, token: 'native' }).catch((e: unknown) => e)
    expect(e).toBeInstanceOf(InvalidArgumentError)
    expect(e).toMatchObject({ status: 400, context: { chainId: expect.stringContaining('8453') } })
    expect((e as Error).message).toContain('8453')
  })

  test('a token address with no ERC-20 behind it is a 400 naming the token', async () => {
    const notAToken = await deploySmartWallet(anvil, holder)
    for (const address of [notAToken, privateKeyToAccount(generatePrivateKey()).address]) {
      const e = await read(client, { chainId: anvil.chainId, owner, token: address }).catch((e: unknown) => e)
      expect(e).toBeInstanceOf(InvalidArgumentError)
      expect(e).toMatchObject({ status: 400, context: { token: expect.any(String) } })
    }
  })

  test('a malformed owner or token is an InvalidAddressError on that field', async () => {
    const badOwner = await read(client, { chainId: anvil.chainId, owner: '0x123', token }).catch((e: unknown) => e)
    expect(badOwner).toBeInstanceOf(InvalidAddressError)
    expect(badOwner).toMatchObject({ context: { owner: expect.any(String) } })
    const badToken = await read(client, { chainId: anvil.chainId, owner, token: 'usdc' }).catch((e: unknown) => e)
    expect(badToken).toBeInstanceOf(InvalidAddressError)
    expect(badToken).toMatchObject({ context: { token: expect.any(String) } })
  })

  test('an RPC that is down is a 503, for native and token reads', async () => {
    const down = connect({ EVM_RPC_URLS: `${anvil.chainId}=${await closedPortUrl()}` })
    for (const t of ['native', token]) {
      const e = await read(down, { chainId: anvil.chainId, owner, token: t }).catch((e: unknown) => e)
      expect(e).toBeInstanceOf(UnavailableError)
      expect(e).toMatchObject({ status: 503, context: { chainId: anvil.chainId } })
    }
  })
})
