/**
 * A vault's on-chain facts for the catalog. Solana vaults follow no common standard like ERC-4626
 * and name neither token on chain, so the catalog names them; the chain gives the base token's
 * decimals and what the vault's deposit authority holds of it.
 */
import { InvalidArgumentError, UnfitRecipientError, type VaultParameters, type VaultState } from '@earn/core'
import { address } from '@solana/kit'
import { parseAddress } from './address.ts'
import { SOL_DECIMALS } from './amount.ts'
import { ownsSolanaChain } from './chain.ts'
import type { SolanaClient } from './client.ts'
import { clusterRpc } from './cluster.ts'
import { COMMITMENT, deadline, rpcFailure } from './rpc.ts'
import { unfitRecipient } from './recipient.ts'
import { readMintWithAccounts } from './token.ts'

export async function readVault(client: SolanaClient, p: VaultParameters): Promise<VaultState> {
  if (!ownsSolanaChain(p.chainId))
    throw new InvalidArgumentError(`chainId ${p.chainId} is not a Solana cluster`, { chainId: 'not a Solana cluster' })
  const vault = address(parseAddress(p.vaultAddress, 'vaultAddress'))
  const { baseToken, receiptToken } = p
  if (!baseToken || !receiptToken)
    throw new InvalidArgumentError('Solana vaults need baseToken and receiptToken from the catalog', {
      ...(baseToken ? {} : { baseToken: 'required for Solana vaults' }),
      ...(receiptToken ? {} : { receiptToken: 'required for Solana vaults' }),
    })
  const receiptMint = address(parseAddress(receiptToken, 'receiptToken'))
  const baseMint = baseToken === 'native' ? undefined : address(parseAddress(baseToken, 'baseToken'))
  const rpc = await clusterRpc(client, p.chainId, 'Solana vaults')
  const abortSignal = deadline()
  try {
    // The receipt mint is read too: its decimals, and proof that it is one (a catalog typo should fail at
    // import, not at the first withdrawal).
    const [base, receipt, unfit] = await Promise.all([
      baseMint
        ? readMintWithAccounts(rpc, { mint: baseMint, owners: [vault], field: 'baseToken', abortSignal }).then((t) => ({
            decimals: t.decimals,
            // An account the vault handed to another holds none of its assets.
            totalAssets: t.accounts[0]!.owner === vault ? t.accounts[0]!.amount! : 0n,
          }))
        : rpc
            .getBalance(vault, { commitment: COMMITMENT })
            .send({ abortSignal })
            .then(({ value }) => ({ decimals: SOL_DECIMALS, totalAssets: value })),
      readMintWithAccounts(rpc, { mint: receiptMint, owners: [], field: 'receiptToken', abortSignal }),
      // Deposits sent where nothing could move them on would be stranded (recipient.ts); a vault program's PDA is taken.
      unfitRecipient(rpc, vault, abortSignal, { wallet: false }),
    ])
    if (unfit.reason) throw new UnfitRecipientError(unfit.reason, 'deposits sent there could never be moved again', 'vaultAddress')
    // Only the associated account counts: it is where deposits land (deposit.ts).
    return { baseToken, receiptToken: receiptMint, decimals: base.decimals, receiptDecimals: receipt.decimals, totalAssets: base.totalAssets }
  } catch (e) {
    throw rpcFailure(e)
  }
}
