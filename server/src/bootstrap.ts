/**
 * First start on an empty embedded store: a demo organization and distributor, so a newcomer can
 * call the API at once. Their keys are printed this once; later starts find the organization and
 * print nothing.
 */
import { type AdminDeps, createFirstOrganization } from '@earn/core'

export async function createDemoIfEmpty(deps: AdminDeps) {
  if (deps.store.engine !== 'sqlite') return undefined
  // A cheap look first: every later start finds an organization and writes nothing.
  if ((await deps.store.listOrganizations()).length > 0) return undefined
  return createFirstOrganization(deps, { name: 'Demo organization', distributorName: 'Demo distributor' })
}

export function demoBanner(demo: NonNullable<Awaited<ReturnType<typeof createDemoIfEmpty>>>, baseUrl: string): string {
  return [
    '',
    'First start: created a demo organization. These keys are shown once; keep them.',
    `  organization    ${demo.orgId}`,
    `  publishable key ${demo.publishableKey}`,
    `  secret key      ${demo.secretKey}`,
    `  distributor id  ${demo.distributorId}`,
    '',
    'Try it:',
    `  curl -s -H 'X-API-Key: ${demo.publishableKey}' '${baseUrl}/v2/membership/?address=0x000000000000000000000000000000000000dEaD&walletEcosystem=evm'`,
    '',
  ].join('\n')
}
