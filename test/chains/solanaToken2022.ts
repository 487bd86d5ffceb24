/**
 * Token-2022 mints with extensions, and account states, on the LiteSVM test chain, built by hand:
 * @solana-program/token-2022 peers kit 7 and cannot be installed beside kit 8 (plugins/solana/src/token.ts). The
 * instruction numbers and layouts are spl-token-2022's.
 */
import { AccountRole, generateKeyPairSigner, getAddressEncoder, type Address, type Instruction, type KeyPairSigner } from '@solana/kit'
import { getCreateAccountInstruction } from '@solana-program/system'
import { findAssociatedTokenPda, getCreateAssociatedTokenIdempotentInstruction } from '@solana-program/token'
import type { SolanaChain } from './solana.ts'

const TOKEN_2022 = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb' as Address
const SYSTEM = '11111111111111111111111111111111' as Address

export type MintExtension = 'defaultFrozen' | 'nonTransferable' | 'pausable' | 'hookProgram' | 'hookNone'

const bytes = (a: string) => [...getAddressEncoder().encode(a as Address)]
const instruction = (accounts: [Address, AccountRole, KeyPairSigner?][], data: number[]): Instruction =>
  ({
    programAddress: TOKEN_2022,
    accounts: accounts.map(([address, role, signer]) => (signer ? { address, role, signer } : { address, role })),
    data: new Uint8Array(data),
  }) as Instruction

/** Each extension's data length and its initialising instruction (before InitializeMint2), the chain's payer its authority. */
function extension(name: MintExtension, mint: Address, authority: Address): { length: number; init: Instruction } {
  const on = (data: number[]) => instruction([[mint, AccountRole.WRITABLE]], data)
  switch (name) {
    case 'defaultFrozen':
      return { length: 1, init: on([28, 0, 2]) }
    case 'nonTransferable':
      return { length: 0, init: on([32]) }
    case 'pausable':
      return { length: 33, init: on([44, 0, ...bytes(authority)]) }
    case 'hookProgram':
      // Any program id names a hook; the Memo program stands in for one.
      return { length: 64, init: on([36, 0, ...bytes(authority), ...bytes('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr')]) }
    case 'hookNone':
      return { length: 64, init: on([36, 0, ...bytes(authority), ...new Array<number>(32).fill(0)]) }
  }
}

export function token2022(chain: SolanaChain) {
  const payer = chain.payer
  const ata = async (owner: string, mint: Address) => (await findAssociatedTokenPda({ owner: owner as Address, mint, tokenProgram: TOKEN_2022 }))[0]
  const freezeOrThaw = (code: 10 | 11) => (account: Address, mint: Address) =>
    chain.send([instruction([[account, AccountRole.WRITABLE], [mint, AccountRole.READONLY], [payer.address, AccountRole.READONLY_SIGNER, payer]], [code])])
  return {
    /** A 6-decimal Token-2022 mint with `extensions`, the payer its mint and freeze authority. */
    async mint(extensions: MintExtension[] = []): Promise<Address> {
      const mint = await generateKeyPairSigner()
      const parts = extensions.map((name) => extension(name, mint.address, payer.address))
      const space = parts.length ? 165 + 1 + parts.reduce((sum, p) => sum + 4 + p.length, 0) : 82
      await chain.send([
        getCreateAccountInstruction({ payer, newAccount: mint, lamports: chain.svm.minimumBalanceForRentExemption(BigInt(space)), space, programAddress: TOKEN_2022 }),
        ...parts.map((p) => p.init),
        instruction([[mint.address, AccountRole.WRITABLE]], [20, 6, ...bytes(payer.address), 1, ...bytes(payer.address)]),
      ])
      return mint.address
    },
    ata,
    /** The owner's associated account, created by the payer (thawed when the mint's new accounts start frozen). */
    async account(owner: string, mint: Address, thawed = false): Promise<Address> {
      const account = await ata(owner, mint)
      await chain.send([getCreateAssociatedTokenIdempotentInstruction({ payer, owner: owner as Address, mint, ata: account, tokenProgram: TOKEN_2022 })])
      if (thawed) await freezeOrThaw(11)(account, mint)
      return account
    },
    freeze: freezeOrThaw(10),
    pause: (mint: Address) => chain.send([instruction([[mint, AccountRole.WRITABLE], [payer.address, AccountRole.READONLY_SIGNER, payer]], [44, 1])]),
    /** Makes the owner's associated account require a memo before every transfer into it (MemoTransfer). */
    async requireMemos(owner: KeyPairSigner, mint: Address): Promise<Address> {
      const account = await ata(owner.address, mint)
      await chain.send([
        getCreateAssociatedTokenIdempotentInstruction({ payer, owner: owner.address, mint, ata: account, tokenProgram: TOKEN_2022 }),
        instruction([[account, AccountRole.WRITABLE], [payer.address, AccountRole.WRITABLE_SIGNER, payer], [SYSTEM, AccountRole.READONLY], [owner.address, AccountRole.READONLY_SIGNER, owner]], [29, 8, 0]),
        instruction([[account, AccountRole.WRITABLE], [owner.address, AccountRole.READONLY_SIGNER, owner]], [30, 0]),
      ])
      return account
    },
  }
}

/**
 * A Token-2022 mint charging a transfer fee: its TransferFeeConfig written into the mint's data as the program lays it
 * out (two authorities, the withheld amount, then the older and the newer fee: epoch, maximum, bps); LiteSVM's
 * Token-2022 charges what it says.
 */
export async function mintWithTransferFee(chain: SolanaChain, older: [maximum: bigint, bps: number], newer: [maximum: bigint, bps: number] = older, newerEpoch = 1n): Promise<Address> {
  const mint = await chain.createMint({ decimals: 6, tokenProgram: TOKEN_2022 })
  const base = chain.svm.getAccount(mint as Address)
  if (!base.exists) throw new Error('no mint')
  const config = new Uint8Array(108)
  const view = new DataView(config.buffer)
  for (const [at, [maximum, bps], epoch] of [[72, older, 0n], [90, newer, newerEpoch]] as const) {
    view.setBigUint64(at, epoch, true)
    view.setBigUint64(at + 8, maximum, true)
    view.setUint16(at + 16, bps, true)
  }
  const data = new Uint8Array([...base.data, ...new Array<number>(165 - base.data.length).fill(0), 1, 1, 0, 108, 0, ...config])
  chain.svm.setAccount({ ...base, data, lamports: chain.svm.minimumBalanceForRentExemption(BigInt(data.length)) } as typeof base)
  return mint as Address
}
