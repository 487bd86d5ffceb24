/**
 * Reading a jetton through providers only: the master names each owner's jetton wallet
 * (`get_wallet_address`) and its data (`get_jetton_data`); a jetton wallet tells its balance
 * (`get_wallet_data`). Balances, vault state and transfer building all go through here.
 */
import { InvalidArgumentError, UnavailableError } from '@earn/core'
import { type Address, beginCell, type Cell, Dictionary, type TupleReader } from '@ton/core'
import { sha256_sync } from '@ton/crypto'
import { askChain, getMethodExitCode, type TonChainClient } from './client.ts'

/** Builds the 400 for "that address is not a jetton master", naming the request field it came from. */
export type NotJetton = (what: string) => InvalidArgumentError

export function notJetton(field: string, input: string): NotJetton {
  // A receipt token is always a jetton: TON itself is refused there (vault.ts).
  const hint = field === 'receiptToken' ? 'must be a deployed jetton master address' : 'must be a deployed jetton master address, or native'
  return (what) => new InvalidArgumentError(`${field} ${input} is not a TEP-74 jetton: ${what}`, { [field]: hint })
}

/** The owner's jetton wallet address, as the master computes it (whether or not it is deployed yet). */
export async function jettonWalletOf(
  client: TonChainClient,
  master: Address,
  owner: Address,
  fail: NotJetton,
): Promise<Address> {
  const provider = client.provider(master)
  // Asked together, one round trip: the get-method's answer, or its failure, counts only where the master is deployed.
  const [state, stack] = await Promise.allSettled([
    askChain('the jetton master state', () => provider.getState()),
    getMethod(() => provider.get('get_wallet_address', [{ type: 'slice', cell: beginCell().storeAddress(owner).endCell() }]), 'get_wallet_address', fail),
  ])
  if (state.status === 'rejected') throw state.reason
  if (state.value.state.type !== 'active') throw fail('no contract is deployed at that address')
  if (stack.status === 'rejected') throw stack.reason
  return read(() => stack.value.readAddress(), fail('get_wallet_address returned no address'))
}

/**
 * The owner's jetton wallet and its balance; one not yet deployed (no transfer has reached it) holds none. The master's
 * word is held both ways: a deployed wallet's own `get_wallet_data` must name that owner and that master, as
 * readTransfers checks a transfer read back. A master's `get_wallet_address` is its own code's answer: one naming the
 * owner's wallet of another jetton had a stream's funding, or a deposit, built to send that jetton instead.
 */
export async function ownJettonWallet(client: TonChainClient, master: Address, owner: Address, fail: NotJetton): Promise<{ address: Address; balance: bigint }> {
  const address = await jettonWalletOf(client, master, owner, fail)
  const provider = client.provider(address)
  // Together again: a wallet not deployed holds none, whatever its get-method answered.
  const [state, stack] = await Promise.allSettled([
    askChain('the jetton wallet state', () => provider.getState()),
    getMethod(() => provider.get('get_wallet_data', []), 'get_wallet_data', fail),
  ])
  if (state.status === 'rejected') throw state.reason
  if (state.value.state.type !== 'active') return { address, balance: 0n }
  if (stack.status === 'rejected') throw stack.reason
  const data = read(() => readWalletData(stack.value), fail('get_wallet_data returned no balance, owner and master'))
  // A jetton balance is a coin amount (VarUInteger 16); any other number is no jetton wallet's.
  if (data.balance < 0n || data.balance >= 2n ** 120n) throw fail('get_wallet_data returned a balance no jetton wallet can hold')
  if (!data.owner.equals(owner) || !data.master.equals(master))
    throw fail(`the wallet its get_wallet_address names for ${owner.toRawString()} is ${data.master.equals(master) ? "another owner's" : "another jetton's"}`)
  return { address, balance: data.balance }
}

/**
 * A jetton wallet's `get_wallet_data` answer (TEP-74: balance, owner, master, the wallet's code; the code where the
 * stack holds one). Throws where the stack starts otherwise: the contract is not a jetton wallet.
 */
export function readWalletData(stack: TupleReader): { balance: bigint; owner: Address; master: Address; code: Cell | undefined } {
  const balance = stack.readBigNumber()
  const owner = stack.readAddress()
  const master = stack.readAddress()
  const next = stack.remaining > 0 ? stack.peek().type : undefined
  return { balance, owner, master, code: next === 'cell' || next === 'slice' || next === 'builder' ? stack.readCell() : undefined }
}

/** TEP-64: "decimals" is optional, and 9 when absent (as TON itself). */
export const DEFAULT_JETTON_DECIMALS = 9

/**
 * The jetton's decimals from on-chain metadata (TEP-64 on-chain or semi-chain content), or null where the minter
 * states none there. Off-chain metadata (a URI to a JSON file) is not fetched: an API server following URIs named by
 * arbitrary contracts would be a request-forgery and latency risk. So null is no fact of the chain: the catalog's
 * token `decimals` is the operator's word then (a bridged 6-decimal stablecoin), else TEP-64's default of 9.
 */
export async function jettonDecimals(client: TonChainClient, master: Address, fail: NotJetton): Promise<number | null> {
  const provider = client.provider(master)
  const state = await askChain('the jetton master state', () => provider.getState())
  if (state.state.type !== 'active') throw fail('no contract is deployed at that address')
  const stack = await getMethod(() => provider.get('get_jetton_data', []), 'get_jetton_data', fail)
  const content = read(() => {
    stack.readBigNumber() // total_supply
    stack.readBigNumber() // mintable
    stack.readAddressOpt() // admin
    return stack.readCell()
  }, fail('get_jetton_data did not return (total_supply, mintable, admin, content, wallet_code)'))
  return onChainDecimals(content)
}

const DECIMALS_KEY = BigInt(`0x${sha256_sync('decimals').toString('hex')}`)

/** `decimals` from TEP-64 on-chain content (`0x00` then a dict of sha256(key) to snake data), or null. */
export function onChainDecimals(content: Cell): number | null {
  try {
    const s = content.beginParse()
    if (s.loadUint(8) !== 0x00) return null // 0x01: off-chain URI
    // The dictionary's root is the cell's first reference (HashmapE: a bit, then the root).
    if (s.remainingRefs > 0 && !forksWithin(s.preloadRef(), MAX_CONTENT_FORKS)) return null
    const dict = Dictionary.load(Dictionary.Keys.BigUint(256), Dictionary.Values.Cell(), s)
    const value = dict.get(DECIMALS_KEY)?.beginParse()
    if (!value || value.loadUint(8) !== 0x00) return null // only snake data (0x00); chunked (0x01) is unused in practice
    const text = value.loadStringTail()
    if (!/^\d{1,3}$/.test(text) || Number(text) > 255) return null
    return Number(text)
  } catch {
    return null
  }
}

/** A TEP-64 dictionary holds a handful of entries. */
const MAX_CONTENT_FORKS = 4_096

/**
 * Whether a dictionary's forks, a cell counted again on every path to it (as @ton/core's dictionary parser walks),
 * number at most `limit`; measured in the distinct cells. Only cells with two references are walked into: a fork's
 * branches, where the parser goes; a leaf's value (one reference, snake data of any length: a large `image_data`) is
 * loaded, not walked. A jetton's admin may set its content to forks whose two branches are one cell: a few dozen
 * cells the parser walked as 2^depth entries, holding the thread and memory of every catalog refresh.
 */
export function forksWithin(root: Cell, limit: number): boolean {
  const sizes = new Map<string, number>()
  const size = (c: Cell): number => {
    if (c.refs.length < 2) return 1
    const key = c.hash().toString('hex')
    const known = sizes.get(key)
    if (known !== undefined) return known
    let n = 1
    for (const ref of c.refs) if ((n += size(ref)) > limit) break
    sizes.set(key, n)
    return n
  }
  return size(root) <= limit
}

/** A chain that did not answer is the caller's retry; any other failure of a jetton read means "not a jetton". */
export function unlessUnavailable(e: unknown): null {
  if (e instanceof UnavailableError) throw e
  return null
}

/** A get-method that ran and failed is the contract saying it is not a jetton, not a transport fault. */
async function getMethod(call: () => Promise<{ stack: TupleReader }>, name: string, fail: NotJetton): Promise<TupleReader> {
  try {
    return (await askChain(name, call)).stack
  } catch (e) {
    const exitCode = getMethodExitCode(e)
    if (exitCode !== undefined) throw fail(`${name} failed with exit code ${exitCode}`)
    throw e
  }
}

function read<T>(value: () => T, otherwise: Error): T {
  try {
    return value()
  } catch {
    throw otherwise
  }
}
