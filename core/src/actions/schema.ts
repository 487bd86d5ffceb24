/**
 * The action endpoints' bodies and results, written once: core's parameter types are `Static<>` of
 * these and the server validates and documents with the same objects.
 */
import { type Static, Type } from '@sinclair/typebox'

const Address = (description: string) => Type.String({ minLength: 1, maxLength: 200, description })
const Amount = (description: string) => Type.String({ minLength: 1, maxLength: 100, description, examples: ['1000000'] })
const DistributorId = Type.String({ minLength: 1, maxLength: 64, description: 'Distributor the action is attributed to' })
const SlippageBps = Type.Integer({ minimum: 0, maximum: 10_000, description: 'Basis points; default 50; used when a swap is involved' })

export const DEFAULT_SLIPPAGE_BPS = 50

export const DEFAULT_MAX_PRICE_IMPACT_BPS = 1000

const MaxPriceImpactBps = Type.Integer({
  minimum: 0,
  maximum: 10_000,
  description: `Basis points; default ${DEFAULT_MAX_PRICE_IMPACT_BPS}; used when a swap is involved: the most the swap may move its pool's price against the wallet (10000: no bound). The swap step's metadata says the impact as priceImpactBps`,
})

export const DepositBody = Type.Object({
  userAddress: Address('Depositing wallet, in any form its ecosystem accepts; must be a member'),
  tokenIn: Address('Token deposited: a deposit token of the opportunity, or in swap mode any routable token'),
  amount: Amount('Amount of tokenIn in smallest units, a base-10 integer string greater than 0'),
  distributorId: DistributorId,
  mode: Type.Optional(Type.Union([Type.Literal('direct'), Type.Literal('swap')], { description: 'direct (default) or swap' })),
  slippageBps: Type.Optional(SlippageBps),
  maxPriceImpactBps: Type.Optional(MaxPriceImpactBps),
  referralCode: Type.Optional(Type.String({ maxLength: 64, description: 'Recorded with the action and shown by verify' })),
})
export type DepositBody = Static<typeof DepositBody>

export const WithdrawBody = Type.Object({
  userAddress: Address('Withdrawing wallet; must be a member'),
  amount: Amount('Vault shares to redeem, in smallest units, a base-10 integer string greater than 0'),
  distributorId: DistributorId,
  tokenOut: Type.Optional(Address('Token to receive; default the base token, another one only where swaps are enabled')),
  slippageBps: Type.Optional(SlippageBps),
  maxPriceImpactBps: Type.Optional(MaxPriceImpactBps),
})
export type WithdrawBody = Static<typeof WithdrawBody>

export const UnsignedTransactionSchema = Type.Object(
  {
    type: Type.Union([Type.Literal('approve'), Type.Literal('swap'), Type.Literal('deposit'), Type.Literal('withdraw')]),
    transaction: Type.Record(Type.String(), Type.Unknown(), {
      description:
        "The ecosystem's unsigned form. EVM: {to, data, value, gasLimit, chainId}, value and gasLimit decimal strings (convert them: BigInt for viem, hex for eth_sendTransaction, where gasLimit is `gas`), chainId a number; Solana: {serializedTransaction}; TON: {validUntil, messages}",
    }),
    description: Type.String(),
    metadata: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { title: 'UnsignedTransaction' },
)

export const ActionResult = Type.Object({
  actionId: Type.String({ description: 'UUID of the recorded action; the attribution tag names it' }),
  transactions: Type.Array(UnsignedTransactionSchema, { description: 'In signing order' }),
})
export type ActionResult = Static<typeof ActionResult>

export const VerifyQuery = Type.Object({
  chainId: Type.String({ minLength: 1, maxLength: 64, description: 'Chain of the transaction (EVM: decimal chain id; Solana may be CAIP-2, 39 characters)' }),
  txHash: Type.String({ minLength: 1, maxLength: 200, description: "Transaction hash in the chain's own form (TON: the wallet transaction's hash, or that of the signed external message TON Connect answers)" }),
})
export type VerifyQuery = Static<typeof VerifyQuery>

const Nullable = (description: string) => Type.Union([Type.String(), Type.Null()], { description })

export const VerifyResult = Type.Object({
  tag: Type.String({ description: 'The attribution tag found in the transaction' }),
  verified: Type.Boolean({
    description:
      "True when the tag is ours, its MAC holds for the sender and chain, the sender is the wallet the action was built for, and (EVM) the transaction called the action's vault, which reported a deposit (withdrawal) of more than zero shares for that wallet",
  }),
  metadata: Type.Object({
    distributorId: Nullable("From the tag; null when the tag does not parse or is not an action's (a stream's funding tag, earn:v1:stream:)"),
    actionId: Nullable("From the tag; null when the tag does not parse or is not an action's (a stream's funding tag, earn:v1:stream:)"),
    opportunityId: Nullable('Of the action the tag names; null when no such action was built here'),
    referralCode: Type.Optional(Type.String({ description: "Shown to the action's own organization only" })),
  }),
})
export type VerifyResult = Static<typeof VerifyResult>
