/**
 * Balances: TON itself from the account state, jettons (TEP-74) from the owner's jetton wallet,
 * which the master names through `get_wallet_address`. Reads go through the client's providers only.
 */
import { type BalanceParameters, InvalidArgumentError } from '@earn/core'
import { beginCell, type TupleReader } from '@ton/core'
import { askChain, getMethodExitCode, type TonChainClient } from './client.ts'
import { toTonAddress } from './address.ts'

/**
 * Smallest units: nanotons for `native`, else the jetton's base units. `chainId` is not consulted:
 * a client is bound to one network's endpoint, so the server picks the client by chain instead.
 */
export async function readTonBalance(client: TonChainClient, p: BalanceParameters): Promise<bigint> {
  const owner = toTonAddress(p.owner, 'owner')
  if (p.token === 'native') {
    const state = await askChain('the account balance', () => client.provider(owner).getState())
    return state.balance
  }
  const master = toTonAddress(p.token, 'token')
  const notJetton = (what: string) =>
    new InvalidArgumentError(`token ${p.token} is not a TEP-74 jetton: ${what}`, {
      token: 'must be a deployed jetton master address, or native',
    })

  const masterProvider = client.provider(master)
  const masterState = await askChain('the jetton master state', () => masterProvider.getState())
  if (masterState.state.type !== 'active') throw notJetton('no contract is deployed at that address')
  const walletStack = await getMethod(
    () => masterProvider.get('get_wallet_address', [{ type: 'slice', cell: beginCell().storeAddress(owner).endCell() }]),
    'get_wallet_address',
    notJetton,
  )
  const jettonWallet = read(() => walletStack.readAddress(), notJetton('get_wallet_address returned no address'))

  const walletProvider = client.provider(jettonWallet)
  // A jetton wallet is deployed by its first incoming transfer; until then the owner holds none.
  const walletState = await askChain('the jetton wallet state', () => walletProvider.getState())
  if (walletState.state.type !== 'active') return 0n
  const dataStack = await getMethod(() => walletProvider.get('get_wallet_data', []), 'get_wallet_data', notJetton)
  return read(() => dataStack.readBigNumber(), notJetton('get_wallet_data returned no balance'))
}

/** A get-method that ran and failed is the contract saying it is not a jetton, not a transport fault. */
async function getMethod(
  call: () => Promise<{ stack: TupleReader }>,
  name: string,
  notJetton: (what: string) => Error,
): Promise<TupleReader> {
  try {
    return (await askChain(name, call)).stack
  } catch (e) {
    const exitCode = getMethodExitCode(e)
    if (exitCode !== undefined) throw notJetton(`${name} failed with exit code ${exitCode}`)
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

