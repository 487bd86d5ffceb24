import { describe, expect, test } from 'bun:test'
import {
  AbiDecodingDataSizeTooSmallError,
  AbiDecodingZeroDataError,
  decodeFunctionResult,
  encodeFunctionData,
  erc20Abi,
  erc4626Abi,
  getAddress,
  toFunctionSelector,
  type Address,
} from 'viem'
import {
  allowanceData,
  approveData,
  balanceOfData,
  decodeUint256,
  depositData,
  maxDepositData,
  maxRedeemData,
  previewDepositData,
  previewRedeemData,
  redeemData,
  SELECTORS,
} from './calldata.ts'
import { classifyRpcError } from './rpc.ts'

const A = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8' as Address
const B = '0x0000000000000000000000000000000000414243' as Address
const MAX = 2n ** 256n - 1n
const amounts = [0n, 1n, 1_000_000n, 2n ** 128n + 7n, MAX]

describe('calldata written by hand equals viem’s', () => {
  test('selectors are the signatures’ hashes', () => {
    expect(SELECTORS as Record<string, string>).toEqual({
      balanceOf: toFunctionSelector('function balanceOf(address)'),
      allowance: toFunctionSelector('function allowance(address,address)'),
      approve: toFunctionSelector('function approve(address,uint256)'),
      deposit: toFunctionSelector('function deposit(uint256,address)'),
      redeem: toFunctionSelector('function redeem(uint256,address,address)'),
      symbol: toFunctionSelector('function symbol()'),
      decimals: toFunctionSelector('function decimals()'),
      maxDeposit: toFunctionSelector('function maxDeposit(address)'),
      previewDeposit: toFunctionSelector('function previewDeposit(uint256)'),
      maxRedeem: toFunctionSelector('function maxRedeem(address)'),
      previewRedeem: toFunctionSelector('function previewRedeem(uint256)'),
    })
  })

  test('every call, for lowercase and checksummed addresses and amounts up to 2^256-1', () => {
    for (const [x, y] of [[A, B], [getAddress(A), getAddress(B)], [B, A]] as const) {
      expect(balanceOfData(x)).toBe(encodeFunctionData({ abi: erc20Abi, functionName: 'balanceOf', args: [x] }))
      expect(allowanceData(x, y)).toBe(encodeFunctionData({ abi: erc20Abi, functionName: 'allowance', args: [x, y] }))
      expect(maxDepositData(x)).toBe(encodeFunctionData({ abi: erc4626Abi, functionName: 'maxDeposit', args: [x] }))
      expect(maxRedeemData(x)).toBe(encodeFunctionData({ abi: erc4626Abi, functionName: 'maxRedeem', args: [x] }))
      for (const n of amounts) {
        expect(previewDepositData(n)).toBe(encodeFunctionData({ abi: erc4626Abi, functionName: 'previewDeposit', args: [n] }))
        expect(previewRedeemData(n)).toBe(encodeFunctionData({ abi: erc4626Abi, functionName: 'previewRedeem', args: [n] }))
        expect(approveData(y, n)).toBe(encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [y, n] }))
        expect(depositData(n, x)).toBe(encodeFunctionData({ abi: erc4626Abi, functionName: 'deposit', args: [n, x] }))
        expect(redeemData(n, x, y)).toBe(encodeFunctionData({ abi: erc4626Abi, functionName: 'redeem', args: [n, x, y] }))
      }
    }
  })

  test('what is not an address or a uint256 is refused, as viem refuses it', () => {
    expect(() => balanceOfData('0x1234' as Address)).toThrow()
    expect(() => approveData(A, -1n)).toThrow()
    expect(() => depositData(MAX + 1n, A)).toThrow()
  })
})

describe('decodeUint256', () => {
  const word = (n: bigint) => `0x${n.toString(16).padStart(64, '0')}` as const

  test('reads the first word, as viem does, ignoring what follows', () => {
    for (const n of amounts) {
      const data = word(n)
      expect(decodeUint256(data)).toBe(decodeFunctionResult({ abi: erc20Abi, functionName: 'balanceOf', data }))
      expect(decodeUint256(`${data}${'ab'.repeat(32)}`)).toBe(n)
    }
  })

  const thrown = (f: () => unknown): unknown => {
    try {
      f()
    } catch (e) {
      return e
    }
  }

  test('no data or too little is viem’s decoding error, which counts as a refusal', () => {
    const empty = thrown(() => decodeUint256('0x'))
    expect(empty).toBeInstanceOf(AbiDecodingZeroDataError)
    expect(thrown(() => decodeUint256(undefined))).toBeInstanceOf(AbiDecodingZeroDataError)
    const short = thrown(() => decodeUint256('0x0102'))
    expect(short).toBeInstanceOf(AbiDecodingDataSizeTooSmallError)
    expect(classifyRpcError(empty)).toBe('refused')
    expect(classifyRpcError(short)).toBe('refused')
  })
})
