/**
 * Balances: TON itself from the account state, jettons (TEP-74) from the owner's jetton wallet,
 * which the master names through `get_wallet_address`. Reads go through the client's providers only.
 */
import type { BalanceParameters } from '@earn/core'
import { askChain, type TonChainClient } from './client.ts'
import { toTonAddress } from './address.ts'
import { notJetton, ownJettonWallet } from './jettonMaster.ts'

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
  const fail = notJetton('token', p.token)
  return (await ownJettonWallet(client, master, owner, fail)).balance
}
