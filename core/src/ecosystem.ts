/**
 * The one interface every wallet ecosystem implements. Core and the server speak only to this;
 * a new chain is a new package under plugins/, its id in `ECOSYSTEM_IDS` below, and one registry entry in the server
 * (server/src/ecosystems.ts) with the package among the server's dependencies; the conformance kit
 * (plugins/conformance, whose `OTHER_CHAIN_IDS` takes the new chain ids) checks the package against this interface.
 * The README's "Adding an ecosystem" lists the steps.
 *
 * Chain-touching capabilities take a `client` made by `connect`, like a viem action takes a client,
 * so a plugin holds no state and tests can hand it a client bound to a local chain.
 */
export const ECOSYSTEM_IDS = ['evm', 'solana', 'ton'] as const
export type EcosystemId = (typeof ECOSYSTEM_IDS)[number]

/** Raw configuration given to `connect`: environment-style strings, a frozen copy of the process's environment. */
export type ChainEnv = Readonly<Record<string, string | undefined>>

export interface SignInMessageParameters {
  /** Canonical address (as returned by `address.parse`). */
  address: string
  /** Host of the integrator's `url` (with port when it has one). */
  domain: string
  /** The integrator's `url`, as the URL parser writes it (its `href`). */
  uri: string
  /** The chain the agreement names: the request's, else the plugin's `signIn.defaultChainId`, else null. */
  chainId: string | null
  nonce: string
  issuedAt: Date
  expiresAt: Date
}

export interface VerifySignInParameters extends SignInMessageParameters {
  /** The exact message issued by the agreement step, as stored; never one sent back by a client. */
  message: string
  /** The `signature` field of the create request, as given. */
  signature: string
  now: Date
}

/** An expected outcome, not an exception: an invalid signature is data the caller branches on. */
export type VerifySignInResult = { valid: true } | { valid: false; reason: string }

export interface BalanceParameters {
  chainId: string
  /** Canonical wallet address. */
  owner: string
  /** Token address in the ecosystem's form, or `native` for the chain's own coin. */
  token: string
  /**
   * One of many reads of the owner's balances made together (a portfolio's): a plugin may read them all at once, and
   * a token that is none may then read 0 rather than be refused. Absent for a build's or a stream's preflight, whose
   * refusal of a token that is none must not depend on what else is read at the time.
   */
  inBulk?: boolean
}

/** What the chain knows about a vault (for ERC-4626: asset, its decimals, total assets). */
export interface VaultState {
  /** The token deposited (ERC-4626 `asset()`). */
  baseToken: string
  /** The token that represents a position (the vault's share token; on ERC-4626 the vault itself). */
  receiptToken: string
  decimals: number
  /**
   * True where the chain states no decimals for the base token and `decimals` is the ecosystem's default (a TON jetton
   * whose metadata is off chain): the catalog's decimals for it are then taken, not checked against this guess.
   */
  decimalsAssumed?: boolean
  /** The receipt token's own decimals, where the chain says (an ERC-4626 share may have more than its asset). */
  receiptDecimals?: number
  /** In base-token smallest units. */
  totalAssets: bigint
  /**
   * The decimals of `VaultParameters.tokens` as the chain says, keyed as given; null for an address that answers
   * none (no token there). Absent where the ecosystem reads no token metadata.
   */
  tokenDecimals?: Record<string, number | null>
}

export interface VaultParameters {
  chainId: string
  vaultAddress: string
  /** The catalog's tokens: ecosystems whose vaults do not name them on chain (Solana, TON) read these. */
  baseToken?: string
  receiptToken?: string
  /** Other tokens whose decimals to read with the vault (the catalog's deposit tokens besides the chain's coin). */
  tokens?: readonly string[]
}

export interface ReadTagParameters {
  chainId: string
  /** EVM transaction hash, Solana signature, TON transaction hash: the ecosystem's own form. */
  txHash: string
}

/** A mined transaction's attribution tag (`earn:v1:...`), or null when it carries none. */
export interface ReadTagResult {
  tag: string | null
  /**
   * The transaction's hash in the ecosystem's one canonical form (EVM lowercase hex; TON the wallet transaction's
   * own hash, even when asked by its external message's). What is recorded, so one transaction is one record
   * however its hash was written.
   */
  txHash: string
  /** The wallet that sent the transaction, canonical. */
  from: string
  /**
   * The contract the transaction called, canonical (null: it called none), where the ecosystem's transactions name
   * one (EVM). Verify then requires it to be the action's vault, so a tag sent anywhere else proves nothing.
   */
  to?: string | null
  /**
   * What the transaction did to vaults, where the ecosystem reads it (EVM: the ERC-4626 `Deposit` and `Withdraw`
   * events of its receipt). Verify then requires one of the action's kind, by the action's vault, for its wallet,
   * moving shares: a tag can ride on a call to the vault that deposits nothing (a zero transfer, say).
   */
  vaultMoves?: VaultMove[]
  /**
   * Where a transaction is a tree of calls (EVM), the tags on the calls `from` made to `to` in it (canonical
   * addresses), each once, in order: a move counts for a tag only when the caller's own call to the vault (a
   * transfer: the holder's call to the token) carried it, since anyone who submits a contract wallet's call can add
   * tags around it. Resolves undefined where that cannot be known (EVM: the node gives no call trace). Absent where
   * the transaction's tag is the wallet's own (Solana, TON).
   */
  tagsOn?(call: { from: string; to: string }): Promise<string[] | undefined>
  /**
   * Where a transaction is a tree of calls (EVM), the chain's own coin its calls moved besides the transaction's own
   * value (a contract wallet sending from inside the call its owner or a bundler made; canonical addresses, `token`
   * native), read from a call trace when asked. Resolves undefined where the node gives none.
   */
  coinMovedInside?(): Promise<TokenTransfer[] | undefined>
}

export interface VaultMove {
  kind: 'deposit' | 'withdraw'
  /** The vault that reported it, canonical. */
  vault: string
  /** Whose shares were minted or burned, canonical. */
  owner: string
  /**
   * Who called the vault, canonical. A contract wallet calls the vault itself from inside a call its owner or a
   * bundler sent, so this, not the transaction's sender, is then the wallet.
   */
  caller: string
  shares: bigint
  /** The base token the vault took in (deposit) or paid out (withdraw), smallest units. */
  assets: bigint
}

export interface AssetsParameters {
  chainId: string
  vaultAddress: string
  /** Receipt-token units. */
  shares: bigint
}

export interface FlowsParameters {
  chainId: string
  vaultAddress: string
  /** Canonical wallet address. */
  owner: string
  /** Where the vault's history starts, where the ecosystem counts in blocks (the catalog's `eventsFromBlock`). */
  fromBlock?: number
}

/** A wallet's own movements into and out of a vault, in base-token smallest units. */
export interface VaultFlows {
  deposited: bigint
  withdrawn: bigint
}

export interface TransferParameters {
  chainId: string
  /** Canonical address of the wallet that signs and pays. */
  from: string
  /** Token address, or `native`. */
  token: string
  to: string
  amount: bigint
  /** Carried like an attribution tag, so the transfer can be matched to what it funds. */
  tag: string
}

export interface TokenTransfer {
  token: string
  from: string
  to: string
  amount: bigint
  /**
   * The attribution tag the message that made this move carried, where the ecosystem tells its moves apart by message
   * (TON: each out-message); absent where it cannot (Solana: balances before and after). Verify counts a move for the
   * tag its own message carried only: two deposits sent in one request must not both count for the first.
   */
  tag?: string
}

export interface ReadTransfersResult extends ReadTagResult {
  /** Token movements the mined transaction made (canonical addresses); empty when it failed. */
  transfers: TokenTransfer[]
  /**
   * Where the transaction's tags are all the wallet's own (Solana: its memos; TON: its out-messages' comments), every
   * attribution tag it carries, in order (`tag` is the first): one transaction funding several streams is refused,
   * since its transfers are summed and one stream's would make up another's shortfall. Where it is a tree of calls
   * (EVM), `tagsOn` tells the same.
   */
  tags?: string[]
  /** Each transfer names the tag its message carried (`TokenTransfer.tag`; TON): verify then tells the tags' moves apart. */
  transfersTagged?: boolean
  /**
   * How much less `account`'s balance of the token `token` (not the coin) rose by in this transaction than its logs
   * say, by the chain's state (0 where they agree): a token may log more than it moves (a fee taken on delivery, shares
   * rounded). EVM reads the balance as the transaction ran (the storage it found and left, its block's time). Undefined
   * where the node cannot tell (no such trace, the state before the block pruned).
   */
  shortfall?(token: string, account: string): Promise<bigint | undefined>
}

/** One configured chain's reachability, for readiness. */
export interface ChainHealth {
  chain: string
  ok: boolean
  /** Why not, for an operator; never a URL. */
  detail?: string
}

export interface OpportunityTarget {
  id: string
  chainId: string
  vaultAddress: string
  baseToken: string
  receiptToken: string
}

interface BuildCommon {
  chainId: string
  /** Canonical wallet address; it signs and pays. */
  owner: string
  opportunity: OpportunityTarget
  /** Smallest units. */
  amount: bigint
  /** Attribution tag `earn:v1:...` carried by the deposit step. */
  tag: string
  slippageBps: number
  /** The most a swap may move its pool's price against the wallet, basis points; none, no bound (the API's requests always name one). */
  maxPriceImpactBps?: number
}

export type BuildParameters =
  | (BuildCommon & { kind: 'deposit'; tokenIn: string; mode: 'direct' | 'swap' })
  | (BuildCommon & { kind: 'withdraw'; tokenOut?: string })

/** An action's step types; a stream's funding is `UnsignedTransaction<'transfer'>`. */
export interface UnsignedTransaction<Type extends string = 'approve' | 'swap' | 'deposit' | 'withdraw'> {
  type: Type
  /** The ecosystem's unsigned form, JSON-ready (amounts as decimal strings). */
  transaction: Record<string, unknown>
  description: string
  metadata?: Record<string, unknown>
}

/** The chain's own coin (ETH, SOL, TON), whose token address is `native`. */
export interface NativeCoin {
  symbol: string
  decimals: number
}

export interface Ecosystem<Id extends EcosystemId = EcosystemId, Client = unknown> {
  id: Id
  /**
   * How portfolios name the chain's own coin, and the decimals a catalog's `native` deposit token must have. Chains of
   * the ecosystem whose coin is another (POL, BNB on EVM chains) keep its decimals; a catalog token with the address
   * `native` on such a chain names the coin instead.
   */
  nativeCoin: NativeCoin
  /**
   * Its vaults issue one receipt unit per base unit and keep no share price (`balance.assets` answers the shares), so
   * core refuses an entry whose receipt token's decimals are not the base token's (a receipt of 9 over a base of 6 read
   * 1,000 times over). Absent: the vault prices its shares (ERC-4626 `convertToAssets`).
   */
  receiptsOneToOne?: true
  /**
   * Whether a chain id (as written in the catalog and the verify endpoint) belongs to this ecosystem. No two
   * ecosystems may own one id: core sends an id to the first loaded plugin that owns it (registry.ts `chainOf`).
   */
  ownsChain(chainId: string): boolean
  /** How the ecosystem's chain ids are written, for a refusal to show (`mainnet, devnet, ... or solana:<genesis hash>`). */
  chainIdForms?: string
  /**
   * The one spelling of an owned chain id that is stored and compared, where the ecosystem has several for one chain
   * (Solana: `mainnet` and its CAIP-2 id). Absent: every id is its own spelling.
   */
  canonicalChainId?(chainId: string): string
  /** Transport-like: builds the client from configuration; no I/O until a capability uses it. */
  connect(env: ChainEnv): Client
  /**
   * Asks every chain the client is configured for whether it answers; [] when none is configured. `/readyz` waits
   * for it at most 2 s (then reports the ecosystem unavailable). As every capability that asks a chain, it bounds its
   * own requests' time: core puts no other limit on a plugin's calls, and a request waits as long as its plugin does.
   */
  health(client: Client): Promise<ChainHealth[]>
  address: {
    /** Cheap guard; never throws. */
    isValid(input: string): boolean
    /** Canonical identity form, or throws `InvalidAddressError`. Idempotent. */
    parse(input: string): string
    /** The form shown in responses (EIP-55 on EVM). Takes a canonical address. */
    format(canonical: string): string
    /**
     * The form shown for a contract (a vault, a token), where it differs from a wallet's (TON: bounceable, so a
     * transfer to it that fails comes back); `format` where absent. Takes a canonical address.
     */
    formatContract?(canonical: string): string
  }
  signIn: {
    /** The chain an agreement names when the request gives none (EVM: "1"); absent where the message names none. */
    defaultChainId?: string
    /** The agreement message the wallet signs. */
    message(p: SignInMessageParameters): string
    /**
     * Verifies a signature over the stored message. Resolves `{valid: false}` for a bad proof;
     * rejects with `UnavailableError` when a chain it must ask cannot answer.
     */
    verify(client: Client, p: VerifySignInParameters): Promise<VerifySignInResult>
  }
  balance: {
    /** Read at call time, never from a cache; concurrent reads may be batched and identical ones shared. */
    read(client: Client, p: BalanceParameters): Promise<bigint>
    /**
     * The vault's on-chain facts, for the catalog. Where the catalog file is at fault (no vault at the address, a
     * token that is none), rejects with InvalidArgumentError whose context names the field (`vaultAddress`,
     * `baseToken`, `receiptToken`): the import refuses that entry. Any other failure reads as a chain that did not
     * answer, and the entry is kept pending until a refresh reads it.
     */
    vault(client: Client, p: VaultParameters): Promise<VaultState>
    /** What `shares` of a vault are worth in its base token now (ERC-4626 `convertToAssets`). */
    assets(client: Client, p: AssetsParameters): Promise<bigint>
    /** The wallet's deposits and withdrawals from the vault's own records (events); null where the chain keeps none. */
    flows(client: Client, p: FlowsParameters): Promise<VaultFlows | null>
    /**
     * Rejects (UnavailableError) where the client's RPC for `chainId` serves another chain, whose balances would
     * read as this one's; asked once a portfolio per chain, beside its balance reads. Absent where a client is bound
     * to its chain by other means.
     */
    servesChain?(client: Client, chainId: string): Promise<void>
    /**
     * How many of one portfolio's reads may be in flight at once, where each read is a request of its own (Solana,
     * TON; their clients' own caps): a catalog of thousands would otherwise queue thousands of requests at once in
     * the client, ahead of other requests', and go on sending them after the portfolio had failed. Absent: all at
     * once (EVM folds them into one Multicall3 call a chain).
     */
    readsAtOnce?: number
  }
  transactions: {
    /**
     * Throws the 400 `build` would give for what it can judge without the chain: a token or mode it cannot build,
     * an amount out of its range. Core runs it before the balance preflight, so such a request hears what is
     * wrong with it rather than an answer about its balance; `build` runs it too.
     */
    check(client: Client, p: BuildParameters): void
    build(client: Client, p: BuildParameters): Promise<UnsignedTransaction[]>
    /** An unsigned transfer carrying a tag (a reward stream's funding). */
    buildTransfer(client: Client, p: TransferParameters): Promise<UnsignedTransaction<'transfer'>[]>
    /**
     * Reads a mined transaction: the tag it carries, who sent it and the token transfers it made (verify, a
     * stream's funding); NotFoundError when there is none such.
     */
    readTransfers(client: Client, p: ReadTagParameters): Promise<ReadTransfersResult>
    /**
     * Transactions that may have paid `treasury` in `token`, newest seen since `cursor` (the last answer's; none: the
     * recent past the plugin looks back over), for the watch on pending streams (core's streams/watch.ts), which reads
     * each with `readTransfers`. Only what `readTransfers` would find now: not deeper than the chain's confirmations.
     * A plugin without it leaves its pending streams to `POST /v2/streams/{id}/confirm`.
     */
    findFundings?(client: Client, p: FindFundingsParameters): Promise<FoundFundings>
  }
}

export interface FindFundingsParameters {
  chainId: string
  /** Canonical address. */
  treasury: string
  /** `native`, or the token's canonical address. */
  token: string
  cursor?: string
  /**
   * The least one transfer of a funding moves (the smallest `totalPulled` among the streams looked for): a plugin may
   * leave out transfers of less (dust to the treasury, which anyone may send), though not bound to.
   */
  least?: bigint
}

export interface FoundFundings {
  /** In the ecosystem's own form, as `readTransfers` takes them; oldest first. */
  txHashes: string[]
  /** Where the next call goes on from once these are read. */
  cursor: string
}

/** The chain's own coin (ETH, SOL, TON) wherever a token address is expected. */
export const NATIVE_TOKEN = 'native'

/** A token field's canonical form: `native`, or the ecosystem's canonical address (throws like `parse`). */
export const parseToken = (plugin: Pick<Ecosystem<EcosystemId, any>, 'address'>, input: string): string =>
  input === NATIVE_TOKEN ? NATIVE_TOKEN : plugin.address.parse(input)

/** A contract's display form (a vault, a token): the ecosystem's contract form, else its display address. */
export const formatContract = (plugin: Pick<Ecosystem<EcosystemId, any>, 'address'>, canonical: string): string =>
  (plugin.address.formatContract ?? plugin.address.format)(canonical)

/** A canonical token's display form: `native`, or the ecosystem's display address for a contract. */
export const formatToken = (plugin: Pick<Ecosystem<EcosystemId, any>, 'address'>, canonical: string): string =>
  canonical === NATIVE_TOKEN ? NATIVE_TOKEN : formatContract(plugin, canonical)

/** Type-checks a plugin object without changing it. */
export const defineEcosystem = <const E extends Ecosystem<EcosystemId, any>>(e: E): E => e

export const isEcosystemId = (s: string): s is EcosystemId => (ECOSYSTEM_IDS as readonly string[]).includes(s)
