/**
 * Which ecosystem a bare wallet address belongs to, told by its form: EVM `0x` + 40 hex, Solana base58 of 32 bytes,
 * TON raw `0:<hex>` or user-friendly base64. The forms do not overlap in practice; should two loaded ecosystems ever
 * accept one string, the first in plugin order (evm, solana, ton) wins, so an answer never depends on timing.
 */
import { addressProblems } from '../addressProblems.ts'
import type { EcosystemRegistry, LoadedEcosystem } from '../registry.ts'
import { UnknownWalletAddressError } from './errors.ts'

export interface ResolvedWallet {
  ecosystem: LoadedEcosystem
  /** Canonical (identity) form. */
  address: string
}

/** Picks among already loaded ecosystems; `field` names the input in a 400. */
export function resolveWallet(loaded: readonly LoadedEcosystem[], input: string, field: string): ResolvedWallet {
  const ecosystem = loaded.find((e) => e.plugin.address.isValid(input))
  if (!ecosystem) throw new UnknownWalletAddressError(field, addressProblems(loaded, input))
  return { ecosystem, address: ecosystem.plugin.address.parse(input) }
}

/** `resolveWallet` over every ecosystem this deployment loads. */
export async function resolveWalletIn(ecosystems: EcosystemRegistry, input: string, field: string): Promise<ResolvedWallet> {
  return resolveWallet(await ecosystems.all(), input.trim(), field)
}
