/**
 * Whether an address can move on what it is sent: a stream's treasury, a catalog's vault. A jetton wallet or master
 * given for its owner takes a jetton transfer (the jettons land in a wallet it owns, which no standard jetton contract
 * ever sends from) or bounces TON; a frozen account bounces TON and holds jettons until unfrozen. Any other contract is
 * taken at its word: a contract is called a jetton wallet or master only when it answers as TEP-74's do, a wallet also
 * named by its master, so a vault with get-methods of its own (or one that is its receipt jetton's master) is taken.
 */
import type { Address, TupleReader } from '@ton/core'
import { askChain, getMethodExitCode, type TonChainClient } from './client.ts'
import { jettonWalletOf, notJetton, readWalletData, unlessUnavailable } from './jettonMaster.ts'

export interface Fitness {
  /** Why funds sent there would be stuck, or undefined. */
  reason: string | undefined
  /** What becomes of them. */
  consequence?: string
  deployed: boolean
  /** Its TON balance, nanotons. */
  balance: bigint
}

/**
 * Why `address` could not move on what it is sent, or undefined; whether a contract is deployed there, and its
 * balance. `ownJetton`: a jetton master the address may be (a vault issuing its own receipt jetton).
 */
export async function unfitRecipient(client: TonChainClient, address: Address, ownJetton?: Address): Promise<Fitness> {
  const provider = client.provider(address)
  const state = await askChain('the recipient account', () => provider.getState())
  const seen = { deployed: state.state.type !== 'uninit', balance: state.balance }
  // Its storage debt unpaid: TON sent bounceable comes back, jettons wait in its jetton wallet until it is unfrozen.
  if (state.state.type === 'frozen') return { reason: 'is frozen (its storage debt unpaid)', consequence: 'what is sent there bounces, or waits until its owner unfreezes it', ...seen }
  if (state.state.type !== 'active') return { reason: undefined, ...seen }
  const answer = (method: string) =>
    askChain(method, () => provider.get(method, [])).then(
      ({ stack }) => stack,
      (e: unknown) => {
        // A get-method this contract does not have fails with an exit code: not a jetton contract.
        if (getMethodExitCode(e) !== undefined) return undefined
        throw e
      },
    )
  const walletData = await answer('get_wallet_data')
  const named = walletData && readAs(walletData, readWalletData)
  // A jetton wallet is one its master names for its owner; the master's refusal (no jetton) says it is not.
  if (named?.code && (await jettonWalletOf(client, named.master, named.owner, notJetton('master', named.master.toRawString())).catch(unlessUnavailable))?.equals(address))
    return { reason: 'is a jetton wallet, not a wallet (its owner)', ...seen }
  if (!ownJetton?.equals(address)) {
    const jettonData = await answer('get_jetton_data')
    if (jettonData && readAs(jettonData, (s) => (s.readBigNumber(), s.readBigNumber(), s.readAddressOpt(), s.readCell(), s.readCell())))
      return { reason: 'is a jetton master, not a wallet (its owner)', ...seen }
  }
  return { reason: undefined, ...seen }
}

/** The stack read as `read` reads it, or undefined where it does not have that shape. */
function readAs<T>(stack: TupleReader, read: (s: TupleReader) => T): T | undefined {
  try {
    return read(stack)
  } catch {
    return undefined
  }
}
