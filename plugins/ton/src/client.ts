/**
 * The TON client is nothing but a ContractProvider factory: @ton/ton's TonClient, TonClient4 and
 * @ton/sandbox's Blockchain all hand out the same @ton/core `ContractProvider`, so the plugin's reads
 * run unchanged against a toncenter endpoint in production and an in-process chain in tests.
 */
import { type ChainEnv, ApiError, InvalidArgumentError, UnavailableError } from '@earn/core'
import type { Address, ContractProvider, StateInit } from '@ton/core'
import { TonClient } from '@ton/ton'

export type ProviderFactory = (address: Address, init?: StateInit | null) => ContractProvider

export interface TonChainClient {
  provider: ProviderFactory
}

/** Wraps any provider factory (TonClient's, sandbox's, a test double) as the plugin's client. */
export function createTonClient(provider: ProviderFactory): TonChainClient {
  return { provider }
}

/**
 * Reads `TON_API_URL` (a toncenter-style JSON-RPC endpoint) and optional `TON_API_KEY`. Nothing is
 * contacted here; without a URL the server still starts and only TON calls that need the chain fail.
 */
export function connectTon(env: ChainEnv): TonChainClient {
  const endpoint = env.TON_API_URL?.trim()
  const apiKey = env.TON_API_KEY?.trim() || undefined
  let tonClient: TonClient | undefined
  return createTonClient((address, init) => {
    if (!endpoint)
      throw new InvalidArgumentError('TON_API_URL is not configured: this server cannot read the TON chain', {
        TON_API_URL: 'set it to a toncenter-style JSON-RPC endpoint, e.g. https://toncenter.com/api/v2/jsonRPC',
      })
    // A hung endpoint should fail the request as unavailable, not hold it open.
    tonClient ??= new TonClient({ endpoint, apiKey, timeout: 10_000 })
    return tonClient.provider(address, init)
  })
}

/**
 * Both TonClient and the sandbox report a get-method that ran and failed (no such method, a throw in
 * the contract) as "Unable to execute get method. Got exit_code: N"; the sandbox also sets `exitCode`.
 * That is an answer from the contract, not a transport fault, so callers must tell the two apart.
 */
export function getMethodExitCode(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined
  const code = (error as { exitCode?: unknown }).exitCode
  if (typeof code === 'number') return code
  const match = /exit_code:\s*(-?\d+)/.exec(String((error as { message?: unknown }).message ?? ''))
  return match ? Number(match[1]) : undefined
}

/**
 * Runs one chain read; anything that is neither our own error nor a contract's answer means the
 * endpoint could not be asked, which the caller should retry rather than treat as a verdict.
 */
export async function askChain<T>(what: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (e) {
    if (e instanceof ApiError || getMethodExitCode(e) !== undefined) throw e
    throw new UnavailableError(`the TON API did not answer while reading ${what}; retry later`, {}, { cause: e })
  }
}
