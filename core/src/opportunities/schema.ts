/**
 * The opportunity as the API shows it and the catalog file the operator imports, written once as
 * TypeBox schemas: core's types are `Static<>` of them and the server hands the same objects to
 * Elysia for validation and OpenAPI.
 *
 * No `format` keywords: TypeBox checks formats only when a format registry knows them, and core
 * validates the catalog without Elysia's; patterns say the same thing everywhere.
 */
import { type Static, type TLiteral, Type } from '@sinclair/typebox'
import { LimitQuery, PageQuery, QueryValue } from '../paging.ts'
import { ECOSYSTEM_IDS } from '../ecosystem.ts'

export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'

// A tuple of literals (not an array of their union), which is the form Elysia's types unwrap.
type Literals<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K]> }
export const EcosystemIdSchema = Type.Union(ECOSYSTEM_IDS.map((id) => Type.Literal(id)) as Literals<typeof ECOSYSTEM_IDS>, {
  description: `One of ${ECOSYSTEM_IDS.join(', ')}`,
})

const StepsType = Type.Union([Type.Literal('instant'), Type.Literal('complex')], {
  description: 'instant: one transaction; complex: a request followed by a later claim',
})

export const TransactionalProperties = Type.Object({ depositStepsType: StepsType, redeemStepsType: StepsType })

export const Token = Type.Object(
  {
    address: Type.String({ description: 'Token address in the ecosystem\'s display form (EIP-55 on EVM)' }),
    symbol: Type.String(),
    decimals: Type.Integer({ minimum: 0, maximum: 255 }),
    chainId: Type.String(),
  },
  { title: 'Token' },
)
export type Token = Static<typeof Token>

export const Opportunity = Type.Object(
  {
    id: Type.String({ pattern: UUID_PATTERN, description: 'UUID; used in the action paths' }),
    name: Type.String(),
    description: Type.Optional(Type.String()),
    ecosystem: EcosystemIdSchema,
    chainId: Type.String({ description: 'Chain id as a string (EVM: decimal EIP-155 id)' }),
    protocol: Type.String(),
    vaultAddress: Type.String(),
    baseToken: Token,
    receiptToken: Token,
    depositTokens: Type.Array(Token),
    tvl: Type.Number({ description: 'Total value locked in USD, from totalAssets and the catalog price of the base token' }),
    estimatedApr: Type.Number({ description: 'Percent: 8.5 means 8.5%' }),
    minDepositAmountUsd: Type.Number(),
    swapDirectEnabled: Type.Boolean({ description: 'mode=direct is accepted' }),
    swapRouteEnabled: Type.Boolean({ description: 'mode=swap is accepted' }),
    transactionalProperties: TransactionalProperties,
    totalAssets: Type.String({ description: 'Base-token smallest units held by the vault, read from the chain' }),
    refreshedAt: Type.String({ description: 'When the chain facts were last read (ISO 8601)' }),
  },
  { title: 'Opportunity' },
)
export type Opportunity = Static<typeof Opportunity>

export const Pagination = Type.Object(
  {
    page: Type.Integer({ minimum: 1 }),
    limit: Type.Integer({ minimum: 1 }),
    total: Type.Integer({ minimum: 0 }),
    totalPages: Type.Integer({ minimum: 0 }),
    hasNext: Type.Boolean(),
    hasPrevious: Type.Boolean(),
  },
  { title: 'Pagination' },
)
export type Pagination = Static<typeof Pagination>

export const OpportunityList = Type.Object({
  opportunities: Type.Array(Opportunity),
  total: Type.Integer({ minimum: 0 }),
  pagination: Pagination,
})
export type OpportunityList = Static<typeof OpportunityList>

export const OpportunityResult = Type.Object({ opportunity: Opportunity })
export type OpportunityResult = Static<typeof OpportunityResult>

export const DEFAULT_LIMIT = 100
export const MAX_LIMIT = 500

/** The list's query string, as received: parsing it (and naming what does not parse) is core's job. */
export const OpportunityListQuery = Type.Object({
  chainIds: Type.Optional(Type.String({ description: 'Comma-separated chain ids, e.g. 1,8453' })),
  depositToken: Type.Optional(Type.String({ description: 'Token address; on EVM lowercase, uppercase or EIP-55 mixed case (its checksum must hold)' })),
  tvlGreaterThan: QueryValue({ type: 'number' }, 'USD number; only opportunities with a larger TVL'),
  page: PageQuery,
  limit: LimitQuery(MAX_LIMIT, DEFAULT_LIMIT),
})
export type OpportunityListQuery = Static<typeof OpportunityListQuery>

// ---------------------------------------------------------------------------------------------------------------
// The catalog file

const TokenSymbol = Type.String({ minLength: 1, maxLength: 32 })

const CatalogToken = Type.Object(
  {
    address: Type.String({ minLength: 1 }),
    symbol: TokenSymbol,
    decimals: Type.Integer({ minimum: 0, maximum: 255 }),
    chainId: Type.Optional(Type.String({ description: "Defaults to the opportunity's chain" })),
  },
  { additionalProperties: false },
)

/** The chain knows a vault's tokens and decimals but not what people call them: the file names them. */
const CatalogVaultToken = Type.Object(
  {
    symbol: TokenSymbol,
    address: Type.Optional(Type.String({ minLength: 1, description: 'When given, must match what the chain says' })),
    decimals: Type.Optional(Type.Integer({ minimum: 0, maximum: 255 })),
  },
  { additionalProperties: false },
)

export const CatalogEntry = Type.Object(
  {
    id: Type.String({ pattern: UUID_PATTERN }),
    // Something a person can read: not only spaces.
    name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    ecosystem: Type.String(),
    chainId: Type.String({ minLength: 1, maxLength: 64 }),
    protocol: Type.String({ minLength: 1, maxLength: 100, pattern: '\\S' }),
    vaultAddress: Type.String({ minLength: 1 }),
    baseToken: CatalogVaultToken,
    receiptToken: CatalogVaultToken,
    depositTokens: Type.Array(CatalogToken, { minItems: 1 }),
    // Bounded so that tvl stays a finite number even for a uint256 of assets (2^256 x 1e15 is about 1e92).
    baseTokenPriceUsd: Type.Number({ minimum: 0, maximum: 1e15, description: 'USD price of one whole base token; tvl = totalAssets x price' }),
    estimatedApr: Type.Number({ minimum: 0 }),
    minDepositAmountUsd: Type.Number({ minimum: 0 }),
    swapDirectEnabled: Type.Boolean(),
    swapRouteEnabled: Type.Boolean(),
    transactionalProperties: TransactionalProperties,
    eventsFromBlock: Type.Optional(
      Type.Integer({
        minimum: 0,
        // A block number a number holds exactly (1e300 passes as an integer, and no chain is past its head).
        maximum: Number.MAX_SAFE_INTEGER,
        description:
          "EVM: the vault's deployment block (or any block before its first deposit); the portfolio scans the vault's events from there instead of from block 0",
      }),
    ),
  },
  { additionalProperties: false },
)
export type CatalogEntry = Static<typeof CatalogEntry>

export const CatalogFile = Type.Object(
  {
    description: Type.Optional(Type.String()),
    opportunities: Type.Array(CatalogEntry),
  },
  { additionalProperties: false },
)
export type CatalogFile = Static<typeof CatalogFile>

/** A catalog entry after import: addresses canonical, every deposit token with its chain id. */
export type Listing = Omit<CatalogEntry, 'ecosystem' | 'depositTokens'> & {
  ecosystem: (typeof ECOSYSTEM_IDS)[number]
  depositTokens: (Omit<Static<typeof CatalogToken>, 'chainId'> & { chainId: string })[]
}

/** What the chain said about the vault at the last refresh (JSON-ready: amounts as decimal strings). */
export interface ChainFacts {
  baseToken: string
  receiptToken: string
  decimals: number
  /** True where the chain states no decimals for the base token and `decimals` are the file's (VaultState.decimalsAssumed). */
  decimalsFromFile?: true
  /** Absent where the chain does not say, and in facts stored before it was read. */
  receiptDecimals?: number
  totalAssets: string
  /** The deposit tokens' decimals as the chain says (null: no token there); absent where not read. */
  tokenDecimals?: Record<string, number | null>
}
