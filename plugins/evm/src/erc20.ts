/**
 * ERC-20 reads a build needs besides the balance: the allowance (read live, like the balance, and through the
 * same batched and shared path) and the symbol and decimals that make step descriptions readable.
 */
import { cutText, InvalidArgumentError } from '@earn/core'
import { decodeFunctionResult, erc20Abi, formatUnits, type Address, type Hex } from 'viem'
import { format } from './address.ts'
import { allowanceData, approveData, readCall, readUint256, SELECTORS } from './calldata.ts'
import { requirePublicClient, type EvmClient } from './client.ts'
import { ask, chainUnavailable, classifyRpcError } from './rpc.ts'
import { share, shareUnsent } from './shared.ts'

export interface AllowanceParameters {
  chainId: string
  token: Address
  owner: Address
  spender: Address
  /** The request field the token came from, named in a 400. */
  field: string
}

export async function allowance(client: EvmClient, p: AllowanceParameters): Promise<bigint> {
  const publicClient = requirePublicClient(client, p.chainId)
  return shareUnsent(client, p.chainId, publicClient, `${p.chainId}|allowance|${p.token}|${p.owner}|${p.spender}`, () =>
    ask(
      p.chainId,
      () => readUint256(client, p.chainId, publicClient, p.token, allowanceData(p.owner, p.spender)),
      () => {
        throw notErc20(p.chainId, p.token, p.field)
      },
    ),
  )
}

/**
 * Whether the token refuses to move the owner's non-zero allowance for `spender` straight to `amount`, as USDT on
 * Ethereum and its copies do (their `approve` reverts, or returns false, unless the allowance is zero first). Asked
 * with an eth_call of that very approve from the owner, not through Multicall3, whose own allowance is what the
 * token would check there. A build asks only when it finds an allowance that is non-zero and short, which its own
 * exact approvals leave behind only when one was signed and its deposit never was; the usual build asks nothing.
 */
export async function approveRefused(client: EvmClient, p: Omit<AllowanceParameters, 'field'> & { amount: bigint }): Promise<boolean> {
  const publicClient = requirePublicClient(client, p.chainId)
  return ask(
    p.chainId,
    async () => {
      const answer = (await publicClient.request({
        method: 'eth_call',
        params: [{ from: p.owner, to: p.token, data: approveData(p.spender, p.amount) }, 'latest'],
      })) as Hex
      // No return data is a token that returns nothing (USDT itself) and did not revert: it accepted.
      return answer !== '0x' && BigInt(answer.slice(0, 66)) === 0n
    },
    () => true,
  )
}

export function notErc20(chainId: string, token: string, field: string): InvalidArgumentError {
  return new InvalidArgumentError(`token ${format(token)} is not an ERC-20 contract on chain ${chainId}`, {
    [field]: `no ERC-20 at this address on chain ${chainId}`,
  })
}

/** How a token is named to a person: symbol and decimals when the contract has them. */
export interface TokenLabel {
  address: Address
  /** The address as a person sees it (EIP-55), worked out once with the label instead of in every step. */
  display: Address
  symbol?: string
  decimals?: number
}

/**
 * Best effort: a token without `symbol()` (or with a bytes32 one) is still deposited, only described by address.
 * A chain that does not answer still fails the build, as every other read would.
 */
export async function tokenLabel(client: EvmClient, chainId: string, token: Address): Promise<TokenLabel> {
  const publicClient = requirePublicClient(client, chainId)
  // Any answer that is not a symbol (a revert, a bytes32 that fails to decode as a string) just means none.
  const optional = <T>(read: () => Promise<T>) =>
    read().catch((error: unknown) => {
      if (classifyRpcError(error) === 'unavailable') throw chainUnavailable(chainId, error)
      return undefined
    })
  return share(client, `${chainId}|label|${token}`, async () => {
    // Through the batched path with the build's balance and allowance reads: one aggregate3 call for all of them.
    const [symbol, decimals] = await Promise.all([
      optional(async () => {
        const data = await readCall(client, chainId, publicClient, token, SELECTORS.symbol)
        return decodeFunctionResult({ abi: erc20Abi, functionName: 'symbol', data: data ?? '0x' })
      }),
      optional(async () => {
        const value = await readUint256(client, chainId, publicClient, token, SELECTORS.decimals)
        if (value > 255n) throw new Error('not a uint8')
        return Number(value)
      }),
    ])
    return { address: token, display: format(token), symbol: symbol === undefined ? undefined : shownSymbol(symbol), decimals }
  })
}

const MAX_SYMBOL = 32

/**
 * A symbol as a description may show it: the token's contract writes it, so a line break or other control character
 * could stage text of its own in what a person reads before signing ("…\nApproved: nothing"). Those go, and a long
 * one is cut; an empty result is no symbol (the amount is then described by address).
 */
function shownSymbol(symbol: string): string | undefined {
  // Control characters, line and paragraph separators, and the bidirectional marks and overrides that would show
  // the text after them reversed (U+202E); runs of them and of white space become one space.
  const clean = symbol.replace(/[\p{Cc}\p{Zl}\p{Zp}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\s]+/gu, ' ').trim()
  return clean === '' ? undefined : cutText(clean, MAX_SYMBOL)
}

/** "1.5 tUSD", or the smallest units and the address when the token does not say what it is. */
export function describeAmount(amount: bigint, token: TokenLabel): string {
  if (token.symbol === undefined || token.decimals === undefined) return `${amount} base units of token ${token.display}`
  return `${formatUnits(amount, token.decimals)} ${token.symbol}`
}
