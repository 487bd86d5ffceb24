/** An activity row as the API shows it: addresses in their ecosystem's display form, times in ISO 8601. */
import { type Ecosystem, type EcosystemId, formatContract, NATIVE_TOKEN } from '../ecosystem.ts'
import { canonicalChainId } from '../registry.ts'
import type { ActivityRow } from '../store/activity.ts'
import type { Activity } from './schema.ts'

export type PluginsById = ReadonlyMap<string, Ecosystem<EcosystemId, unknown>>

export function toActivity(row: ActivityRow, plugins: PluginsById): Activity {
  const plugin = plugins.get(row.ecosystem)
  // History is shown whatever became of it: a row of an ecosystem this deployment no longer loads, or one the
  // plugin no longer formats, is shown as stored rather than failing the page.
  const shown = (address: string, form: (canonical: string) => string) => {
    if (!plugin || address === NATIVE_TOKEN) return address
    try {
      return form(address)
    } catch {
      return address
    }
  }
  const show = (address: string) => shown(address, (a) => plugin!.address.format(a))
  const showToken = (address: string) => shown(address, (a) => formatContract(plugin!, a))
  const common = {
    id: row.id,
    walletAddress: show(row.wallet),
    walletEcosystem: row.ecosystem as EcosystemId,
    distributorId: row.distributorId ?? '',
    createdAt: new Date(row.createdAt).toISOString(),
  }
  // In its one spelling: a row recorded under an earlier one keeps that stored (an action's tag was signed over it).
  const chainId = row.chainId === null || !plugin ? row.chainId : canonicalChainId(plugin, row.chainId)
  if (row.type === 'signup') return { ...common, type: 'signup', chainId }
  return {
    ...common,
    type: row.type,
    chainId: chainId ?? '',
    opportunityId: row.opportunityId ?? '',
    token: row.token === null ? null : showToken(row.token),
    amount: row.amount,
    txHash: row.txHash,
  }
}
