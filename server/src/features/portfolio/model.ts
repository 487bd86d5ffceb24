/** The portfolio's HTTP schemas: core's schema objects (one source for validation, types and OpenAPI) plus the path. */
import { t } from 'elysia'

export { PortfolioQuery, PortfolioResult } from '@earn/core/portfolio/schema'

export const PortfolioParams = t.Object({
  address: t.String({ description: 'Wallet address: EVM 0x (lowercase, uppercase, or EIP-55 mixed case with its checksum), Solana base58, or TON raw or user-friendly; the form tells the ecosystem' }),
})
