/**
 * `bun run cli ...`: administers the deployment named by the environment (the same store
 * `bun run start` uses), safe to run while servers are up. Every command takes `--json`.
 */
import {
  type AdminDeps,
  ApiError,
  ConfigError,
  type Config,
  createDistributor,
  createOrganization,
  type EcosystemRegistry,
  type LoadedEcosystem,
  findKey,
  formatContract,
  importCatalog,
  InvalidArgumentError,
  issueKey,
  KEY_KINDS,
  maskKeys,
  type KeyKind,
  nameProblem,
  NotFoundError,
  parseConfig,
  revokeKey,
  rotateKey,
  setKeyBudgets,
  setOrganizationBudgets,
  setOpportunityDelisted,
  quoted,
  storeUnavailable,
  systemClock,
  type Tier,
} from '@earn/core'
import { createReadStream, statSync, writeSync } from 'node:fs'
import { resolve } from 'node:path'
import { migrateStore, openStore, StoreNeedsMigrationError } from './compose.ts'
import { loadEcosystems } from './ecosystems.ts'
import { firstDuplicateKey } from './duplicateKeys.ts'

const USAGE = `usage: bun run cli <command> [options] [--json]

  org create --name N [--tier standard|premium] [--hourly-budget N] [--monthly-budget N|none]
  org list
  org budget --org ORG_ID [--hourly-budget N] [--monthly-budget N|none]
      (the organization's budgets: its keys' unless set on a key)
  distributor create --org ORG_ID [--name N]
  distributor list --org ORG_ID
  key create --org ORG_ID --kind publishable|secret [--hourly-budget N] [--monthly-budget N]
  key list --org ORG_ID
  key rotate (--id KEY_ID | --key KEY)
  key revoke (--id KEY_ID | --key KEY)
  key budget (--id KEY_ID | --key KEY) [--hourly-budget N|default] [--monthly-budget N|default]
      (default: use the organization's budget again)
  opportunity import FILE      load or update the catalog from a JSON file (see README, "Catalog")
  opportunity list
  opportunity delist ID        off the list and closed to deposits (running servers' builds within 2 s); holders still withdraw, past actions verify
  opportunity relist ID        list it again (an import never changes either)
  store migrate                upgrade the store's schema to this release's: one-way (an older release refuses the
                               store after it), so back it up first; other commands refuse a store of an older schema

Environment: DATABASE_URL (PostgreSQL) or DATA_DIR (embedded SQLite, default ./.data), as for bun run start;
opportunity import also reads the chains (EVM_RPC_URLS, ...) to fill in what they know.`

export class UsageError extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Whether the command only reads: one that writes may have been carried out when the store's answer was lost. */
export const onlyReads = (command: string): boolean => COMMANDS[command]?.reads === true

type Flags = Record<string, string | true>

export function parseArgs(argv: string[]): { words: string[]; flags: Flags } {
  const words: string[] = []
  // No prototype: `--constructor` or `--__proto__` is an option name like any other (and unknown).
  const flags: Flags = Object.create(null)
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (!a.startsWith('--')) {
      words.push(a)
      continue
    }
    const [name, inline] = a.slice(2).split(/=(.*)/s, 2) as [string, string | undefined]
    // A second value would replace the first: `key revoke --id A --id B` revoking only B, and saying nothing.
    if (Object.hasOwn(flags, name) && name !== 'json') throw new UsageError(`--${name} is given twice; give it once (run the command once for each value)`)
    if (inline !== undefined) flags[name] = inline
    // A switch: the word after it is the command's (`opportunity import --json FILE`), never its value.
    else if (name === 'json') flags[name] = true
    else if (argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('--')) flags[name] = argv[++i]!
    else flags[name] = true
  }
  return { words, flags }
}

/**
 * Each command's options (those it cannot run without among them), whether it names a key, and the word that follows
 * it: anything else is a usage error, never silently dropped, and told before the store is opened.
 */
const COMMANDS: Record<string, { options: string[]; required?: string[]; keyRef?: true; budget?: true; operands?: { name: string; what: string; uuid?: true }; reads?: true }> = {
  'org create': { options: ['name', 'tier', 'hourly-budget', 'monthly-budget'], required: ['name'] },
  'org list': { options: [], reads: true },
  'org budget': { options: ['org', 'hourly-budget', 'monthly-budget'], required: ['org'], budget: true },
  'distributor create': { options: ['org', 'name'], required: ['org'] },
  'distributor list': { options: ['org'], required: ['org'], reads: true },
  'key create': { options: ['org', 'kind', 'hourly-budget', 'monthly-budget'], required: ['org', 'kind'] },
  'key list': { options: ['org'], required: ['org'], reads: true },
  'key rotate': { options: ['id', 'key'], keyRef: true },
  'key revoke': { options: ['id', 'key'], keyRef: true },
  'key budget': { options: ['id', 'key', 'hourly-budget', 'monthly-budget'], keyRef: true, budget: true },
  'opportunity import': { options: [], operands: { name: 'FILE', what: 'the catalog file' } },
  'opportunity list': { options: [], reads: true },
  'opportunity delist': { options: [], operands: { name: 'ID', what: 'the opportunity id', uuid: true } },
  'opportunity relist': { options: [], operands: { name: 'ID', what: 'the opportunity id', uuid: true } },
  'store migrate': { options: [] },
}

/** Budget options' words besides a number: "no cap" on an organization, "the organization's" on a key. */
function budgetWords(command: string, name: string): Record<string, null> {
  if (command === 'key budget') return { default: null }
  return (command === 'org create' || command === 'org budget') && name === 'monthly-budget' ? { none: null } : {}
}

export interface ParsedCommand {
  command: string
  operand?: string
  flags: Flags
  /** The budget options given (undefined: not given; null: the word for none or default). */
  budgets: { hourly?: number | null; monthly?: number | null }
}

/**
 * The command line, checked against its command: a misspelt option or a second id would otherwise do less than asked.
 * Option values that need no store (tier, kind, budgets) are checked here too, so a usage error is told before the
 * store is opened or created.
 */
export function parseCommand(argv: string[]): ParsedCommand {
  const { words, flags } = parseArgs(argv)
  const command = words.slice(0, 2).join(' ')
  const spec = COMMANDS[command]
  if (!spec) throw new UsageError(words.length ? `unknown command "${words.join(' ')}"` : 'no command given')
  if (flags.json !== undefined && flags.json !== true) throw new UsageError('--json takes no value: give it alone')
  const unknown = Object.keys(flags).filter((name) => name !== 'json' && !spec.options.includes(name))
  if (unknown.length) {
    const takes = spec.options.length ? `it takes ${spec.options.map((o) => `--${o}`).join(', ')}` : 'it takes none'
    throw new UsageError(`unknown option ${unknown.map((o) => `--${o}`).join(', ')} for "${command}"; ${takes}`)
  }
  const operands = words.slice(2)
  if (operands.length > (spec.operands ? 1 : 0))
    throw new UsageError(spec.operands ? `"${command}" takes one ${spec.operands.name}, not ${operands.length}: run it once for each` : `"${command}" takes no ${operands.length > 1 ? 'words' : 'word'} after it (got ${operands.join(' ')})`)
  if (spec.operands && (operands.length === 0 || operands[0]!.trim() === ''))
    throw new UsageError(`${command} needs ${spec.operands.what}: ${command} ${spec.operands.name}`)
  // Told before the store is opened (or made): the id of an entry that cannot exist is the command line's fault.
  if (spec.operands?.uuid && !UUID.test(operands[0]!))
    throw new UsageError(`${spec.operands.name} must be ${spec.operands.what}, a UUID as \`opportunity list\` shows it (got ${JSON.stringify(operands[0]!.slice(0, 80))})`)
  for (const name of spec.required ?? []) text(flags, name, true)
  if (spec.keyRef) keyRef(flags)
  const name = text(flags, 'name')
  const problem = name === undefined ? undefined : name.trim() === '' ? { message: 'must not be empty' } : nameProblem(name)
  if (problem) throw new UsageError(`--name ${problem.message}`)
  const tier = text(flags, 'tier')
  if (tier !== undefined && tier !== 'standard' && tier !== 'premium') throw new UsageError('--tier must be standard or premium')
  const kind = text(flags, 'kind')
  if (kind !== undefined && !KEY_KINDS.includes(kind as KeyKind)) throw new UsageError('--kind must be publishable or secret')
  const budgets = {
    hourly: budgetFlag(flags, 'hourly-budget', budgetWords(command, 'hourly-budget')),
    monthly: budgetFlag(flags, 'monthly-budget', budgetWords(command, 'monthly-budget')),
  }
  if (spec.budget && budgets.hourly === undefined && budgets.monthly === undefined) throw new UsageError('give --hourly-budget and/or --monthly-budget')
  return { command, operand: operands[0], flags, budgets }
}

function text(flags: Flags, name: string, required: true): string
function text(flags: Flags, name: string, required?: false): string | undefined
function text(flags: Flags, name: string, required = false) {
  const v = flags[name]
  // Blank is no value: `--org=` had gone on to open the store and find no organization "" (exit 1). A blank name is
  // told as such below.
  if (v === true || (v !== undefined && v.trim() === '' && name !== 'name')) throw new UsageError(`--${name} needs a value`)
  if (v === undefined && required) throw new UsageError(`--${name} is required`)
  return v
}

/** A budget flag: a whole number, or a word meaning "no cap" / "inherit the organization's". */
function budgetFlag(flags: Flags, name: string, words: Record<string, null> = {}): number | null | undefined {
  const v = text(flags, name)
  if (v === undefined) return undefined
  if (Object.hasOwn(words, v)) return words[v]!
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v)))
    throw new UsageError(`--${name} must be a whole number of cost units up to ${Number.MAX_SAFE_INTEGER}${Object.keys(words).length ? `, or ${Object.keys(words).join('/')}` : ''}`)
  return Number(v)
}

function keyRef(flags: Flags) {
  const keyId = text(flags, 'id')
  const key = text(flags, 'key')
  if (!keyId && !key) throw new UsageError('give --id KEY_ID or --key KEY')
  // Both would act on one of them, maybe not the one meant.
  if (keyId && key) throw new UsageError('give --id KEY_ID or --key KEY, not both')
  return { keyId, key }
}

/** The opportunity commands also need the chains; the others only the store. */
export type CliDeps = AdminDeps & {
  ecosystems?: EcosystemRegistry
  /** What opening the store migrated (`store migrate` says it). */
  migration?: { from: number | null; applied: number[] }
}

/** A catalog file past this is refused before it is read (50,000 entries take ~25 MB). */
const MAX_CATALOG_BYTES = 256 * 1024 * 1024

const READ_ERRORS: Record<string, string> = { ENOENT: 'no such file', EISDIR: 'it is a directory', EACCES: 'permission denied' }

async function readJsonFile(path: string): Promise<unknown> {
  // `bun run cli` runs in the repository's root, not the shell's directory: the message names the file it looked for.
  const where = resolve(path)
  const tooLarge = (size: string) => new InvalidArgumentError(`cannot read ${where}: it is ${size} bytes, more than a catalog file's ${MAX_CATALOG_BYTES}`)
  let text: string
  try {
    const stat = statSync(where)
    if (stat.size > MAX_CATALOG_BYTES) throw tooLarge(String(stat.size))
    // A pipe or a device (/dev/stdin) has no size to check first: it is read up to the bound (an audit: /dev/zero
    // grew the process past 3 GB).
    text = stat.isFile() ? await Bun.file(where).text() : await readAtMost(where, MAX_CATALOG_BYTES, () => tooLarge(`over ${MAX_CATALOG_BYTES}`))
  } catch (e) {
    if (e instanceof InvalidArgumentError) throw e
    const code = (e as NodeJS.ErrnoException).code
    throw new InvalidArgumentError(`cannot read ${where}: ${(code && READ_ERRORS[code]) ?? code ?? String(e)}${code && READ_ERRORS[code] ? ` (${code})` : ''}`)
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (e) {
    throw new InvalidArgumentError(`${where} is not JSON: ${e instanceof Error ? e.message : e}`)
  }
  const twice = firstDuplicateKey(text)
  if (twice)
    throw new InvalidArgumentError(
      `${where}: ${twice.path ? twice.path : 'the top-level object'} names "${twice.key}" twice; a JSON reader keeps one of the two silently: remove the other`,
    )
  return parsed
}

/** A stream's text, refused (`tooLarge`) once past `maxBytes`. */
async function readAtMost(path: string, maxBytes: number, tooLarge: () => Error): Promise<string> {
  const chunks: Buffer[] = []
  let read = 0
  const stream = createReadStream(path)
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      read += chunk.length
      if (read > maxBytes) throw tooLarge()
      chunks.push(chunk)
    }
  } finally {
    stream.destroy()
  }
  return new TextDecoder().decode(Buffer.concat(chunks))
}

async function listCatalog(deps: CliDeps) {
  const rows = await deps.store.allOpportunities()
  // Addresses as the API shows them (EIP-55, TON's EQ…), so the operator can compare the two. Only the listed
  // ecosystems load; one that does not (not loaded here, or its variables refused) shows the stored form.
  const plugins = new Map<string, LoadedEcosystem['plugin']>()
  for (const id of new Set(rows.map((r) => r.ecosystem))) {
    const loaded = await deps.ecosystems?.get(id).catch(() => undefined)
    if (loaded) plugins.set(id, loaded.plugin)
  }
  const shown = (ecosystem: string, address: string) => {
    const plugin = plugins.get(ecosystem)
    return plugin ? formatContract(plugin, address) : address
  }
  return {
    opportunities: rows.map((r) => ({
      id: r.id,
      name: (JSON.parse(r.listing) as { name: string }).name,
      ecosystem: r.ecosystem,
      chainId: r.chainId,
      vaultAddress: shown(r.ecosystem, r.vaultAddress),
      tvl: r.tvl,
      refreshedAt: r.refreshedAt === null ? 'pending' : new Date(r.refreshedAt).toISOString(),
      ...(r.refreshError ? { refreshError: r.refreshError } : {}),
      ...(r.delistedAt === null ? {} : { delistedAt: new Date(r.delistedAt).toISOString() }),
    })),
  }
}

/** The organization id, once the store knows it: a listing of an unknown one would read as "it has none". */
async function knownOrg(deps: CliDeps, orgId: string): Promise<string> {
  if (!(await deps.store.getOrganization(orgId))) throw new NotFoundError(`organization ${quoted(orgId)} not found`, { org: quoted(orgId) })
  return orgId
}

/** `--help` or `-h` where an option or a word goes, not as an option's value (`--name -h` names something "-h"). */
export function asksForHelp(argv: string[]): boolean {
  if (argv.length === 0) return true
  try {
    const { words, flags } = parseArgs(argv)
    return flags.help !== undefined || words.includes('-h')
  } catch {
    return false // the line's own usage error says more
  }
}

/** Runs one command; returns what it prints (as JSON with --json, else as lines). */
export async function runCommand(deps: CliDeps, argv: string[]): Promise<unknown> {
  const { command, operand, flags, budgets } = parseCommand(argv)
  switch (command) {
    case 'org create':
      return createOrganization(deps, {
        name: text(flags, 'name', true),
        tier: (text(flags, 'tier') ?? 'standard') as Tier,
        hourlyBudget: budgets.hourly ?? undefined,
        monthlyBudget: budgets.monthly,
      })
    case 'org list':
      return { organizations: await deps.store.listOrganizations() }
    case 'org budget':
      return setOrganizationBudgets(deps, await knownOrg(deps, text(flags, 'org', true)), { hourlyBudget: budgets.hourly ?? undefined, monthlyBudget: budgets.monthly })
    case 'distributor create':
      return createDistributor(deps, { orgId: text(flags, 'org', true), name: text(flags, 'name') })
    case 'distributor list':
      return { distributors: await deps.store.listDistributors(await knownOrg(deps, text(flags, 'org', true))) }
    case 'key create': {
      const kind = text(flags, 'kind', true) as KeyKind
      const orgId = await knownOrg(deps, text(flags, 'org', true))
      const issued = await issueKey(deps, orgId, kind, { hourlyBudget: budgets.hourly ?? null, monthlyBudget: budgets.monthly ?? null })
      return { ...issued, kind, orgId }
    }
    case 'key list': {
      const keys = await deps.store.listKeys(await knownOrg(deps, text(flags, 'org', true)))
      // Digests stay in the store; a listing shows what identifies a key to a person.
      return { keys: keys.map(({ hash: _hash, ...k }) => k) }
    }
    case 'key rotate':
      return rotateKey(deps, keyRef(flags))
    case 'key revoke':
      return revokeKey(deps, keyRef(flags))
    case 'key budget': {
      const ref = keyRef(flags)
      await findKey(deps, ref)
      return setKeyBudgets(deps, ref, { hourlyBudget: budgets.hourly, monthlyBudget: budgets.monthly })
    }
    case 'opportunity import': {
      const path = operand!
      if (!deps.ecosystems) throw new UsageError('opportunity import needs the chain configuration')
      return importCatalog({ store: deps.store, clock: deps.clock, ecosystems: deps.ecosystems }, await readJsonFile(path))
    }
    case 'opportunity list':
      return listCatalog(deps)
    case 'opportunity delist':
    case 'opportunity relist': {
      return setOpportunityDelisted(deps, operand!, command === 'opportunity delist')
    }
    case 'store migrate': {
      const { from, applied } = deps.migration ?? { from: null, applied: [] }
      return {
        schema: (await deps.store.schemaState()).version,
        from: from ?? 'a new store',
        applied: applied.length ? applied.join(', ') : 'nothing: the store was up to date',
      }
    }
    default:
      throw new UsageError(`unknown command "${command}"`)
  }
}

/**
 * What the operator reads when a command fails: our errors in their own words; the store's (bun:sqlite's
 * SQLiteError, postgres.js's PostgresError) named as the store's, with their code; anything else as it is.
 */
/** The store could not be opened or migrated: the message names the variable that says where it is. */
export class StoreOpenError extends Error {
  constructor(config: Pick<Config, 'databaseUrl' | 'dataDir'>, cause: unknown) {
    const where = config.databaseUrl ? 'the database (DATABASE_URL)' : `the embedded store in ${config.dataDir} (DATA_DIR)`
    const code = (cause as NodeJS.ErrnoException | null)?.code
    const why =
      // mkdir's own words for a DATA_DIR that is a file ("EEXIST: file already exists") read as if the directory's being there were the fault.
      !config.databaseUrl && (code === 'EEXIST' || code === 'ENOTDIR')
        ? `it, or a directory on its path, is a file, not a directory (${code})`
        : cause instanceof Error && errorMessage(cause) === String(cause)
          ? cause.message.split('\n', 1)[0]!
          : errorMessage(cause)
    super(`cannot open ${where}: ${why}`, { cause })
  }
}

export function errorMessage(e: unknown): string {
  if (e instanceof ApiError || e instanceof UsageError || e instanceof ConfigError || e instanceof StoreOpenError || e instanceof OutputLostError || e instanceof StoreNeedsMigrationError)
    return e.message
  // The store's own timer, or a connection lost: named as the store's, not printed as "Error: …".
  if (storeUnavailable(e) === 'unreachable' && e instanceof Error) return `the store did not answer: ${e.message.split('\n')[0]}`
  const code = (e as { code?: unknown } | null)?.code
  if (!(e instanceof Error) || typeof code !== 'string' || (e.name !== 'SQLiteError' && e.name !== 'PostgresError')) return String(e)
  if (code.startsWith('SQLITE_BUSY')) return `the store is busy: another process held its write lock past the 5 s busy timeout; run the command again (${code})`
  if (storeUnavailable(e) === 'busy')
    return `the store is busy: ${e.message.split('\n')[0]} (another command or a server held what this one needed); run the command again (${code})`
  return `the store refused the command: ${e.message.split('\n')[0]} (${code})`
}

function print(result: unknown, json: boolean) {
  const lines: string[] = []
  if (json) lines.push(JSON.stringify(result, null, 2))
  else
    for (const [k, v] of Object.entries(result as Record<string, unknown>)) {
      // A field the command left unset (a budget not changed) is not printed as "undefined".
      if (v === undefined) continue
      if (Array.isArray(v)) {
        lines.push(`${k}:`)
        for (const row of v) lines.push('  ' + Object.entries(row).map(([a, b]) => `${a}=${b}`).join(' '))
      } else lines.push(`${k}: ${v}`)
    }
  try {
    writeAll(1, lines.map((line) => `${line}\n`).join(''))
  } catch (e) {
    throw new OutputLostError(result, e)
  }
}

/**
 * Standard output could not take the result (a full disk, a closed pipe): the command was carried out, and a key it
 * made is shown nowhere else. console.log dropped such errors, and the command exited 0 (an audit: a key rotated with
 * its output to a full disk revoked the old key and lost the new one). The ids, never the keys, go to stderr.
 */
class OutputLostError extends Error {
  constructor(result: unknown, cause: unknown) {
    const fields = Object.entries(result as Record<string, unknown>)
    const ids = fields.filter(([k, v]) => /id$/i.test(k) && typeof v === 'string')
    const issuedKey = fields.some(([k, v]) => /key$/i.test(k) && typeof v === 'string' && /^(pk|sk)_/.test(v))
    super(
      `the command was carried out, but its result could not be written to standard output (${(cause as NodeJS.ErrnoException).code ?? String(cause)})` +
        (ids.length ? `: ${ids.map(([k, v]) => `${k}=${v}`).join(' ')}` : '') +
        (issuedKey ? '; a key it issued is shown nowhere else, so revoke or rotate it' : ''),
    )
  }
}

/** Every byte, or the write's error: a pipe may take part of it at a time, or none for a moment (EAGAIN). */
function writeAll(fd: number, text: string): void {
  const bytes = Buffer.from(text)
  for (let at = 0; at < bytes.length; ) {
    try {
      at += writeSync(fd, bytes, at)
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') throw e
      Bun.sleepSync(1)
    }
  }
}

if (import.meta.main) {
  const argv = process.argv.slice(2)
  const json = argv.includes('--json')
  let exitCode = 0
  let store: ReturnType<typeof openStore> | undefined
  let command: string | undefined
  try {
    if (asksForHelp(argv)) {
      console.log(USAGE)
    } else {
      // A usage error is told before the store is opened or migrated.
      ;({ command } = parseCommand(argv))
      const config = parseConfig(process.env)
      let migration: CliDeps['migration']
      try {
        store = openStore(config)
        // A new store is made by any command; an older one is upgraded only when asked (an audit: `org list` of a new
        // release had upgraded a store for good, silently).
        migration = await migrateStore(store, systemClock, command === 'store migrate' ? {} : { upgrade: 'refuse' })
      } catch (e) {
        if (e instanceof StoreNeedsMigrationError) throw e
        throw new StoreOpenError(config, e)
      }
      const ecosystems = loadEcosystems(config)
      print(await runCommand({ store, clock: systemClock, ecosystems, migration }, argv.filter((a) => a !== '--json')), json)
    }
  } catch (e) {
    exitCode = e instanceof UsageError ? 2 : 1
    // A key pasted where an id or a word goes is cut to its prefix, as the API's answers do: stderr ends up in logs.
    let message = maskKeys(errorMessage(e))
    // Its statement may have committed before the answer was lost (an audit: a revoke reported failed had revoked the
    // key; a create would leave an organization or a key never shown).
    if (command !== undefined && !onlyReads(command) && !(e instanceof StoreOpenError) && storeUnavailable(e) === 'unreachable')
      message += '; what the command changes may have been carried out all the same: look (org list, key list, opportunity list) before running it again'
    if (json) console.error(JSON.stringify({ error: message }))
    else console.error(`error: ${message}${e instanceof UsageError ? `\n\n${USAGE}` : ''}`)
  } finally {
    // A store that never answered (a PostgreSQL host dropping packets) never finishes closing either.
    if (store) await Promise.race([store.close(), Bun.sleep(2000)])
  }
  process.exit(exitCode)
}
