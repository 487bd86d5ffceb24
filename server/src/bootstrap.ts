/**
 * First start on an empty embedded store: a demo organization and distributor, so a newcomer can
 * call the API at once. Their keys are printed this once; later starts find the organization and
 * print nothing.
 */
import { type AdminDeps, createDistributor, createOrganization } from '@earn/core'

export async function createDemoIfEmpty(deps: AdminDeps) {
  if (deps.store.engine !== 'sqlite') return undefined
  if ((await deps.store.listOrganizations()).length > 0) return undefined
  const org = await createOrganization(deps, { name: 'Demo organization' })
  const { distributorId } = await createDistributor(deps, { orgId: org.orgId, name: 'Demo distributor' })
  return { ...org, distributorId }
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
