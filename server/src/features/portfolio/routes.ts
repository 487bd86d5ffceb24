import { getPortfolio } from '@earn/core'
import type { OperationId } from '@earn/core/metering/costs'
import { Elysia } from 'elysia'
import type { Deps } from '../../deps.ts'
import { ErrorEnvelopeSchema } from '../../http/envelope.ts'
import { operation } from '../../http/operation.ts'
import { PortfolioParams, PortfolioQuery, PortfolioResult } from './model.ts'

const tags = ['Portfolio']

const DESCRIPTION =
  "Read from the chain now, in the wallet's ecosystem, over the catalog's chains: idle native and catalog-token balances " +
  '(tokens, non-zero only; receipt tokens only with includeProtocolTokens=true), positions in catalog opportunities ' +
  '(protocols: shares and their value in the base token) and, per opportunity, net deposited, current value and earned ' +
  "from the vault's own deposit and withdrawal events (null where the chain keeps none, or on EVM while a long history is still being read: later answers fill it in). Amounts are integer strings " +
  'in smallest units. 400 for an address no ecosystem accepts or a bad includeProtocolTokens; 503 when a chain cannot be read.'

/** v1 is an alias of v2: the same handler and envelope under both prefixes, each listed (and metered) on its own. */
export const portfolioRoutes = (deps: Deps) => {
  const catalog = { store: deps.store, ecosystems: deps.ecosystems }
  const options = (id: Extract<OperationId, `portfolio.${string}`>, summary: string) => ({
    params: PortfolioParams,
    ...operation(deps, id, { summary, description: DESCRIPTION, tags, query: PortfolioQuery, responses: { 200: PortfolioResult, 503: ErrorEnvelopeSchema } }),
  })
  return new Elysia()
    .get(
      '/v2/wallet/:address/portfolio',
      ({ params, query, request }) => getPortfolio(catalog, { address: params.address, query, signal: request.signal }),
      options('portfolio.v2', 'Wallet portfolio'),
    )
    .get(
      '/v1/wallet/:address/portfolio',
      ({ params, query, request }) => getPortfolio(catalog, { address: params.address, query, signal: request.signal }),
      options('portfolio.v1', 'Wallet portfolio (v1, same as v2)'),
    )
}
