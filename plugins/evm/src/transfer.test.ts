import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { InvalidAddressError, InvalidArgumentError, NotFoundError, UnavailableError, UnfitRecipientError } from '@earn/core'
import { encodeFunctionData, erc20Abi, parseEther, parseUnits, stringToHex, zeroAddress, type Hex } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { deployDishonestToken, deployFeeToken, deploySmartWallet, mintToken, recordingProxy, sendUnsigned } from '../../../test/chains/evm.ts'
import { startEarnChain, type EarnChain } from './fixtures.ts'
import { connect } from './client.ts'
import { build } from './transactions.ts'
import { buildTransfer, loggedNet, readTransfers, storageBeforeAndAfter, TRANSFER_GAS } from './transfer.ts'

let chain: EarnChain
beforeAll(async () => {
  chain = await startEarnChain()
})
afterAll(() => chain?.anvil.stop())

type EvmTx = { to: string; data: Hex; value: string; gasLimit: string; chainId: number }
const lower = (a: string) => a.toLowerCase()
const TAG = 'earn:v1:stream:5b0c1f2e-3d4a-4b5c-8d6e-7f8091a2b3c4:0123456789abcdef0123456789abcdef'
const newAddress = () => privateKeyToAccount(generatePrivateKey()).address

describe('buildTransfer', () => {
  test('an ERC-20 transfer carries the tag after its calldata; mined, readTransfers reports the tag and the movement', async () => {
    const sender = await chain.user(parseUnits('10', 6))
    const treasury = newAddress()
    const amount = parseUnits('1.015', 6)
    const steps = await buildTransfer(chain.client(), { chainId: chain.anvil.chainId, from: lower(sender.address), token: lower(chain.asset), to: lower(treasury), amount, tag: TAG })

    expect(steps).toHaveLength(1)
    const [step] = steps as [(typeof steps)[number]]
    const t = step.transaction as EvmTx
    expect(step.type).toBe('transfer')
    expect(t).toMatchObject({ to: lower(chain.asset), value: '0', chainId: 31337 })
    const call = encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [treasury, amount] })
    expect(t.data).toBe(`${call}${stringToHex(TAG).slice(2)}`)
    expect(step.description).toBe(`Transfer 1.015 tUSD to ${treasury}`)
    // Lowercase, as every built transaction's metadata.
    expect(step.metadata).toMatchObject({ token: lower(chain.asset), to: lower(treasury), amount: amount.toString(), gasLimitSource: 'estimated' })
    expect(BigInt(t.gasLimit)).toBeGreaterThan(21_000n)

    const [hash] = await chain.sendAll(sender, steps)
    expect(await chain.read.balance(chain.asset, treasury)).toBe(amount)
    expect(await readTransfers(chain.client(), { chainId: chain.anvil.chainId, txHash: hash! })).toEqual({
      tagsOn: expect.any(Function), coinMovedInside: expect.any(Function), shortfall: expect.any(Function),
      txHash: hash!,
      tag: TAG,
      from: lower(sender.address),
      to: lower(chain.asset),
      vaultMoves: [],
      transfers: [{ token: lower(chain.asset), from: lower(sender.address), to: lower(treasury), amount }],
    })
  })

  test("where the node simulates the transfer, the simulation's gas is the measure: no estimate is asked", async () => {
    const proxy = recordingProxy(chain.anvil.url)
    try {
      const sender = await chain.user(parseUnits('10', 6))
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${proxy.url}` })
      const [step] = await buildTransfer(client, { chainId: chain.anvil.chainId, from: sender.address, token: chain.asset, to: newAddress(), amount: 1_000n, tag: TAG })
      expect(step!.metadata).toMatchObject({ gasLimitSource: 'estimated' })
      expect(proxy.requests.flat()).toContain('eth_simulateV1')
      expect(proxy.requests.flat()).not.toContain('eth_estimateGas')
      // Enough to land.
      expect((await sendUnsigned(chain.anvil, sender, step!.transaction)).status).toBe('success')
    } finally {
      proxy.stop()
    }
  })

  test('a token that takes a fee on transfer is refused: the recipient would receive less than the amount', async () => {
    const token = await deployFeeToken(chain.anvil)
    const sender = await chain.user()
    await mintToken(chain.anvil, token, sender.address, parseUnits('10', 6))
    const error = await buildTransfer(chain.client(), { chainId: chain.anvil.chainId, from: sender.address, token, to: newAddress(), amount: 1_000_000n, tag: TAG }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(InvalidArgumentError)
    expect((error as InvalidArgumentError).context).toEqual({ token: 'charges a transfer fee' })
    expect((error as Error).message).toContain('would reach')
    expect((error as Error).message).toContain('as 990000 (a transfer fee')
  })

  test("a token whose balances move otherwise than its logs say, or that moves nothing, is refused, named as such", async () => {
    const sender = await chain.user()
    // Logs the whole amount, credits 99%: read from the logs alone, a stream went active with its treasury short.
    const lying = await deployDishonestToken(chain.anvil, 'TestLyingFeeToken')
    await mintToken(chain.anvil, lying, sender.address, parseUnits('10', 6))
    const short = (await buildTransfer(chain.client(), { chainId: chain.anvil.chainId, from: sender.address, token: lying, to: newAddress(), amount: 1_000_000n, tag: TAG }).catch((e: unknown) => e)) as InvalidArgumentError
    expect([short.context, short.message]).toEqual([{ token: 'charges a transfer fee' }, expect.stringContaining('as 990000 (a transfer fee')])
    // Answers false and moves nothing: not a fee.
    const inert = await deployDishonestToken(chain.anvil, 'TestFalseToken')
    await mintToken(chain.anvil, inert, sender.address, parseUnits('10', 6))
    const none = (await buildTransfer(chain.client(), { chainId: chain.anvil.chainId, from: sender.address, token: inert, to: newAddress(), amount: 1_000_000n, tag: TAG }).catch((e: unknown) => e)) as InvalidArgumentError
    expect([none.context, none.message]).toEqual([{ token: 'moves nothing on transfer' }, expect.stringContaining('moves nothing on transfer')])
  })

  test("readTransfers' shortfall: what a token kept of what it logged moving to an account, by the transaction's own state; none from a node without prestate traces", async () => {
    // Through the answers' checks, as the server's client reads them (a prestate trace's numeric nonce had failed them).
    const checked = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${chain.anvil.url}` })
    const sender = await chain.user()
    const lying = await deployDishonestToken(chain.anvil, 'TestLyingFeeToken')
    await mintToken(chain.anvil, lying, sender.address, parseUnits('10', 6))
    const to = newAddress()
    const send = async (token: Hex, amount: bigint) =>
      (await sendUnsigned(chain.anvil, sender, { to: token, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, amount] }), value: '0', gasLimit: '200000', chainId: 31337 })).transactionHash
    const lied = await readTransfers(checked, { chainId: chain.anvil.chainId, txHash: await send(lying, 1_000_000n) })
    expect(await lied.shortfall!(lower(lying), lower(to))).toBe(10_000n)
    const honest = await readTransfers(checked, { chainId: chain.anvil.chainId, txHash: await send(chain.asset, 1_000n) })
    expect(await honest.shortfall!(lower(chain.asset), lower(to))).toBe(0n)
    // An honest interest-bearing token, read as the transaction ran: in its block's time, and with its ratio as the
    // transaction saw it after a rebase earlier in the block (read on the state before the block, both had made a
    // shortfall of what the index grew, or of half the amount).
    const indexed = await deployDishonestToken(chain.anvil, 'TestIndexedToken')
    const indexedAbi = [{ type: 'function', name: 'setRatio', stateMutability: 'nonpayable', inputs: [{ name: 'r', type: 'uint256' }], outputs: [] }] as const
    await mintToken(chain.anvil, indexed, sender.address, parseUnits('100000', 6))
    await chain.anvil.testClient.increaseTime({ seconds: 86_400 })
    const grown = await readTransfers(checked, { chainId: chain.anvil.chainId, txHash: await send(indexed, 10_000_000_000n) })
    expect(await grown.shortfall!(lower(indexed), lower(to))).toBe(0n)
    await chain.anvil.testClient.setAutomine(false)
    try {
      await chain.anvil.walletClient.writeContract({ address: indexed, abi: indexedAbi, functionName: 'setRatio', args: [2n * 10n ** 18n] })
      const transfer = chain.anvil.walletClient.sendTransaction({ account: sender, to: indexed, data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to, 1_000_000n] }), gas: 200_000n })
      const hash = await transfer
      await chain.anvil.testClient.mine({ blocks: 1 })
      await chain.anvil.publicClient.waitForTransactionReceipt({ hash })
      const rebased = await readTransfers(checked, { chainId: chain.anvil.chainId, txHash: hash })
      expect(await rebased.shortfall!(lower(indexed), lower(to))).toBe(0n)
    } finally {
      await chain.anvil.testClient.setAutomine(true)
    }
    // A node refusing the trace tells nothing: the logs alone count (undefined), not a failure.
    const proxy = recordingProxy(chain.anvil.url, { refuse: (call) => call.method === 'debug_traceTransaction' })
    try {
      const untraced = await readTransfers(connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${proxy.url}` }), { chainId: chain.anvil.chainId, txHash: lied.txHash as Hex })
      expect(await untraced.shortfall!(lower(lying), lower(to))).toBeUndefined()
    } finally {
      await proxy.stop()
    }
  })

  test('a native transfer sends the value with the tag as data', async () => {
    const sender = await chain.user()
    const treasury = newAddress()
    const amount = parseEther('0.25')
    const [step] = await buildTransfer(chain.client(), { chainId: chain.anvil.chainId, from: sender.address, token: 'native', to: treasury, amount, tag: TAG })
    const t = step!.transaction as EvmTx
    expect(t).toMatchObject({ to: lower(treasury), value: amount.toString(), data: stringToHex(TAG) })
    expect(step!.description).toBe(`Transfer 0.25 ETH to ${treasury}`)
    const receipt = await sendUnsigned(chain.anvil, sender, t)
    expect(receipt.status).toBe('success')
    expect(await chain.anvil.publicClient.getBalance({ address: treasury })).toBe(amount)
    const read = await readTransfers(chain.client(), { chainId: chain.anvil.chainId, txHash: receipt.transactionHash })
    expect(read).toEqual({ txHash: receipt.transactionHash, tag: TAG, from: lower(sender.address), to: lower(treasury), vaultMoves: [], transfers: [{ token: 'native', from: lower(sender.address), to: lower(treasury), amount }], tagsOn: expect.any(Function), coinMovedInside: expect.any(Function), shortfall: expect.any(Function) })
    // The sender's own transfer, read from its input.
    expect(await read.tagsOn!({ from: sender.address, to: treasury })).toEqual([TAG])
    // Its value is the transaction's own, already reported: no call inside it moved any.
    expect(await read.coinMovedInside!()).toEqual([])
  })

  test('a transfer the chain would revert now is a 400 naming the token; sent anyway, the mined revert reports no tag and no transfers', async () => {
    const sender = await chain.user(5n)
    const p = { chainId: chain.anvil.chainId, from: sender.address, token: chain.asset, to: newAddress(), amount: 6n, tag: TAG }
    // Short of the token here; a stream's creation checks the balance first, so there it is the token refusing.
    const refused = await buildTransfer(chain.client(), p).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(InvalidArgumentError)
    // OpenZeppelin's ERC20InsufficientBalance, by its selector: no ABI here names a token's custom errors.
    expect((refused as InvalidArgumentError).context.token).toBe('the transfer reverts (custom error 0xe450d38c)')
    // On a node without simulation, the estimate says the same.
    const simulating = chain.client()
    simulating.state.cannotSimulate.add(chain.anvil.chainId)
    expect(((await buildTransfer(simulating, p).catch((e: unknown) => e)) as InvalidArgumentError).context.token).toBe('the transfer reverts (custom error 0xe450d38c)')
    const transfer = { to: chain.asset, data: `${encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [p.to, 6n] })}${stringToHex(TAG).slice(2)}` as Hex, value: '0', gasLimit: TRANSFER_GAS.toString(), chainId: 31337 }
    const receipt = await sendUnsigned(chain.anvil, sender, transfer)
    expect(receipt.status).toBe('reverted')
    expect(await readTransfers(chain.client(), { chainId: chain.anvil.chainId, txHash: receipt.transactionHash })).toEqual({ txHash: receipt.transactionHash, tag: null, from: lower(sender.address), to: lower(chain.asset), vaultMoves: [], transfers: [], tagsOn: expect.any(Function), coinMovedInside: expect.any(Function), shortfall: expect.any(Function) })
  })

  test('a native transfer to a contract that takes no call with data is refused as an unfit recipient', async () => {
    const sender = await chain.user()
    // TestSmartWallet has receive() and no fallback: a coin transfer carrying the tag reverts there.
    const contract = await deploySmartWallet(chain.anvil, newAddress())
    const refused = await buildTransfer(chain.client(), { chainId: chain.anvil.chainId, from: sender.address, token: 'native', to: contract, amount: 1n, tag: TAG }).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(UnfitRecipientError)
    expect((refused as UnfitRecipientError).reason).toBe('refuses a coin transfer carrying data (the tag): a transfer to it reverts now')
  })

  test('a node that never answers the simulation is 503 then, not asked again for the estimate', async () => {
    const asked: string[] = []
    // Takes every request and answers none.
    const silent = Bun.serve({ hostname: '127.0.0.1', port: 0, idleTimeout: 0, fetch: async (request) => {
      const body = (await request.json()) as { method?: string } | { method?: string }[]
      for (const call of [body].flat()) asked.push(String(call.method))
      await Bun.sleep(30_000)
      return new Response('')
    } })
    try {
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=http://127.0.0.1:${silent.port}`, EVM_RPC_TIMEOUT_MS: '300' })
      const p = { chainId: chain.anvil.chainId, from: newAddress(), token: chain.asset, to: newAddress(), amount: 1n, tag: TAG }
      expect(await buildTransfer(client, p).catch((e: unknown) => e)).toBeInstanceOf(UnavailableError)
      expect(asked.filter((m) => m === 'eth_estimateGas')).toEqual([])
    } finally {
      silent.stop(true)
    }
  })

  test('bad parameters are 400s naming the field; a chain without an RPC is 400', async () => {
    const p = { chainId: chain.anvil.chainId, from: newAddress(), token: chain.asset, to: newAddress(), amount: 1n, tag: TAG }
    await expect(buildTransfer(chain.client(), { ...p, amount: 0n })).rejects.toThrow(InvalidArgumentError)
    await expect(buildTransfer(chain.client(), { ...p, amount: 2n ** 256n })).rejects.toThrow(InvalidArgumentError)
    const bad = await buildTransfer(chain.client(), { ...p, to: '0x1234' }).catch((e) => e)
    expect(bad).toBeInstanceOf(InvalidAddressError)
    expect(bad.context).toHaveProperty('to')
    const noRpc = await buildTransfer(chain.client(), { ...p, chainId: '8453' }).catch((e) => e)
    expect(noRpc).toBeInstanceOf(InvalidArgumentError)
    expect(noRpc.context).toHaveProperty('chainId')
  })
})

describe('readTransfers', () => {
  test('a deposit shows every ERC-20 movement: the asset into the vault and the shares minted', async () => {
    const owner = await chain.user(parseUnits('3', 6))
    const amount = parseUnits('3', 6)
    const shares = await chain.read.previewDeposit(amount)
    const hashes = await chain.sendAll(owner, await build(chain.client(), chain.deposit({ owner, amount })))
    const read = await readTransfers(chain.client(), { chainId: chain.anvil.chainId, txHash: hashes.at(-1)! })
    expect(read.transfers).toEqual([
      { token: lower(chain.asset), from: lower(owner.address), to: lower(chain.vault), amount },
      { token: lower(chain.vault), from: zeroAddress, to: lower(owner.address), amount: shares },
    ])
    expect(read.tag).toStartWith('earn:v1:')
  })

  test("an RPC answering something other than the transaction asked for is 503, not a verdict or a crash", async () => {
    const sender = await chain.user(parseUnits('1', 6))
    const [real] = await chain.sendAll(sender, await buildTransfer(chain.client(), { chainId: chain.anvil.chainId, from: lower(sender.address), token: lower(chain.asset), to: lower(newAddress()), amount: 1n, tag: TAG }))
    const asked = `0x${'cd'.repeat(32)}`
    // A broken endpoint in front of anvil: the two reads of a mined transaction answer `mode`, the rest go through.
    let mode: 'bare' | 'empty' | 'another' | 'preByzantium' = 'bare'
    const broken = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: async (req) => {
        type Call = { id: number; method: string; params: unknown[] }
        const toAnvil = async (call: Call) =>
          (await fetch(chain.anvil.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(call) })).json()
        const answer = async (call: Call) => {
          if (call.method !== 'eth_getTransactionByHash' && call.method !== 'eth_getTransactionReceipt') return toAnvil(call)
          if (mode === 'preByzantium') {
            // The real answers, as a node serves a 2016 receipt: a state root, no status.
            const answer = (await toAnvil(call)) as { result: Record<string, unknown> }
            if (call.method === 'eth_getTransactionReceipt') {
              delete answer.result.status
              answer.result.root = `0x${'11'.repeat(32)}`
            }
            return answer
          }
          if (mode !== 'another') return { jsonrpc: '2.0', id: call.id, result: mode === 'bare' ? '0x' : {} }
          // Another transaction's answers, as a misrouted or caching endpoint might give.
          return toAnvil({ ...call, params: [real] })
        }
        const body = (await req.json()) as Call | Call[]
        return Response.json(Array.isArray(body) ? await Promise.all(body.map(answer)) : await answer(body))
      },
    })
    try {
      const client = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=http://127.0.0.1:${broken.port}` })
      for (const m of ['bare', 'empty', 'another'] as const) {
        mode = m
        const e = await readTransfers(client, { chainId: chain.anvil.chainId, txHash: asked }).catch((x: unknown) => x)
        expect(e, m).toBeInstanceOf(UnavailableError)
        expect((e as UnavailableError).context).toEqual({ chainId: chain.anvil.chainId })
      }
      // A receipt without a status (before Byzantium) is a mined transaction whose outcome is unknown: it attributes nothing.
      mode = 'preByzantium'
      expect(await readTransfers(client, { chainId: chain.anvil.chainId, txHash: real! })).toMatchObject({ txHash: real, tag: null, transfers: [] })
    } finally {
      await broken.stop(true)
    }
  })

  test('with EVM_CONFIRMATIONS, a mined transaction is not found until its block has that many confirmations', async () => {
    const sender = await chain.user()
    const treasury = newAddress()
    const [step] = await buildTransfer(chain.client(), { chainId: chain.anvil.chainId, from: sender.address, token: 'native', to: treasury, amount: 1n, tag: TAG })
    const receipt = await sendUnsigned(chain.anvil, sender, step!.transaction as EvmTx)
    const waiting = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${chain.anvil.url}`, EVM_CONFIRMATIONS: `${chain.anvil.chainId}=3` })
    const read = () => readTransfers(waiting, { chainId: chain.anvil.chainId, txHash: receipt.transactionHash })
    // Its own block is its first confirmation.
    const early = await read().catch((e: unknown) => e)
    expect(early).toBeInstanceOf(NotFoundError)
    expect((early as NotFoundError).context).toEqual({ txHash: `mined in block ${receipt.blockNumber}, 1 of 3 confirmations so far; retry after 2 more block(s)` })
    await chain.anvil.testClient.mine({ blocks: 2 })
    expect((await read()).transfers).toEqual([{ token: 'native', from: lower(sender.address), to: lower(treasury), amount: 1n }])
    // Without the variable, mined is enough.
    expect(connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${chain.anvil.url}` }).confirmations(chain.anvil.chainId)).toBe(1)
  })

  test('EVM_CONFIRMATIONS refuses counts out of range and chains without an RPC, naming the entry', () => {
    const rpc = `${chain.anvil.chainId}=${chain.anvil.url}`
    expect(() => connect({ EVM_RPC_URLS: rpc, EVM_CONFIRMATIONS: `${chain.anvil.chainId}=0` })).toThrow('EVM_CONFIRMATIONS entry 1: the confirmations for chain 31337 must be a whole number from 1 to 1000')
    expect(() => connect({ EVM_RPC_URLS: rpc, EVM_CONFIRMATIONS: `${chain.anvil.chainId}=1001` })).toThrow('from 1 to 1000')
    expect(() => connect({ EVM_RPC_URLS: rpc, EVM_CONFIRMATIONS: `${chain.anvil.chainId}=two` })).toThrow('from 1 to 1000')
    expect(() => connect({ EVM_RPC_URLS: rpc, EVM_CONFIRMATIONS: '8453=12' })).toThrow('EVM_CONFIRMATIONS names chain 8453, which has no RPC in EVM_RPC_URLS')
  })

  test('an unknown hash is 404; a malformed one is 400', async () => {
    await expect(readTransfers(chain.client(), { chainId: chain.anvil.chainId, txHash: `0x${'ab'.repeat(32)}` })).rejects.toThrow(NotFoundError)
    await expect(readTransfers(chain.client(), { chainId: chain.anvil.chainId, txHash: '0x12' })).rejects.toThrow(InvalidArgumentError)
  })
})

describe("one client's transactions cannot fail another's read", () => {
  test("a verify beside three of receipts carrying ~4 MB of logs each reads its own: the batch too large goes again one request at a time", async () => {
    // Runtime code logging 32 KiB 63 times (~16.5M gas): PUSH1 63, then LOG0(0, 0x8000) in a loop down to zero.
    const logBomb = privateKeyToAccount(generatePrivateKey()).address
    await chain.anvil.testClient.setCode({ address: logBomb, bytecode: '0x603f5b6180006000a0600190038060025700' })
    const hostile: Hex[] = []
    for (let i = 0; i < 3; i++)
      hostile.push((await sendUnsigned(chain.anvil, chain.anvil.deployer, { to: logBomb, data: '0x', value: '0', gasLimit: '20000000', chainId: Number(chain.anvil.chainId) })).transactionHash)
    const sender = privateKeyToAccount(generatePrivateKey())
    await chain.anvil.testClient.setBalance({ address: sender.address, value: parseEther('1') })
    const honest = await sendUnsigned(chain.anvil, sender, { to: sender.address, data: '0x', value: '1', gasLimit: '21000', chainId: Number(chain.anvil.chainId) })
    // The server's client (its requests made as a server's are); every read at once.
    const server = connect({ EVM_RPC_URLS: `${chain.anvil.chainId}=${chain.anvil.url}` })
    const [mine, ...theirs] = await Promise.allSettled([honest.transactionHash, ...hostile].map((txHash) => readTransfers(server, { chainId: chain.anvil.chainId, txHash })))
    expect(mine!.status).toBe('fulfilled')
    expect((mine as PromiseFulfilledResult<{ txHash: string }>).value.txHash).toBe(honest.transactionHash)
    // Theirs are read too (their logs are no transfers); what matters is that they did not take the honest read down.
    expect(theirs.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled'])
  })
})

test("a receipt's logged net for an account: in less out of the token's Transfers; a log shaped like a Transfer but not one passed over", () => {
  const token = '0x' + '11'.repeat(20)
  const me = '0x' + '22'.repeat(20)
  const other = '0x' + '33'.repeat(20)
  const topic = (a: string) => `0x${a.slice(2).padStart(64, '0')}`
  const TRANSFER = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef'
  const log = (from: string, to: string, data: string, address = token) => ({ address, topics: [TRANSFER, topic(from), topic(to)], data })
  const word = (n: bigint) => `0x${n.toString(16).padStart(64, '0')}`
  const logs = [
    log(other, me, word(100n)),
    log(me, other, word(7n)),
    // The token's own odd log, shaped like a Transfer to the account: skipped, as viem's strict parsing skips it.
    log(other, me, word(5n) + '00'),
    // Another token's.
    log(other, me, word(1_000n), '0x' + '44'.repeat(20)),
  ]
  expect(loggedNet(logs, token, me)).toBe(93n)
  expect(loggedNet([], token, me)).toBe(0n)
})

test("the storage a transaction found and left as overrides: read-only slots as found in both, a slot absent before was empty, one absent after was emptied; another shape is none", () => {
  const a = `0x${'11'.repeat(20)}` as const
  const slot = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as const
  // Slot 7 only read (a ratio): in the found state, in neither side of the diff.
  const found = { [a]: { balance: '0x1', nonce: 3, storage: { [slot(1)]: slot(5), [slot(2)]: slot(9), [slot(7)]: slot(2) } } }
  const diff = { pre: { [a]: { balance: '0x1', storage: { [slot(1)]: slot(5), [slot(2)]: slot(9) } } }, post: { [a]: { storage: { [slot(1)]: slot(6), [slot(3)]: slot(4) } } } }
  expect(storageBeforeAndAfter(found, diff)).toEqual({
    before: [{ address: a, stateDiff: [{ slot: slot(1), value: slot(5) }, { slot: slot(2), value: slot(9) }, { slot: slot(7), value: slot(2) }, { slot: slot(3), value: slot(0) }] }],
    after: [{ address: a, stateDiff: [{ slot: slot(1), value: slot(6) }, { slot: slot(2), value: slot(0) }, { slot: slot(7), value: slot(2) }, { slot: slot(3), value: slot(4) }] }],
  })
  expect(storageBeforeAndAfter(found, null)).toBeUndefined()
  expect(storageBeforeAndAfter(null, diff)).toBeUndefined()
  expect(storageBeforeAndAfter(found, { pre: {}, post: { [a]: { storage: { [slot(1)]: 'not hex' } } } })).toBeUndefined()
})
