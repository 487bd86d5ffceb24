/**
 * The wallet portfolio as the API shows it, written once as TypeBox schemas: core's types are `Static<>` of
 * them and the server hands the same objects to Elysia for validation and OpenAPI. v1 and v2 share them.
 * Amounts are smallest units as base-10 integer strings (a uint256 does not fit a JSON number).
 */
import { type Static, Type } from '@sinclair/typebox'
import { QueryValue } from '../paging.ts'
import { EcosystemIdSchema, Token } from '../opportunities/schema.ts'

const Units = (description: string) => Type.String({ pattern: '^[0-9]+$', description })
const SignedUnits = (description: string) => Type.String({ pattern: '^-?[0-9]+$', description })

export const TokenBalance = Type.Object(
  {
    chainId: Type.String(),
    address: Type.String({ description: "Display form (EIP-55 on EVM), or `native` for the chain's own coin" }),
    symbol: Type.String(),
    decimals: Type.Integer({ minimum: 0, maximum: 255 }),
    balance: Units('Smallest units held by the wallet, read from the chain now; never 0 (zero balances are left out)'),
  },
  { title: 'TokenBalance' },
)
export type TokenBalance = Static<typeof TokenBalance>

export const ProtocolPosition = Type.Object(
  {
    opportunityId: Type.String(),
    name: Type.String({ description: "The opportunity's name" }),
    chainId: Type.String(),
    protocol: Type.String(),
    vaultAddress: Type.String(),
    receiptToken: Token,
    baseToken: Token,
    shares: Units('Receipt-token smallest units the wallet holds (> 0)'),
    assets: Units("What those shares are worth now in base-token smallest units (ERC-4626 convertToAssets; 1:1 on the sample Solana and TON vaults)"),
  },
  { title: 'ProtocolPosition' },
)
export type ProtocolPosition = Static<typeof ProtocolPosition>

export const ProductEarnings = Type.Object(
  {
    opportunityId: Type.String(),
    chainId: Type.String(),
    baseToken: Token,
    netDeposited: Type.Union([SignedUnits('Deposited minus withdrawn, base-token smallest units; negative when more came out than went in'), Type.Null()], {
      description: "From the vault's own Deposit and Withdraw events for this wallet; null where the chain keeps no such record (Solana, TON), or on EVM while this server has not finished reading a long history (later answers fill it in)",
    }),
    currentValue: Units('The position now, base-token smallest units (0 once fully withdrawn)'),
    earned: Type.Union([SignedUnits('currentValue minus netDeposited; negative for a loss'), Type.Null()], {
      description: 'Null when netDeposited is null',
    }),
  },
  { title: 'ProductEarnings' },
)
export type ProductEarnings = Static<typeof ProductEarnings>

export const UnreadableContract = Type.Object(
  {
    chainId: Type.String(),
    address: Type.String({ description: 'The token or vault, display form' }),
    reason: Type.String({ description: 'What the chain answered instead' }),
  },
  { title: 'UnreadableContract' },
)
export type UnreadableContract = Static<typeof UnreadableContract>

export const WalletHoldings = Type.Object(
  {
    address: Type.String({ description: "The wallet, in its ecosystem's display form" }),
    ecosystem: EcosystemIdSchema,
    tokens: Type.Array(TokenBalance, { description: 'Idle native and catalog-token balances' }),
    protocols: Type.Array(ProtocolPosition, { description: 'Positions in catalog opportunities' }),
    unreadable: Type.Array(UnreadableContract, {
      description:
        "Catalog tokens and vaults the chain answered for but no longer reads as one (EVM: an ERC-20 or ERC-4626, after an upgrade gone wrong or a self-destruct; Solana: an SPL mint; TON: a jetton): what they hold for the wallet is unknown, and missing from tokens, protocols and productsEarnings. Empty as a rule",
    }),
  },
  { title: 'WalletHoldings' },
)
export type WalletHoldings = Static<typeof WalletHoldings>

export const PortfolioResult = Type.Object(
  {
    portfolio: Type.Object({
      productsEarnings: Type.Array(ProductEarnings, { description: 'One entry per opportunity with a position, or with a deposit or withdrawal the vault recorded where the wallet acted on that opportunity through this deployment (a deposit or withdrawal built or verified)' }),
      holdings: Type.Object({ wallets: Type.Array(WalletHoldings) }),
    }),
  },
  { title: 'Portfolio' },
)
export type PortfolioResult = Static<typeof PortfolioResult>

/** The query string as received: parsing it (and naming what does not parse) is core's job. */
export const PortfolioQuery = Type.Object({
  includeProtocolTokens: QueryValue(
    { type: 'boolean', default: false },
    'true or false (default false). When false, receipt tokens are left out of tokens[]: protocols[] already counts them',
  ),
})
export type PortfolioQuery = Static<typeof PortfolioQuery>
