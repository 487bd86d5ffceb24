/**
 * The Solana JSON-RPC methods our code and tests call, answered by an in-process LiteSVM, so kit's
 * `createSolanaRpc` (the plugin's production path) runs against a real SVM runtime unchanged.
 *
 * Test-only and deliberately small: one thread, every landed transaction is instantly `finalized`,
 * no WebSocket subscriptions (poll `getSignatureStatuses`), no address-lookup-table resolution in
 * transaction metadata. An unknown method answers -32601, so a gap shows up as a clear error.
 */
import { FailedTransactionMetadata, type LiteSVM } from 'litesvm'
import {
  address,
  getBase58Encoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getSignatureFromTransaction,
  getTransactionDecoder,
  getTransactionEncoder,
  lamports,
  type Address,
  type Transaction,
} from '@solana/kit'
import {
  base58,
  encodeAccount,
  executionResult,
  landsOnChain,
  parseTokenState,
  RpcError,
  TOKEN_PROGRAMS,
  transactionErrorJson,
} from './solanaCodecs.ts'
import { transactionResponse, type LandedTransaction, type TokenBalance } from './solanaLedger.ts'

/** The accounts a landed transaction's message names (the facade resolves no lookup tables: it loads none). */
const accountsOf = (wire: Uint8Array): readonly string[] => getCompiledTransactionMessageDecoder().decode(getTransactionDecoder().decode(wire).messageBytes).staticAccounts

export type { LandedTransaction } from './solanaLedger.ts'

const LAMPORTS_PER_SIGNATURE = 5000n

type Params = any[]

export function createSolanaRpcFacade(svm: LiteSVM) {
  const ledger = new Map<string, LandedTransaction>()
  const slot = () => svm.getClock().slot
  const context = () => ({ slot: slot(), apiVersion: '2.2.0' })
  const lookup = (a: Address) => svm.getAccount(a)
  const balanceOf = (a: Address) => svm.getBalance(a) ?? 0n

  function tokenBalances(keys: readonly Address[]): TokenBalance[] {
    return keys.flatMap((key, accountIndex) => {
      const account = svm.getAccount(key)
      if (!account.exists || !TOKEN_PROGRAMS.includes(account.programAddress)) return []
      const parsed = parseTokenState(new Uint8Array(account.data), lookup)
      if (parsed?.type !== 'account') return []
      const { mint, owner, tokenAmount } = parsed.info
      return [{ accountIndex, mint, owner, programId: account.programAddress, uiTokenAmount: tokenAmount }]
    })
  }

  /** Executes a signed transaction and records it; the one path for RPC sends and harness helpers. */
  function submit(tx: Transaction): { signature: string; err: unknown; logs: string[] } {
    const message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes)
    const keys = message.staticAccounts
    const preBalances = keys.map(balanceOf)
    const preTokenBalances = tokenBalances(keys)
    const result = svm.sendTransaction(tx)
    const failed = result instanceof FailedTransactionMetadata
    const meta = failed ? result.meta() : result
    const err = failed ? transactionErrorJson(result.err()) : null
    const signature = getSignatureFromTransaction(tx)
    if (landsOnChain(err)) {
      ledger.set(signature, {
        signature,
        slot: slot(),
        blockTime: svm.getClock().unixTimestamp,
        err,
        wire: new Uint8Array(getTransactionEncoder().encode(tx)),
        fee: LAMPORTS_PER_SIGNATURE * BigInt(message.header.numSignerAccounts),
        preBalances,
        postBalances: keys.map(balanceOf),
        preTokenBalances,
        postTokenBalances: tokenBalances(keys),
        logs: meta.logs(),
        unitsConsumed: meta.computeUnitsConsumed(),
        innerInstructions: meta.innerInstructions().flatMap((inner, index) =>
          inner.length
            ? [{ index, instructions: inner.map((ix) => ({
                programIdIndex: ix.instruction().programIdIndex(),
                accounts: [...ix.instruction().accounts()],
                data: base58(ix.instruction().data()),
                stackHeight: ix.stackHeight(),
              })) }]
            : [],
        ),
      })
      // Each landed transaction gets its own slot, so `context.slot` moves like a live cluster's.
      svm.warpToSlot(slot() + 1n)
    }
    return { signature, err, logs: meta.logs() }
  }

  const decodeWire = (wire: string, encoding = 'base58') =>
    getTransactionDecoder().decode(encoding === 'base64' ? getBase64Encoder().encode(wire) : getBase58Encoder().encode(wire))

  const methods: Record<string, (params: Params) => unknown> = {
    getHealth: () => 'ok',
    getVersion: () => ({ 'solana-core': '2.2.0-litesvm', 'feature-set': 0 }),
    getGenesisHash: () => '11111111111111111111111111111111',
    getSlot: () => slot(),
    getBlockHeight: () => slot(),
    getEpochInfo: () => {
      const c = svm.getClock()
      return { absoluteSlot: c.slot, blockHeight: c.slot, epoch: c.epoch, slotIndex: c.slot % 432_000n, slotsInEpoch: 432_000n, transactionCount: BigInt(ledger.size) }
    },
    getBalance: ([a]) => ({ context: context(), value: balanceOf(address(a)) }),
    getAccountInfo: ([a, cfg]) => ({ context: context(), value: encodeAccount(svm.getAccount(address(a)), cfg?.encoding, lookup) }),
    getMultipleAccounts: ([as, cfg]) => ({
      context: context(),
      value: (as as string[]).map((a) => encodeAccount(svm.getAccount(address(a)), cfg?.encoding, lookup)),
    }),
    getMinimumBalanceForRentExemption: ([size]) => svm.minimumBalanceForRentExemption(BigInt(size)),
    getLatestBlockhash: () => ({ context: context(), value: { blockhash: svm.latestBlockhash(), lastValidBlockHeight: slot() + 150n } }),
    isBlockhashValid: ([hash]) => ({ context: context(), value: hash === svm.latestBlockhash() }),
    getFeeForMessage: ([message]) => {
      const m = getCompiledTransactionMessageDecoder().decode(getBase64Encoder().encode(message))
      return { context: context(), value: LAMPORTS_PER_SIGNATURE * BigInt(m.header.numSignerAccounts) }
    },
    getRecentPrioritizationFees: () => [],
    getTokenAccountsByOwner: ([owner, filter, cfg]) => {
      let programs = TOKEN_PROGRAMS
      if (filter?.mint) {
        // A real node refuses a mint it cannot find, rather than answering "no accounts".
        const mint = svm.getAccount(address(filter.mint))
        if (!mint.exists || !TOKEN_PROGRAMS.includes(mint.programAddress)) throw new RpcError(-32602, 'Invalid param: could not find mint')
        programs = [mint.programAddress]
      } else if (filter?.programId) {
        if (!TOKEN_PROGRAMS.includes(filter.programId)) throw new RpcError(-32602, 'Invalid param: unrecognized Token program id')
        programs = [filter.programId]
      } else throw new RpcError(-32602, 'Invalid params: expected a mint or programId filter')
      // A token account's owner is bytes 32..64: those of other owners are passed over before parsing (a test opens
      // thousands of accounts, and parsing each one made every read of the program's accounts take ~0.7 s).
      const ownerBytes = getBase58Encoder().encode(owner)
      const ownedBy = (data: ArrayLike<number>) => data.length >= 64 && ownerBytes.every((b, i) => data[32 + i] === b)
      const value = programs.flatMap((program) =>
        svm.getProgramAccounts(address(program)).flatMap((account) => {
          if (!ownedBy(account.data)) return []
          const parsed = parseTokenState(new Uint8Array(account.data), lookup)
          if (parsed?.type !== 'account' || parsed.info.owner !== owner) return []
          if (filter.mint && parsed.info.mint !== filter.mint) return []
          return [{ pubkey: account.address, account: encodeAccount(account, cfg?.encoding, lookup, cfg?.dataSlice) }]
        }),
      )
      return { context: context(), value }
    },
    requestAirdrop: ([a, amount]) => {
      const result = svm.airdrop(address(a), lamports(BigInt(amount)))
      if (!result || result instanceof FailedTransactionMetadata) throw new RpcError(-32603, 'airdrop failed')
      const signature = base58(result.signature())
      ledger.set(signature, { signature, slot: slot(), blockTime: svm.getClock().unixTimestamp, err: null })
      return signature
    },
    simulateTransaction: ([wire, cfg]) => {
      const tx = decodeWire(wire, cfg?.encoding)
      if (cfg?.sigVerify === false) svm.withSigverify(false)
      if (cfg?.replaceRecentBlockhash) svm.withBlockhashCheck(false)
      try {
        const r = svm.simulateTransaction(tx)
        const value = executionResult(r instanceof FailedTransactionMetadata ? r : r.meta())
        const replacement = cfg?.replaceRecentBlockhash
          ? { replacementBlockhash: { blockhash: svm.latestBlockhash(), lastValidBlockHeight: slot() + 150n } }
          : {}
        return { context: context(), value: { ...value, ...replacement } }
      } finally {
        svm.withSigverify(true)
        svm.withBlockhashCheck(true)
      }
    },
    sendTransaction: ([wire, cfg]) => {
      const tx = decodeWire(wire, cfg?.encoding)
      if (!cfg?.skipPreflight) {
        const sim = svm.simulateTransaction(tx)
        if (sim instanceof FailedTransactionMetadata)
          throw new RpcError(-32002, `Transaction simulation failed: ${JSON.stringify(transactionErrorJson(sim.err()))}`, executionResult(sim))
      }
      return submit(tx).signature
    },
    getSignatureStatuses: ([signatures]) => ({
      context: context(),
      value: (signatures as string[]).map((s) => {
        const entry = ledger.get(s)
        if (!entry) return null
        const status = entry.err ? { Err: entry.err } : { Ok: null }
        return { slot: entry.slot, confirmations: null, err: entry.err, confirmationStatus: 'finalized', status }
      }),
    }),
    // Newest first, as a node lists them: the transactions whose message names the address, after `before` and down
    // to (not including) `until`, at most `limit` (a node's 1,000 at most).
    getSignaturesForAddress: ([a, cfg]) => {
      const { before, until, limit = 1000 } = (cfg ?? {}) as { before?: string; until?: string; limit?: number }
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new RpcError(-32602, 'Invalid limit; max 1000')
      const found: unknown[] = []
      let started = before === undefined
      for (const entry of [...ledger.values()].reverse()) {
        if (!started) {
          started = entry.signature === before
          continue
        }
        if (entry.signature === until || found.length === limit) break
        if (!entry.wire || !accountsOf(entry.wire).includes(a)) continue
        found.push({ signature: entry.signature, slot: entry.slot, err: entry.err ?? null, memo: null, blockTime: entry.blockTime, confirmationStatus: 'finalized' })
      }
      return found
    },
    getTransaction: ([signature, cfg]) => {
      const entry = ledger.get(signature)
      return entry?.wire ? transactionResponse({ ...entry, wire: entry.wire }, cfg) : null
    },
  }

  function handleOne(request: any): unknown {
    const { id = null, method, params = [] } = request ?? {}
    try {
      const fn = methods[method]
      if (!fn) throw new RpcError(-32601, `Method not found: ${method}`)
      return { jsonrpc: '2.0', id, result: fn(params) }
    } catch (e) {
      const error = e instanceof RpcError ? { code: e.code, message: e.message, data: e.data } : { code: -32603, message: String((e as Error)?.message ?? e) }
      return { jsonrpc: '2.0', id, error }
    }
  }

  return {
    ledger: ledger as ReadonlyMap<string, LandedTransaction>,
    submit,
    /** One JSON-RPC request or a batch, as parsed from the HTTP body. */
    handle: (body: unknown) => (Array.isArray(body) ? body.map(handleOne) : handleOne(body)),
  }
}
