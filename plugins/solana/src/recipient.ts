/**
 * Whether an address can move on what it is sent: a stream's treasury, a catalog's vault. A program, a sysvar, or an
 * account of the token programs (a token account given for its owner, a mint) can take SOL or own a token account
 * created for it, but nothing ever signs to move them on. No account yet is a new wallet, or a program's PDA.
 */
import { fetchEncodedAccount, type Address, type Rpc, type SolanaRpcApi } from '@solana/kit'
import { SYSTEM_PROGRAM_ADDRESS } from '@solana-program/system'
import { TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { COMMITMENT } from './rpc.ts'
import { TOKEN_2022_PROGRAM_ADDRESS } from './token.ts'

const SYSVAR_OWNER = 'Sysvar1111111111111111111111111111111111111'

/**
 * Why `address` could never move on what it is sent (undefined: it can), and the lamports it holds. `wallet`: only a
 * wallet will do (an account of the System program, or none yet), as for a treasury; otherwise an account of another
 * program (a vault program's PDA) is taken at its program's word.
 */
export async function unfitRecipient(rpc: Rpc<SolanaRpcApi>, address: Address, abortSignal: AbortSignal, p: { wallet: boolean }): Promise<{ reason: string | undefined; lamports: bigint }> {
  const account = await fetchEncodedAccount(rpc, address, { abortSignal, commitment: COMMITMENT })
  if (!account.exists) return { reason: undefined, lamports: 0n }
  return { reason: reasonOf(account.executable, account.programAddress, p.wallet), lamports: account.lamports }
}

function reasonOf(executable: boolean, owner: Address, wallet: boolean): string | undefined {
  if (executable) return 'is a program, not a wallet'
  if (owner === TOKEN_PROGRAM_ADDRESS || owner === TOKEN_2022_PROGRAM_ADDRESS) return 'is a token account or a mint, not a wallet (its owner)'
  if (owner === SYSVAR_OWNER) return 'is a sysvar, not a wallet'
  if (wallet && owner !== SYSTEM_PROGRAM_ADDRESS) return `is an account of program ${owner}, not a wallet`
  return undefined
}
