/**
 * What every stream operation needs: its dependencies, the caller's own stream (another organization's
 * is as unknown as a missing one), the ecosystem that owns a chain, and how to show its addresses.
 */
import type { Clock } from '../clock.ts'
import { formatContract } from '../ecosystem.ts'
import { canonicalChainId, type EcosystemRegistry } from '../registry.ts'
import type { StreamRecord } from '../store/schema.ts'
import type { Store } from '../store/store.ts'
import { StreamNotFoundError } from './errors.ts'
import type { DisplayForms } from './view.ts'

export interface StreamDeps {
  store: Store
  ecosystems: EcosystemRegistry
  clock: Clock
  /** The attribution secret (see attribution.ts); funding tags are made under it too. */
  attributionSecret: () => Promise<string>
  /** `STREAM_TREASURIES`: chain id to treasury address, as configured. */
  treasuries: Readonly<Record<string, string>>
  /** `STREAM_REWARD_TOKENS`: chain id to the tokens token streams may reward in, as configured; null: any. */
  rewardTokens?: Readonly<Record<string, readonly string[]>> | null
}

export async function ownStream(deps: Pick<StreamDeps, 'store'>, orgId: string, streamId: string): Promise<StreamRecord> {
  // Ids are lowercase UUIDs; any case finds them, as with opportunities.
  const row = await deps.store.getStream(streamId.toLowerCase())
  if (!row || row.orgId !== orgId) throw new StreamNotFoundError(streamId)
  return row
}

/** Display forms per ecosystem id; a stream of an ecosystem this deployment no longer loads shows what is stored. */
export async function displayForms(deps: Pick<StreamDeps, 'ecosystems'>): Promise<(ecosystem: string) => DisplayForms> {
  const loaded = new Map((await deps.ecosystems.all()).map((e) => [e.plugin.id as string, e.plugin]))
  return (ecosystem) => {
    const plugin = loaded.get(ecosystem)
    if (!plugin) return { address: (canonical) => canonical, chain: (chainId) => chainId }
    return {
      address: (canonical, contract) => (contract ? formatContract(plugin, canonical) : plugin.address.format(canonical)),
      chain: (chainId) => canonicalChainId(plugin, chainId),
    }
  }
}
