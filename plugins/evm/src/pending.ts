/** Capabilities of issue 7 not written yet; each helper replaces its stub with a module of its own. */
import { ApiError } from '@earn/core'

const pending = (what: string) => async (..._args: unknown[]): Promise<never> => {
  throw new ApiError('INTERNAL', `evm: ${what} is not implemented yet`)
}

export const assets = pending('vault share valuation')
export const flows = pending('vault flows')
export const buildTransfer = pending('transfer building')
export const readTransfers = pending('transfer reading')
