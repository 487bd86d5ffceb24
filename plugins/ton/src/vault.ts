/**
 * A TON vault's on-chain facts. A TON "vault" is an address that receives deposits (a contract, or a
 * wallet an operator runs) and issues a receipt jetton; nothing on chain links it to its tokens, so
 * the catalog names them and this reads what the chain holds for them.
 */
import { InvalidArgumentError, UnfitRecipientError, type VaultParameters, type VaultState } from '@earn/core'
import { toTonAddress } from './address.ts'
import type { TonChainClient } from './client.ts'
import { DEFAULT_JETTON_DECIMALS, jettonDecimals, notJetton, ownJettonWallet } from './jettonMaster.ts'
import { unfitRecipient } from './recipient.ts'

const TON_DECIMALS = 9

export async function readTonVault(client: TonChainClient, p: VaultParameters): Promise<VaultState> {
  const vault = toTonAddress(p.vaultAddress, 'vaultAddress')
  const required = (field: 'baseToken' | 'receiptToken', value: string | undefined): string => {
    if (!value)
      throw new InvalidArgumentError(`${field} is required for a TON vault: the chain does not name a vault's tokens`, {
        [field]: field === 'baseToken' ? 'give the jetton master address (or native) from the catalog' : 'give the jetton master address from the catalog',
      })
    return value === 'native' ? value : toTonAddress(value, field).toRawString()
  }
  const baseToken = required('baseToken', p.baseToken)
  const receiptToken = required('receiptToken', p.receiptToken)
  // A withdrawal is the receipt jetton sent back (transactions.ts): with TON for receipt, none could ever be built.
  if (receiptToken === 'native')
    throw new InvalidArgumentError('receiptToken of a TON vault must be its receipt jetton: a withdrawal sends it back to the vault, and TON cannot be one', {
      receiptToken: 'must be a jetton master address, not native',
    })
  // Deposits sent where nothing could move them on would be stranded: refused at import, naming the field.
  // A vault may be the master of its own receipt jetton.
  const fitness = await unfitRecipient(client, vault, toTonAddress(receiptToken))
  if (fitness.reason) throw new UnfitRecipientError(fitness.reason, fitness.consequence ?? 'deposits sent there could never be moved again', 'vaultAddress')
  if (baseToken === 'native' && !fitness.deployed)
    throw new InvalidArgumentError(`vaultAddress ${p.vaultAddress} is not deployed: TON deposits sent there would bounce`, { vaultAddress: 'is not deployed' })

  // The receipt jetton's own decimals where its metadata states them, as EVM and Solana read theirs: the file's (or
  // the base token's) had stood unchecked, and a 3-decimal receipt jetton listed as 12 showed 1.5 as 0.0000000015.
  const receipt = jettonDecimals(client, toTonAddress(receiptToken), notJetton('receiptToken', p.receiptToken!)).then((d) =>
    d === null ? {} : { receiptDecimals: d },
  )
  if (baseToken === 'native') return { baseToken, receiptToken, decimals: TON_DECIMALS, ...(await receipt), totalAssets: fitness.balance }
  const master = toTonAddress(baseToken)
  const fail = notJetton('baseToken', p.baseToken!)
  const [decimals, totalAssets, receiptDecimals] = await Promise.all([
    jettonDecimals(client, master, fail),
    ownJettonWallet(client, master, vault, fail).then((wallet) => wallet.balance),
    receipt,
  ])
  return decimals === null
    ? { baseToken, receiptToken, decimals: DEFAULT_JETTON_DECIMALS, decimalsAssumed: true, ...receiptDecimals, totalAssets }
    : { baseToken, receiptToken, decimals, ...receiptDecimals, totalAssets }
}
