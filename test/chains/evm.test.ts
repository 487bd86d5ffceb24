/** The EVM harness itself: what later tests rely on it for (deploys, Multicall3, ERC-4626, teardown). */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { encodeFunctionData, erc20Abi, getAddress, hashMessage, parseUnits, type Address } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import {
  anvilBinary,
  compileContracts,
  CONTRACT_NAMES,
  createPair,
  deploySwapRouter,
  deploySmartWallet,
  deployToken,
  deployVault,
  mintToken,
  MULTICALL3_ADDRESS,
  sendUnsigned,
  setNativeBalance,
  startAnvil,
  testSmartWalletAbi,
  testSwapPairAbi,
  testSwapRouterAbi,
  testVaultAbi,
  type Anvil,
} from './evm.ts'

describe('EVM test chain', () => {
  let anvil: Anvil
  beforeAll(async () => {
    anvil = await startAnvil()
  })
  afterAll(() => anvil?.stop())

  test('anvil answers on its own port with chain 31337', async () => {
    expect(anvil.url).toBe(`http://127.0.0.1:${anvil.port}`)
    expect(await anvil.publicClient.getChainId()).toBe(31337)
    expect(anvil.chainId).toBe('31337')
  })

  test('compiles every test contract, once per process', async () => {
    const artifacts = await compileContracts()
    expect(Object.keys(artifacts).toSorted()).toEqual([...CONTRACT_NAMES].toSorted())
    for (const a of Object.values(artifacts)) expect(a.bytecode.length).toBeGreaterThan(100)
    expect(await compileContracts()).toBe(artifacts)
  })

  test('Multicall3 is installed and viem batches through it', async () => {
    expect(anvil.chain.contracts.multicall3.address).toBe(MULTICALL3_ADDRESS)
    const token = await deployToken(anvil, { decimals: 18, symbol: 'T18' })
    await mintToken(anvil, token, anvil.deployer.address, 7n)
    const [balance, decimals] = await anvil.publicClient.multicall({
      allowFailure: false,
      contracts: [
        { address: token, abi: erc20Abi, functionName: 'balanceOf', args: [anvil.deployer.address] },
        { address: token, abi: erc20Abi, functionName: 'decimals' },
      ],
    })
    expect(balance).toBe(7n)
    expect(decimals).toBe(18)
  })

  test('an ERC-4626 vault over the test token takes a deposit and pays a withdrawal', async () => {
    const user = privateKeyToAccount(generatePrivateKey())
    await anvil.testClient.setBalance({ address: user.address, value: 10n ** 18n })
    const token = await deployToken(anvil)
    const vault = await deployVault(anvil, token)
    await mintToken(anvil, token, user.address, parseUnits('100', 6))

    const send = async (to: Address, data: `0x${string}`) => {
      const hash = await anvil.walletClient.sendTransaction({ account: user, to, data })
      expect((await anvil.publicClient.waitForTransactionReceipt({ hash })).status).toBe('success')
    }
    const amount = parseUnits('40', 6)
    await send(token, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [vault, amount] }))
    await send(vault, encodeFunctionData({ abi: testVaultAbi, functionName: 'deposit', args: [amount, user.address] }))
    const read = anvil.publicClient.readContract
    expect(await read({ address: vault, abi: testVaultAbi, functionName: 'asset' })).toBe(getAddress(token))
    expect(await read({ address: vault, abi: testVaultAbi, functionName: 'balanceOf', args: [user.address] })).toBe(amount)
    await send(vault, encodeFunctionData({ abi: testVaultAbi, functionName: 'withdraw', args: [amount / 2n, user.address, user.address] }))
    expect(await read({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [user.address] })).toBe(parseUnits('80', 6))
  })

  test('a swap router pool prices with the 0.3% fee and swaps through sendUnsigned', async () => {
    const [a, b] = [await deployToken(anvil, { symbol: 'A' }), await deployToken(anvil, { symbol: 'B', decimals: 18 })]
    const router = await deploySwapRouter(anvil)
    const pair = await createPair(anvil, router, a, b, 1_000_000n, 2_000_000n)
    const [r0, r1] = await anvil.publicClient.readContract({ address: pair, abi: testSwapPairAbi, functionName: 'getReserves' })
    const aIsToken0 = a.toLowerCase() < b.toLowerCase()
    expect(aIsToken0 ? [r0, r1] : [r1, r0]).toEqual([1_000_000n, 2_000_000n])
    // Uniswap V2: out = in·997·R_out / (R_in·1000 + in·997)
    const expected = (10_000n * 997n * 2_000_000n) / (1_000_000n * 1000n + 10_000n * 997n)
    const quote = await anvil.publicClient.readContract({ address: router, abi: testSwapRouterAbi, functionName: 'getAmountsOut', args: [10_000n, [a, b]] })
    expect(quote).toEqual([10_000n, expected])

    const user = privateKeyToAccount(generatePrivateKey())
    await setNativeBalance(anvil, user.address, 10n ** 18n)
    await mintToken(anvil, a, user.address, 10_000n)
    const tx = (to: Address, data: `0x${string}`) => ({ to, data, value: '0', gasLimit: '300000', chainId: anvil.chain.id })
    const approve = await sendUnsigned(anvil, user, tx(a, encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [router, 10_000n] })))
    expect(approve.status).toBe('success')
    const deadline = BigInt(Math.floor(Date.now() / 1000) + 600)
    const swap = (min: bigint) =>
      tx(router, encodeFunctionData({ abi: testSwapRouterAbi, functionName: 'swapExactTokensForTokens', args: [10_000n, min, [a, b], user.address, deadline] }))
    // One more than the quote must fail: the minimum output is enforced.
    expect((await sendUnsigned(anvil, user, swap(expected + 1n))).status).toBe('reverted')
    expect((await sendUnsigned(anvil, user, swap(expected))).status).toBe('success')
    const read = anvil.publicClient.readContract
    expect(await read({ address: b, abi: erc20Abi, functionName: 'balanceOf', args: [user.address] })).toBe(expected)
    await expect(
      read({ address: router, abi: testSwapRouterAbi, functionName: 'getAmountsOut', args: [1n, [a, anvil.deployer.address]] }),
    ).rejects.toThrow(/no pair/)
  })

  test('sendUnsigned refuses a transaction built for another chain', async () => {
    const tx = { to: anvil.deployer.address, data: '0x', value: '0', gasLimit: '21000', chainId: 1 }
    await expect(sendUnsigned(anvil, anvil.deployer, tx)).rejects.toThrow(/chain 1/)
  })

  test("the ERC-1271 wallet answers the magic value for its owner's signature only", async () => {
    const owner = privateKeyToAccount(generatePrivateKey())
    const wallet = await deploySmartWallet(anvil, owner.address)
    const hash = hashMessage('hello')
    const isValid = (signature: `0x${string}`) =>
      anvil.publicClient.readContract({ address: wallet, abi: testSmartWalletAbi, functionName: 'isValidSignature', args: [hash, signature] })
    expect(await isValid(await owner.signMessage({ message: 'hello' }))).toBe('0x1626ba7e')
    expect(await isValid(await anvil.deployer.signMessage({ message: 'hello' }))).toBe('0xffffffff')
  })
})

test('stop() ends anvil and frees its port', async () => {
  expect(anvilBinary()).toEndWith('/bin/anvil')
  const anvil = await startAnvil({ multicall3: false })
  expect(await anvil.publicClient.getCode({ address: MULTICALL3_ADDRESS })).toBeUndefined()
  await anvil.stop()
  await expect(fetch(anvil.url, { method: 'POST' })).rejects.toThrow()
})
