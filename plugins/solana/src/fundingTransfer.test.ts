/**
 * Tagged transfers on LiteSVM: built by the plugin, signed and sent as a wallet would, then read back
 * through the facade's `getTransaction` as from a node.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { InvalidArgumentError, NotFoundError } from '@earn/core'
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { address, generateKeyPairSigner, type KeyPairSigner } from '@solana/kit'
import { startSolana, type SolanaChain } from '../../../test/chains/solana.ts'
import { connect, type SolanaClient } from './client.ts'
import { WALLET_RENT } from './fees.ts'
import { newWallet } from './fixtures.ts'
import { buildTransfer } from './fundingTransfer.ts'
import { readTransfers } from './readTransfers.ts'

const TAG = 'earn:v1:stream:5b0c1f2e-3d4a-4b5c-8d6e-7f8091a2b3c4:0123456789abcdef0123456789abcdef'

let chain: SolanaChain
let client: SolanaClient
let sender: KeyPairSigner
let mint: string

beforeAll(async () => {
  chain = await startSolana()
  client = connect({ SOLANA_RPC_URL: chain.url })
  sender = await generateKeyPairSigner()
  await chain.airdrop(sender.address, 10_000_000_000n)
  mint = await chain.createMint({ decimals: 6 })
  await chain.mintTo({ mint, owner: sender.address, amount: 5_000_000n })
})
afterAll(() => chain?.stop())

const params = (over: Partial<Parameters<typeof buildTransfer>[1]> = {}) => ({
  chainId: 'localnet',
  from: sender.address,
  token: mint,
  to: newWallet().address,
  amount: 1_015_002n,
  tag: TAG,
  ...over,
})

describe('buildTransfer -> send -> readTransfers', () => {
  test('an SPL transfer to a wallet without a token account creates it, moves the amount, and reads back with the memo', async () => {
    const p = params()
    const [step] = await buildTransfer(client, p)
    expect(step!.type).toBe('transfer')
    expect(step!.metadata).toMatchObject({ feePayer: sender.address, token: mint, to: p.to, amount: '1015002', createsRecipientTokenAccount: true })
    expect(step!.description).toBe(`Transfer 1.015002 of token ${mint} to ${p.to}`)
    const signature = await chain.signAndSend(step!.transaction.serializedTransaction as string, sender)
    expect(await chain.tokenBalance(mint, p.to)).toBe(1_015_002n)

    const read = await readTransfers(client, { chainId: 'localnet', txHash: signature })
    expect(read.tag).toBe(TAG)
    expect(read.from).toBe(sender.address)
    // The tokens, by owner; and the lamports the sender paid as rent for the new token account.
    const [ata] = await findAssociatedTokenPda({ owner: address(p.to), mint: address(mint), tokenProgram: TOKEN_PROGRAM_ADDRESS })
    expect(read.transfers).toContainEqual({ token: mint, from: sender.address, to: p.to, amount: 1_015_002n })
    expect(read.transfers.filter((t) => t.token === mint)).toHaveLength(1)
    expect(read.transfers.filter((t) => t.token === 'native').map((t) => [t.from, t.to])).toEqual([[sender.address, ata]])
  })

  test('to a wallet that has its token account already: no creation, only the transfer', async () => {
    const to = newWallet().address
    await chain.mintTo({ mint, owner: to, amount: 0n })
    const [step] = await buildTransfer(client, params({ to, amount: 7n }))
    expect(step!.metadata).toMatchObject({ createsRecipientTokenAccount: false })
    const signature = await chain.signAndSend(step!.transaction.serializedTransaction as string, sender)
    expect((await readTransfers(client, { chainId: 'localnet', txHash: signature })).transfers).toEqual([{ token: mint, from: sender.address, to, amount: 7n }])
  })

  test('a SOL transfer reads back as a native transfer; the fee is not one', async () => {
    const to = newWallet().address
    const [step] = await buildTransfer(client, params({ token: 'native', to, amount: 2_500_000_000n }))
    expect(step!.description).toBe(`Transfer 2.5 SOL to ${to}`)
    const signature = await chain.signAndSend(step!.transaction.serializedTransaction as string, sender)
    expect(await readTransfers(client, { chainId: 'localnet', txHash: signature })).toEqual({
      txHash: signature,
      tag: TAG,
      from: sender.address,
      transfers: [{ token: 'native', from: sender.address, to, amount: 2_500_000_000n }],
    })
  })
})

describe('refusals', () => {
  test('SOL to a recipient holding nothing must be at least the rent-exempt minimum, which lands', async () => {
    const to = newWallet().address
    const small = await buildTransfer(client, params({ token: 'native', to, amount: WALLET_RENT - 1n })).catch((e: unknown) => e)
    expect(small).toBeInstanceOf(InvalidArgumentError)
    expect((small as InvalidArgumentError).context).toEqual({ amount: `must be at least ${WALLET_RENT} while the recipient holds nothing` })
    const [step] = await buildTransfer(client, params({ token: 'native', to, amount: WALLET_RENT }))
    await chain.signAndSend(step!.transaction.serializedTransaction as string, sender)
    expect<bigint | null>(chain.svm.getBalance(address(to))).toBe(WALLET_RENT)
  })

  test('a chain that is not Solana, an amount past u64, a bad address: 400 naming the field', async () => {
    for (const [over, field] of [
      [{ chainId: '1' }, 'chainId'],
      [{ amount: 2n ** 64n }, 'amount'],
      [{ amount: 0n }, 'amount'],
      [{ to: '0xnot' }, 'to'],
      [{ token: 'nope' }, 'token'],
    ] as const) {
      const e = await buildTransfer(client, params(over)).catch((x: unknown) => x)
      expect(e).toBeInstanceOf(InvalidArgumentError)
      expect((e as InvalidArgumentError).context).toHaveProperty(field)
    }
  })

  test('an unknown signature is 404', async () => {
    const unknown = '5'.repeat(87)
    await expect(readTransfers(client, { chainId: 'localnet', txHash: unknown })).rejects.toThrow(NotFoundError)
  })
})
