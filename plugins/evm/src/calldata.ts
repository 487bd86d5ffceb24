/**
 * Calldata for the calls every build makes, written from constant selectors. viem's `encodeFunctionData` and
 * `readContract` look the function up in the ABI and hash its signature (formatAbiItem + keccak256) on every call,
 * and check each address argument through a shared LRU cache; under load that was the largest share of a build's
 * CPU. These functions take only static arguments (addresses and uint256s), so their calldata is the selector
 * followed by one 32-byte word per argument. `calldata.test.ts` pins every encoder and the decoder to viem's.
 */
import { AbiDecodingDataSizeTooSmallError, AbiDecodingZeroDataError, type Address, type Hex, type PublicClient } from 'viem'
import { callBatcher, type EvmClient } from './client.ts'

/** First four bytes of keccak256 of each signature (the test recomputes them). */
export const SELECTORS = {
  balanceOf: '0x70a08231', // balanceOf(address)
  allowance: '0xdd62ed3e', // allowance(address,address)
  approve: '0x095ea7b3', // approve(address,uint256)
  deposit: '0x6e553f65', // deposit(uint256,address)
  redeem: '0xba087652', // redeem(uint256,address,address)
  symbol: '0x95d89b41', // symbol()
  decimals: '0x313ce567', // decimals()
  maxDeposit: '0x402d267d', // maxDeposit(address)
  previewDeposit: '0xef8b30f7', // previewDeposit(uint256)
  maxRedeem: '0xd905777e', // maxRedeem(address)
  previewRedeem: '0x4cdad506', // previewRedeem(uint256)
} as const

const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const MAX_UINT256 = 2n ** 256n - 1n
const ZERO_PAD = '000000000000000000000000'

/** An address as an ABI word: 12 zero bytes, then the address in lowercase (as viem writes it). */
function addressWord(address: Address): string {
  // Callers pass parsed addresses; anything else is a bug here, not a caller's mistake to report as a 400.
  if (!ADDRESS.test(address)) throw new Error(`not an EVM address: ${address}`)
  return ZERO_PAD + address.slice(2).toLowerCase()
}

function uintWord(value: bigint): string {
  if (value < 0n || value > MAX_UINT256) throw new Error(`not a uint256: ${value}`)
  return value.toString(16).padStart(64, '0')
}

export const balanceOfData = (owner: Address): Hex => `${SELECTORS.balanceOf}${addressWord(owner)}`

export const allowanceData = (owner: Address, spender: Address): Hex =>
  `${SELECTORS.allowance}${addressWord(owner)}${addressWord(spender)}`

export const approveData = (spender: Address, amount: bigint): Hex =>
  `${SELECTORS.approve}${addressWord(spender)}${uintWord(amount)}`

/** ERC-4626 `deposit(assets, receiver)`. */
export const depositData = (assets: bigint, receiver: Address): Hex =>
  `${SELECTORS.deposit}${uintWord(assets)}${addressWord(receiver)}`

/** ERC-4626 `redeem(shares, receiver, owner)`. */
export const redeemData = (shares: bigint, receiver: Address, owner: Address): Hex =>
  `${SELECTORS.redeem}${uintWord(shares)}${addressWord(receiver)}${addressWord(owner)}`

/** ERC-4626 `maxDeposit(receiver)` and `maxRedeem(owner)`: what the vault takes from this wallet now. */
export const maxDepositData = (receiver: Address): Hex => `${SELECTORS.maxDeposit}${addressWord(receiver)}`
export const maxRedeemData = (owner: Address): Hex => `${SELECTORS.maxRedeem}${addressWord(owner)}`

/** ERC-4626 `previewDeposit(assets)` and `previewRedeem(shares)`: what the call would mint or pay now. */
export const previewDepositData = (assets: bigint): Hex => `${SELECTORS.previewDeposit}${uintWord(assets)}`
export const previewRedeemData = (shares: bigint): Hex => `${SELECTORS.previewRedeem}${uintWord(shares)}`

/**
 * A call's `uint256` return value. Like viem's decoder it reads the first word and ignores what follows, and it
 * throws viem's own errors for no data or too little, so `classifyRpcError` calls both a refusal (no contract
 * there, or one without that function), as it does for `readContract`.
 */
export function decodeUint256(data: Hex | undefined): bigint {
  if (data === undefined || data === '0x') throw new AbiDecodingZeroDataError()
  if (data.length < 66)
    throw new AbiDecodingDataSizeTooSmallError({
      data,
      params: [{ type: 'uint256' }],
      size: Math.floor((data.length - 2) / 2),
    })
  return BigInt(data.slice(0, 66))
}

/**
 * A view call's return data (`undefined` when empty): through the chain's Multicall3 batcher where its public
 * client batches (concurrent calls leave as one aggregate3 call), else one eth_call by viem's `call`.
 */
export async function readCall(client: EvmClient, chainId: string, publicClient: PublicClient, to: Address, data: Hex): Promise<Hex | undefined> {
  const batcher = callBatcher(client, chainId, publicClient)
  return batcher ? batcher.call(to, data) : (await publicClient.call({ to, data })).data
}

/** A view call answering one uint256 (see `readCall`). */
export async function readUint256(client: EvmClient, chainId: string, publicClient: PublicClient, to: Address, data: Hex): Promise<bigint> {
  return decodeUint256(await readCall(client, chainId, publicClient, to, data))
}
