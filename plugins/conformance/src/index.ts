/**
 * The ecosystem plugin conformance kit. A chain team adding an ecosystem runs it against its
 * plugin and learns, check by check, what the plugin still lacks:
 *
 *   runEcosystemConformance(myPlugin, fixtures)      // inside a bun test file
 *
 * `checkEcosystem` returns the same checks as data, so a harness (or a test of the kit itself)
 * can read the report without a test runner.
 */
import { describe, test } from 'bun:test'
import {
  ApiError,
  ECOSYSTEM_IDS,
  findApiError,
  type BalanceParameters,
  type BuildParameters,
  type Ecosystem,
  type SignInMessageParameters,
  type VaultParameters,
} from '@earn/core'

export interface ConformanceSigner {
  /** The wallet's address in any accepted input form. */
  address: string
  /** Produces the `signature` field a real wallet would send for this agreement. */
  sign(message: string, p: SignInMessageParameters): Promise<string>
}

export interface ConformanceFixtures<Client> {
  client: Client
  chainId: string
  /** Several input forms of one wallet (cases, encodings); all must parse to one canonical address. */
  addressForms: string[]
  /** Inputs that are not addresses of this ecosystem. */
  invalidAddresses: string[]
  /** A fresh key pair (and wallet) per call. */
  newSigner(): Promise<ConformanceSigner>
  // The fixtures below are optional in the type so that a plugin still being written can run the kit: each check
  // whose fixture is missing fails, saying which fixture to give.
  /** A wallet whose on-chain balance is known. */
  balance?: { params: BalanceParameters; expected: bigint }
  /** A build whose resulting steps are known. */
  build?: { params: BuildParameters; expectedTypes: string[] }
  /**
   * A vault whose facts are known, and parameters the catalog import must refuse as the file's fault (no vault at
   * the address, a token that is none), naming the catalog field at fault.
   */
  vault?: {
    params: VaultParameters
    expected: { decimals: number; totalAssets: bigint }
    wrong: { params: VaultParameters; field: 'vaultAddress' | 'baseToken' | 'receiptToken' }
  }
  /** A transaction id of this ecosystem's form that names no transaction on the fixtures' chain. */
  unknownTxHash?: string
}

export interface ConformanceCheck {
  name: string
  run(): Promise<void>
}

class ConformanceFailure extends Error {}
const fail = (message: string): never => {
  throw new ConformanceFailure(message)
}

const CAPABILITIES = [
  ['address', 'isValid'],
  ['address', 'parse'],
  ['address', 'format'],
  ['signIn', 'message'],
  ['signIn', 'verify'],
  ['balance', 'read'],
  ['balance', 'vault'],
  ['balance', 'assets'],
  ['balance', 'flows'],
  ['transactions', 'check'],
  ['transactions', 'build'],
  ['transactions', 'buildTransfer'],
  ['transactions', 'readTransfers'],
] as const

/**
 * Chain ids of the other ecosystems, in each spelling they take: a plugin owning any of them would take that
 * ecosystem's requests (core asks the loaded plugins in turn, the first owner answers). A new ecosystem adds its own.
 */
const OTHER_CHAIN_IDS: Readonly<Record<string, readonly string[]>> = {
  evm: ['1', '8453', '31337'],
  solana: ['mainnet', 'devnet', 'testnet', 'localnet', 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'],
  ton: ['-239', '-3'],
}

/** An agreement as core makes one for a request that names no chain. */
function agreement(plugin: Ecosystem<any, any>, address: string, nonce: string, now: Date): SignInMessageParameters {
  return {
    address,
    domain: 'app.example.com',
    uri: 'https://app.example.com/earn',
    chainId: plugin.signIn.defaultChainId ?? null,
    nonce,
    issuedAt: now,
    expiresAt: new Date(now.getTime() + 300_000),
  }
}

function tamper(signature: string): string {
  // Flip one character in the middle, staying inside the usual alphabets.
  const i = Math.floor(signature.length / 2)
  const c = signature[i]
  const swapped = c === 'A' ? 'B' : c === '1' ? '2' : c === 'a' ? 'b' : 'A'
  return signature.slice(0, i) + swapped + signature.slice(i + 1)
}

/** The kit's checks as data; each `run` rejects with a message naming what is missing or wrong. */
export function checkEcosystem<Client>(
  plugin: Partial<Ecosystem<any, Client>>,
  fixtures: ConformanceFixtures<Client>,
): ConformanceCheck[] {
  const p = plugin as Ecosystem<any, Client>
  const has = (group: string, fn: string) =>
    typeof (plugin as Record<string, Record<string, unknown> | undefined>)[group]?.[fn] === 'function'
  const need = (group: string, fn: string) => {
    if (!has(group, fn)) fail(`${group}.${fn} is missing: the plugin must implement ${group}.${fn}()`)
  }
  const canonical = () => p.address.parse(fixtures.addressForms[0] ?? fail('fixtures.addressForms is empty'))
  const signAndVerify = async (nonce: string) => {
    const signer = await fixtures.newSigner()
    const params = agreement(p, p.address.parse(signer.address), nonce, new Date())
    const message = p.signIn.message(params)
    const signature = await signer.sign(message, params)
    return { signer, params, message, signature }
  }

  const checks: ConformanceCheck[] = [
    {
      name: 'declares a known ecosystem id',
      async run() {
        if (!plugin.id || !(ECOSYSTEM_IDS as readonly string[]).includes(plugin.id))
          fail(`id is missing or unknown: got ${JSON.stringify(plugin.id)}, expected one of ${ECOSYSTEM_IDS.join(', ')}`)
        if (typeof plugin.connect !== 'function') fail('connect is missing: the plugin must implement connect(env)')
        if (typeof plugin.ownsChain !== 'function') fail('ownsChain is missing: the plugin must implement ownsChain(chainId)')
        if (typeof plugin.health !== 'function') fail('health is missing: the plugin must implement health(client)')
        const coin = plugin.nativeCoin
        if (typeof coin?.symbol !== 'string' || !/^[^\p{Cc}]{1,32}$/u.test(coin.symbol) || !Number.isInteger(coin.decimals) || coin.decimals < 0 || coin.decimals > 255)
          fail(`nativeCoin must name the chain's own coin: {symbol: one line of 1-32 characters, decimals: an integer 0-255}; got ${JSON.stringify(coin)}`)
        const readsAtOnce = plugin.balance?.readsAtOnce
        if (readsAtOnce !== undefined && !(Number.isSafeInteger(readsAtOnce) && readsAtOnce > 0))
          fail(`balance.readsAtOnce, where given, must be a whole number above 0 (a portfolio's reads in flight at once); got ${JSON.stringify(readsAtOnce)}`)
      },
    },
    {
      name: "owns its chain and no other ecosystem's; a canonical chain id is owned and stays as it is",
      async run() {
        if (typeof plugin.ownsChain !== 'function') fail('ownsChain is missing: the plugin must implement ownsChain(chainId)')
        if (!p.ownsChain(fixtures.chainId)) fail(`ownsChain(${JSON.stringify(fixtures.chainId)}) is false for the fixtures' own chain`)
        for (const [ecosystem, ids] of Object.entries(OTHER_CHAIN_IDS)) {
          if (ecosystem === plugin.id) continue
          const taken = ids.find((id) => p.ownsChain(id))
          if (taken !== undefined) fail(`ownsChain(${JSON.stringify(taken)}) is true, but that is a chain id of ${ecosystem}: chain ids must not overlap`)
        }
        if (p.canonicalChainId) {
          const c = p.canonicalChainId(fixtures.chainId)
          if (!p.ownsChain(c)) fail(`canonicalChainId(${JSON.stringify(fixtures.chainId)}) gave ${JSON.stringify(c)}, which ownsChain does not own`)
          if (p.canonicalChainId(c) !== c) fail(`canonicalChainId is not idempotent on ${JSON.stringify(c)}`)
        }
      },
    },
    {
      name: 'health reports each configured chain as reachable',
      async run() {
        if (typeof plugin.health !== 'function') fail('health is missing: the plugin must implement health(client)')
        const chains = await p.health(fixtures.client)
        if (!Array.isArray(chains)) fail('health must resolve to an array of {chain, ok}')
        for (const c of chains) if (!c.ok) fail(`health says chain ${c.chain} is not reachable: ${c.detail ?? 'no detail'}`)
      },
    },
    ...CAPABILITIES.map(([group, fn]) => ({
      name: `implements ${group}.${fn}`,
      async run() {
        need(group, fn)
      },
    })),
    {
      name: 'address.parse gives one canonical form for every input form, idempotently',
      async run() {
        need('address', 'parse')
        const first = canonical()
        for (const form of fixtures.addressForms) {
          const c = p.address.parse(form)
          if (c !== first) fail(`address.parse(${form}) gave ${c}, but the same wallet's other form gave ${first}`)
          if (!p.address.isValid(form)) fail(`address.isValid(${form}) is false for an accepted form`)
        }
        if (p.address.parse(first) !== first) fail(`address.parse is not idempotent on ${first}`)
        need('address', 'format')
        if (p.address.parse(p.address.format(first)) !== first)
          fail(`address.format(${first}) does not parse back to the canonical form`)
      },
    },
    {
      name: 'address.parse rejects invalid input with a 400 InvalidArgument error',
      async run() {
        need('address', 'parse')
        for (const bad of fixtures.invalidAddresses) {
          if (p.address.isValid(bad)) fail(`address.isValid(${JSON.stringify(bad)}) is true for an invalid address`)
          let thrown: unknown
          try {
            p.address.parse(bad)
          } catch (e) {
            thrown = e
          }
          if (!(thrown instanceof ApiError) || thrown.status !== 400)
            fail(`address.parse(${JSON.stringify(bad)}) must throw InvalidAddressError (400); got ${String(thrown)}`)
        }
      },
    },
    {
      name: 'signIn.message is deterministic and carries the nonce',
      async run() {
        need('signIn', 'message')
        const params = agreement(p, canonical(), 'c0ffee00-0000-4000-8000-000000000001', new Date(1_700_000_000_000))
        const a = p.signIn.message(params)
        if (a !== p.signIn.message({ ...params })) fail('signIn.message gives different text for the same parameters')
        // EIP-4361 nonces are alphanumeric, so a UUID may appear without its dashes.
        if (!a.includes(params.nonce) && !a.includes(params.nonce.replaceAll('-', '')))
          fail('signIn.message does not contain the nonce')
      },
    },
    {
      name: "signIn.verify accepts a real wallet's signature",
      async run() {
        need('signIn', 'verify')
        const { params, message, signature } = await signAndVerify('c0ffee00-0000-4000-8000-000000000002')
        const r = await p.signIn.verify(fixtures.client, { ...params, message, signature, now: new Date() })
        if (!r.valid) fail(`signIn.verify rejected a valid signature: ${r.reason}`)
      },
    },
    {
      name: 'signIn.verify rejects a tampered signature without throwing',
      async run() {
        need('signIn', 'verify')
        const { params, message, signature } = await signAndVerify('c0ffee00-0000-4000-8000-000000000003')
        const r = await p.signIn.verify(fixtures.client, { ...params, message, signature: tamper(signature), now: new Date() })
        if (r.valid) fail('signIn.verify accepted a tampered signature')
        if (!r.valid && !r.reason) fail('signIn.verify gave no reason for rejecting a signature')
      },
    },
    {
      name: 'signIn.verify rejects a signature over another message',
      async run() {
        need('signIn', 'verify')
        const { params, signature } = await signAndVerify('c0ffee00-0000-4000-8000-000000000004')
        const other = { ...params, nonce: 'c0ffee00-0000-4000-8000-000000000005' }
        const r = await p.signIn.verify(fixtures.client, {
          ...other,
          message: p.signIn.message(other),
          signature,
          now: new Date(),
        })
        if (r.valid) fail('signIn.verify accepted a signature made over a different message')
      },
    },
    {
      name: "signIn.verify rejects another wallet's signature for this address",
      async run() {
        need('signIn', 'verify')
        const victim = await signAndVerify('c0ffee00-0000-4000-8000-000000000006')
        const attacker = await fixtures.newSigner()
        const signature = await attacker.sign(victim.message, victim.params)
        const r = await p.signIn.verify(fixtures.client, { ...victim.params, message: victim.message, signature, now: new Date() })
        if (r.valid) fail("signIn.verify accepted a signature made by a different key than the address's owner")
      },
    },
    {
      name: 'balance.read returns the on-chain balance as a bigint',
      async run() {
        need('balance', 'read')
        if (!fixtures.balance) fail('no balance fixture: give fixtures.balance with a known on-chain balance')
        const { params, expected } = fixtures.balance!
        const got = await p.balance.read(fixtures.client, params)
        if (typeof got !== 'bigint') fail(`balance.read returned ${typeof got}, not bigint`)
        if (got !== expected) fail(`balance.read returned ${got}, the chain holds ${expected}`)
        // A portfolio's reads come in bulk, several at once (inBulk): a plugin reading them together must still give each
        // its own. (The same read five times: a plugin's fixtures name one balance; Solana's program-wide read of four or
        // more mints is tested in its own suite.)
        const bulk = await Promise.all(Array.from({ length: 5 }, () => p.balance.read(fixtures.client, { ...params, inBulk: true })))
        if (bulk.some((b) => b !== expected)) fail(`balance.read in bulk (five at once, inBulk) returned ${bulk.join(', ')}, the chain holds ${expected}`)
      },
    },
    {
      name: "balance.vault reads a vault's facts, and refuses what is no vault naming the catalog's field",
      async run() {
        need('balance', 'vault')
        if (!fixtures.vault) fail('no vault fixture: give fixtures.vault with a vault whose facts are known, and parameters naming no vault')
        const { params, expected, wrong } = fixtures.vault!
        const state = await p.balance.vault(fixtures.client, params)
        if (typeof state.totalAssets !== 'bigint') fail(`balance.vault gave totalAssets as ${typeof state.totalAssets}, not bigint`)
        if (state.totalAssets !== expected.totalAssets || state.decimals !== expected.decimals)
          fail(`balance.vault gave totalAssets ${state.totalAssets} and decimals ${state.decimals}; the chain holds ${expected.totalAssets} at ${expected.decimals}`)
        if (typeof state.baseToken !== 'string' || typeof state.receiptToken !== 'string') fail('balance.vault must name baseToken and receiptToken')
        // The import tells the file's fault (refuse the entry) from a chain that did not answer (keep it pending) by this.
        let thrown: unknown
        try {
          await p.balance.vault(fixtures.client, wrong.params)
        } catch (e) {
          thrown = e
        }
        // As the import reads it: the error, or one in its cause chain.
        const api = findApiError(thrown)
        if (api?.status !== 400 || !(wrong.field in api.context))
          fail(
            `balance.vault of what is no vault must throw InvalidArgumentError (400) whose context names ${wrong.field}, so an import refuses ` +
              `the entry (else it is kept pending as if the chain had not answered); got ${thrown === undefined ? 'an answer' : String(thrown)}`,
          )
      },
    },
    {
      name: 'transactions.readTransfers of a transaction that does not exist is NotFound (404)',
      async run() {
        need('transactions', 'readTransfers')
        if (!fixtures.unknownTxHash) fail('no unknownTxHash fixture: give a transaction id of this ecosystem\'s form that the chain does not hold')
        let thrown: unknown
        try {
          await p.transactions.readTransfers(fixtures.client, { chainId: fixtures.chainId, txHash: fixtures.unknownTxHash! })
        } catch (e) {
          thrown = e
        }
        if (findApiError(thrown)?.status !== 404)
          fail(`transactions.readTransfers of an unknown transaction must throw NotFoundError (404: verify answers it so); got ${thrown === undefined ? 'an answer' : String(thrown)}`)
      },
    },
    {
      name: 'transactions.build returns unsigned steps in signing order',
      async run() {
        need('transactions', 'build')
        if (!fixtures.build) fail('no build fixture: give fixtures.build with a known opportunity')
        const { params, expectedTypes } = fixtures.build!
        need('transactions', 'check')
        try {
          p.transactions.check(fixtures.client, params)
        } catch (e) {
          fail(`transactions.check refused what build is expected to build: ${e instanceof Error ? e.message : e}`)
        }
        const steps = await p.transactions.build(fixtures.client, params)
        const types = steps.map((s) => s.type)
        if (JSON.stringify(types) !== JSON.stringify(expectedTypes))
          fail(`transactions.build gave steps ${types.join(',')}; expected ${expectedTypes.join(',')}`)
        for (const s of steps) {
          if (!s.transaction || typeof s.transaction !== 'object') fail(`step ${s.type} has no transaction object`)
          if (!s.description) fail(`step ${s.type} has no description`)
        }
      },
    },
  ]
  return checks
}

/** Runs every check; resolves to the failures, each naming what is missing. */
export async function conformanceReport<Client>(
  plugin: Partial<Ecosystem<any, Client>>,
  fixtures: ConformanceFixtures<Client>,
): Promise<{ name: string; error: string }[]> {
  const failures: { name: string; error: string }[] = []
  for (const check of checkEcosystem(plugin, fixtures)) {
    try {
      await check.run()
    } catch (e) {
      failures.push({ name: check.name, error: e instanceof Error ? e.message : String(e) })
    }
  }
  return failures
}

/** Registers one bun test per check, so a failing plugin sees exactly which capability is lacking. */
export function runEcosystemConformance<Client>(
  plugin: Partial<Ecosystem<any, Client>>,
  fixtures: ConformanceFixtures<Client> | (() => Promise<ConformanceFixtures<Client>>),
) {
  describe(`ecosystem conformance: ${plugin.id ?? '(no id)'}`, () => {
    let resolved: ConformanceFixtures<Client> | undefined
    const get = async () => (resolved ??= typeof fixtures === 'function' ? await fixtures() : fixtures)
    // Names are known before the fixtures are: build them once with a placeholder.
    const names = checkEcosystem(plugin, {} as ConformanceFixtures<Client>).map((c) => c.name)
    names.forEach((name, i) => {
      test(name, async () => {
        // Awaited directly so a failure shows the kit's own message, naming what is missing.
        await checkEcosystem(plugin, await get())[i]!.run()
      })
    })
  })
}
