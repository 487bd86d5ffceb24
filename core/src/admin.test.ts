/** Administration against a real SQLite file, refused where SQLite itself refuses (a trigger), not by a double. */
import { afterEach, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createDistributor, createFirstOrganization, createOrganization, issueKey, revokeKey, rotateKey, setKeyBudgets } from './admin.ts'
import { manualClock } from './clock.ts'
import { InvalidArgumentError } from './errors.ts'
import { createStore, type Store } from './store/store.ts'

const dirs: string[] = []
const stores: Store[] = []
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close()
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

async function fileStore() {
  const dir = mkdtempSync(join(tmpdir(), 'earn-admin-'))
  dirs.push(dir)
  const path = join(dir, 'earn.sqlite')
  const open = async () => {
    const store = createStore({ engine: 'sqlite', path })
    stores.push(store)
    await store.migrate(0)
    return store
  }
  return { path, open }
}

const clock = manualClock(Date.UTC(2026, 10, 22))

test('an organization whose second key cannot be written is not created at all: no organization, no key', async () => {
  const { path, open } = await fileStore()
  const store = await open()
  const other = new Database(path)
  other.exec("create trigger refuse_secret before insert on api_keys when new.kind = 'secret' begin select raise(abort, 'refused'); end")
  other.close()
  await expect(createOrganization({ store, clock }, { name: 'Acme' })).rejects.toThrow(/refused/)
  expect(await store.listOrganizations()).toEqual([])
  const keys = new Database(path, { readonly: true })
  expect(keys.query('select count(*) as n from api_keys').get()).toEqual({ n: 0 })
  keys.close()
})

test('the first organization is made once, whoever asks at the same time; later asks make none', async () => {
  // One connection: two in one process would block each other's thread (bun:sqlite waits synchronously); across
  // processes SQLite's write lock, taken by the transaction's BEGIN IMMEDIATE, orders them the same way.
  const { open } = await fileStore()
  const a = await open()
  const made = await Promise.all(
    [0, 1, 2, 3].map((i) => createFirstOrganization({ store: a, clock }, { name: `Demo ${i}`, distributorName: 'Demo distributor' })),
  )
  const created = made.filter((m) => m !== undefined)
  expect(created).toHaveLength(1)
  expect((await a.listOrganizations()).map((o) => o.id)).toEqual([created[0]!.orgId])
  expect((await a.listDistributors(created[0]!.orgId)).map((d) => d.id)).toEqual([created[0]!.distributorId])
  expect((await a.listKeys(created[0]!.orgId)).map((k) => k.kind).sort()).toEqual(['publishable', 'secret'])
})

test('a key is issued only with budgets that are whole numbers of cost units', async () => {
  const { open } = await fileStore()
  const store = await open()
  const { orgId } = await createOrganization({ store, clock }, { name: 'Acme' })
  for (const hourlyBudget of [123456789012345678901234, 1.5, -1]) {
    const e = await issueKey({ store, clock }, orgId, 'secret', { hourlyBudget }).catch((x: unknown) => x)
    expect(e).toBeInstanceOf(InvalidArgumentError)
    expect((e as InvalidArgumentError).context).toHaveProperty('hourlyBudget')
  }
  expect((await store.listKeys(orgId)).length).toBe(2)
  expect((await issueKey({ store, clock }, orgId, 'secret', { hourlyBudget: 5 })).key).toStartWith('sk_live_')
})

test('a rotation whose revoke of the old key fails takes back the new key, which nobody was shown: one live key of the kind', async () => {
  const { path, open } = await fileStore()
  const store = await open()
  const { orgId, secretKeyId } = await createOrganization({ store, clock }, { name: 'Acme' })
  const other = new Database(path)
  other.exec(`create trigger refuse_revoke before update of revoked_at on api_keys when old.id = '${secretKeyId}' begin select raise(abort, 'disk I/O'); end`)
  other.close()
  await expect(rotateKey({ store, clock }, { keyId: secretKeyId })).rejects.toThrow(/disk I\/O/)
  const live = (await store.listKeys(orgId)).filter((k) => k.revokedAt === null)
  expect(live.map((k) => k.id).sort()).toEqual([secretKeyId, (await store.listKeys(orgId)).find((k) => k.kind === 'publishable')!.id].sort())
})

test('a rotation the store fails part-way writes nothing: the old key stays live and no new one is left beside it', async () => {
  // Every revoke fails (a store gone mid-way), the taking back of a new key included: written apart, the new key had
  // stayed live, shown to no one (an audit cut PostgreSQL between the two writes).
  for (const trigger of ['before update of revoked_at on api_keys', 'before insert on api_keys']) {
    const { path, open } = await fileStore()
    const store = await open()
    const { orgId, secretKeyId } = await createOrganization({ store, clock }, { name: 'Acme' })
    const before = (await store.listKeys(orgId)).map((k) => ({ id: k.id, revokedAt: k.revokedAt }))
    const other = new Database(path)
    other.exec(`create trigger refuse ${trigger} begin select raise(abort, 'disk I/O'); end`)
    other.close()
    await expect(rotateKey({ store, clock }, { keyId: secretKeyId })).rejects.toThrow(/disk I\/O/)
    expect((await store.listKeys(orgId)).map((k) => ({ id: k.id, revokedAt: k.revokedAt }))).toEqual(before)
  }
})

test('organization and distributor names are one line of at most 200 characters', async () => {
  const { open } = await fileStore()
  const store = await open()
  const { orgId } = await createOrganization({ store, clock }, { name: 'Acme' })
  for (const name of ['A\nid=org_fake name=Evil', 'Red\u001b[31m', 'Del\u007f', 'x'.repeat(201)]) {
    const org = await createOrganization({ store, clock }, { name }).catch((x: unknown) => x)
    expect(org).toBeInstanceOf(InvalidArgumentError)
    expect(Object.keys((org as InvalidArgumentError).context)).toEqual(['name'])
    expect(await createDistributor({ store, clock }, { orgId, name }).catch((x: unknown) => x)).toBeInstanceOf(InvalidArgumentError)
  }
  expect((await store.listOrganizations()).map((o) => o.name)).toEqual(['Acme'])
  expect(await store.listDistributors(orgId)).toEqual([])
  // Surrounding whitespace, tabs or newlines included, is trimmed first; 200 characters (emoji count as one) is fine.
  expect((await createOrganization({ store, clock }, { name: ` ${'é'.repeat(199)}\u{1F600}\n` })).orgId).toStartWith('org_')
})

test("a revoked key's budgets cannot be set (it answers no request), as it cannot be rotated; a live key's can", async () => {
  const store = await (await fileStore()).open()
  const org = await createOrganization({ store, clock }, { name: 'Budgets' })
  const live = await setKeyBudgets({ store, clock }, { key: org.publishableKey }, { hourlyBudget: 5 })
  expect(live.hourlyBudget).toBe(5)
  await revokeKey({ store, clock }, { key: org.publishableKey })
  const refused = await setKeyBudgets({ store, clock }, { key: org.publishableKey }, { hourlyBudget: 7 }).catch((e: unknown) => e)
  expect(refused).toBeInstanceOf(InvalidArgumentError)
  expect((refused as InvalidArgumentError).message).toBe("a revoked key's budgets cannot be set: it answers no request")
  expect((await store.listKeys(org.orgId)).find((k) => k.kind === 'publishable')?.hourlyBudget).toBe(5)
})
