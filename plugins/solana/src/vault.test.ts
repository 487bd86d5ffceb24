import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { InvalidArgumentError, type VaultParameters } from '@earn/core'
import { address } from '@solana/kit'
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { startSolana, type SolanaChain } from '../../../test/chains/solana.ts'
import { connect, type SolanaClient } from './client.ts'
import { newWallet } from './fixtures.ts'
import { readVault } from './vault.ts'

let chain: SolanaChain
let client: SolanaClient

beforeAll(async () => {
  chain = await startSolana()
  client = connect({ SOLANA_RPC_URL: chain.url })
})
afterAll(() => chain?.stop())

const read = (p: Partial<VaultParameters>) => readVault(client, { chainId: 'localnet', vaultAddress: newWallet().address, ...p })
const rejection = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e)

describe('balance.vault', () => {
  test("decimals of the base and receipt mints, and the vault's associated account balance as total assets", async () => {
    const [baseToken, receiptToken] = [await chain.createMint({ decimals: 9 }), await chain.createMint({ decimals: 9 })]
    const vaultAddress = newWallet().address
    expect(await read({ vaultAddress, baseToken, receiptToken })).toEqual({ baseToken, receiptToken, decimals: 9, receiptDecimals: 9, totalAssets: 0n })
    await chain.mintTo({ mint: baseToken, owner: vaultAddress, amount: 123_456_789n })
    expect(await read({ vaultAddress, baseToken, receiptToken })).toEqual({ baseToken, receiptToken, decimals: 9, receiptDecimals: 9, totalAssets: 123_456_789n })
    // Each mint's own: whether they may differ is core's to say (the ecosystem's receipts are one for one).
    const sixDecimals = await chain.createMint({ decimals: 6 })
    expect(await read({ vaultAddress, baseToken, receiptToken: sixDecimals })).toMatchObject({ decimals: 9, receiptDecimals: 6 })
  })

  test("SOL sent to the vault account's address before it exists reads as no assets yet, not a node failure", async () => {
    const [baseToken, receiptToken] = [await chain.createMint({ decimals: 9 }), await chain.createMint({ decimals: 9 })]
    const vaultAddress = newWallet().address
    const [ata] = await findAssociatedTokenPda({ owner: address(vaultAddress), mint: baseToken, tokenProgram: TOKEN_PROGRAM_ADDRESS })
    await chain.airdrop(ata, 1_000_000n)
    expect(await read({ vaultAddress, baseToken, receiptToken })).toEqual({ baseToken, receiptToken, decimals: 9, receiptDecimals: 9, totalAssets: 0n })
  })

  test('a SOL vault (base token native) counts the lamports of its deposit authority', async () => {
    const receiptToken = await chain.createMint({ decimals: 9 })
    const vaultAddress = newWallet().address
    await chain.airdrop(vaultAddress, 2_500_000_000n)
    expect(await read({ vaultAddress, baseToken: 'native', receiptToken })).toEqual({
      baseToken: 'native',
      receiptToken,
      decimals: 9,
      receiptDecimals: 9,
      totalAssets: 2_500_000_000n,
    })
  })

  test('missing catalog tokens are a 400 naming each', async () => {
    const e = await rejection(read({}))
    expect(e).toBeInstanceOf(InvalidArgumentError)
    expect(Object.keys((e as InvalidArgumentError).context).sort()).toEqual(['baseToken', 'receiptToken'])
    const mint = await chain.createMint()
    const onlyBase = await rejection(read({ baseToken: mint }))
    expect(Object.keys((onlyBase as InvalidArgumentError).context)).toEqual(['receiptToken'])
  })

  test('a base or receipt token that is no mint is a 400 naming it', async () => {
    const mint = await chain.createMint()
    const notBase = await rejection(read({ baseToken: newWallet().address, receiptToken: mint }))
    expect((notBase as InvalidArgumentError).context).toEqual({ baseToken: 'not a token mint on this cluster' })
    const notReceipt = await rejection(read({ baseToken: mint, receiptToken: newWallet().address }))
    expect((notReceipt as InvalidArgumentError).context).toEqual({ receiptToken: 'not a token mint on this cluster' })
  })

  test('a vault address deposits could never leave (a program, a sysvar, a token account or a mint) is a 400 naming vaultAddress', async () => {
    const [baseToken, receiptToken] = [await chain.createMint(), await chain.createMint()]
    const tokenAccount = await chain.mintTo({ mint: baseToken, owner: newWallet().address, amount: 0n })
    for (const [vaultAddress, problem] of [
      [tokenAccount, 'is a token account or a mint, not a wallet (its owner)'],
      [baseToken, 'is a token account or a mint, not a wallet (its owner)'],
      ['TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA', 'is a program, not a wallet'],
      ['SysvarRent111111111111111111111111111111111', 'is a sysvar, not a wallet'],
    ] as const) {
      for (const base of [baseToken, 'native']) {
        const e = await rejection(read({ vaultAddress, baseToken: base, receiptToken }))
        expect(e, `${vaultAddress} ${base}`).toBeInstanceOf(InvalidArgumentError)
        expect((e as InvalidArgumentError).context).toEqual({ vaultAddress: problem })
      }
    }
  })
})
