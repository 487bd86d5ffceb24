/**
 * Tagged transfers on LiteSVM: built by the plugin, signed and sent as a wallet would, then read back
 * through the facade's `getTransaction` as from a node.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { InvalidArgumentError, NotFoundError, UnfitRecipientError } from '@earn/core'
import { AuthorityType, findAssociatedTokenPda, getApproveInstruction, getSetAuthorityInstruction, getTransferInstruction, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { address, generateKeyPairSigner, type KeyPairSigner } from '@solana/kit'
import { getTransferSolInstruction } from '@solana-program/system'
import { startSolana, type SolanaChain } from '../../../test/chains/solana.ts'
import { mintWithTransferFee, token2022 } from '../../../test/chains/solanaToken2022.ts'
import { connect, type SolanaClient } from './client.ts'
import { WALLET_RENT } from './fees.ts'
import { newWallet } from './fixtures.ts'
import { buildTransfer } from './fundingTransfer.ts'
import { readTransfers } from './readTransfers.ts'
import { TOKEN_2022_PROGRAM_ADDRESS } from './token.ts'

const u64Max = 2n ** 64n - 1n

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
      tag: TAG, tags: [TAG],
      from: sender.address,
      transfers: [{ token: 'native', from: sender.address, to, amount: 2_500_000_000n }],
    })
  })
})

describe('readTransfers with several owners losing one token', () => {
  const ataOf = async (owner: string) =>
    (await findAssociatedTokenPda({ owner: address(owner), mint: address(mint), tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0]
  async function funded(amount: bigint) {
    const owner = await generateKeyPairSigner()
    await chain.airdrop(owner.address, 1_000_000_000n)
    await chain.mintTo({ mint, owner: owner.address, amount })
    return owner
  }

  test("a delegate moving another owner's tokens to the recipient while sending its own elsewhere is not read as paying the recipient", async () => {
    const [wallet, victim] = [await funded(100n), await funded(100n)]
    const [recipient, elsewhere] = [newWallet().address, newWallet().address]
    for (const owner of [recipient, elsewhere]) await chain.mintTo({ mint, owner, amount: 0n })
    await chain.send([getApproveInstruction({ source: await ataOf(victim.address), delegate: wallet.address, owner: victim, amount: 100n })], victim)
    const signature = await chain.send(
      [
        getTransferInstruction({ source: await ataOf(victim.address), destination: await ataOf(recipient), authority: wallet, amount: 60n }),
        getTransferInstruction({ source: await ataOf(wallet.address), destination: await ataOf(elsewhere), authority: wallet, amount: 60n }),
      ],
      wallet,
    )
    // Paired in account order, the recipient's 60 were the wallet's. Either loser may have paid either gainer.
    const { transfers } = await readTransfers(client, { chainId: 'localnet', txHash: signature })
    expect(transfers.filter((t) => t.token === mint && t.from === wallet.address)).toEqual([])
  })

  test('a token account handed to the recipient (SetAuthority) moved no tokens, and is not read as a transfer', async () => {
    const wallet = await funded(0n)
    const recipient = newWallet().address
    const account = await chain.createTokenAccount({ mint, owner: wallet.address })
    await chain.mintTo({ mint, owner: wallet.address, amount: 80n, account })
    const signature = await chain.send(
      [getSetAuthorityInstruction({ owned: account, owner: wallet, authorityType: AuthorityType.AccountOwner, newAuthority: address(recipient) })],
      wallet,
    )
    // Read by owner, the 80 it held went from the wallet to the recipient.
    const { transfers } = await readTransfers(client, { chainId: 'localnet', txHash: signature })
    expect(transfers.filter((t) => t.token === mint)).toEqual([])
  })

  test("a relayed SOL transfer is read whole, whatever the relayer (the fee payer) pays beside it", async () => {
    const [wallet, relayer] = [await funded(0n), await funded(0n)]
    const [recipient, tip] = [newWallet().address, newWallet().address]
    const signature = await chain.send(
      [
        getTransferSolInstruction({ source: wallet, destination: address(recipient), amount: 500_000_000n }),
        getTransferSolInstruction({ source: relayer, destination: address(tip), amount: 1_000_000n }),
      ],
      relayer,
    )
    // Bounded by every other loser's loss, the relayer's tip included, the wallet's transfer read 1,000,000 short.
    const { transfers } = await readTransfers(client, { chainId: 'localnet', txHash: signature })
    expect(transfers.filter((t) => t.token === 'native' && t.from === wallet.address && t.to === recipient)).toEqual([{ token: 'native', from: wallet.address, to: recipient, amount: 500_000_000n }])
  })

  test('two owners paying one recipient in one transaction are each read with their own part', async () => {
    const [first, second] = [await funded(100n), await funded(100n)]
    const recipient = newWallet().address
    await chain.mintTo({ mint, owner: recipient, amount: 0n })
    const signature = await chain.send(
      [
        getTransferInstruction({ source: await ataOf(first.address), destination: await ataOf(recipient), authority: first, amount: 30n }),
        getTransferInstruction({ source: await ataOf(second.address), destination: await ataOf(recipient), authority: second, amount: 45n }),
      ],
      first,
    )
    const { transfers } = await readTransfers(client, { chainId: 'localnet', txHash: signature })
    const byOwner = transfers.filter((t) => t.token === mint).sort((a, b) => Number(a.amount - b.amount))
    expect(byOwner).toEqual([
      { token: mint, from: first.address, to: recipient, amount: 30n },
      { token: mint, from: second.address, to: recipient, amount: 45n },
    ])
  })
})

describe('Token-2022: a recipient that requires memos, and what no transfer can move', () => {
  const t22 = () => token2022(chain)
  const transfer = (token: string, to: string, amount = 1_000n) => buildTransfer(client, params({ token, to, amount }))
  async function refusal(token: string, to: string) {
    const error = await transfer(token, to).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(InvalidArgumentError)
    return (error as InvalidArgumentError).context.token
  }

  test('a recipient account that requires a memo before each transfer (MemoTransfer) receives the built transfer', async () => {
    const mint = await t22().mint()
    await chain.mintTo({ mint, owner: sender.address, amount: 5_000n })
    const recipient = await generateKeyPairSigner()
    await t22().requireMemos(recipient, mint)
    const [step] = await transfer(mint, recipient.address)
    // The tag's memo, just before the transfer, under a Memo program the token program reads: it lands.
    const signature = await chain.signAndSend(step!.transaction.serializedTransaction as string, sender)
    expect(await chain.tokenBalance(mint, recipient.address)).toBe(1_000n)
    expect((await readTransfers(client, { chainId: 'localnet', txHash: signature })).tag).toBe(TAG)
  })

  test('a non-transferable, a paused or a hooked mint, and frozen accounts, are 400s naming the token, before anything is signed', async () => {
    const plain = await t22().mint(['hookNone'])
    await chain.mintTo({ mint: plain, owner: sender.address, amount: 5_000n })
    for (const [extensions, problem] of [
      [['nonTransferable'], 'is non-transferable'],
      [['hookProgram'], 'has a transfer hook program, whose accounts this server does not add'],
    ] as const) {
      const mint = await t22().mint([...extensions])
      await chain.mintTo({ mint, owner: sender.address, amount: 5_000n })
      expect(await refusal(mint, newWallet().address)).toBe(problem)
    }
    const paused = await t22().mint(['pausable'])
    await chain.mintTo({ mint: paused, owner: sender.address, amount: 5_000n })
    expect((await transfer(paused, newWallet().address)).length).toBe(1)
    await t22().pause(paused)
    expect(await refusal(paused, newWallet().address)).toBe('is paused')

    // New accounts start frozen: the recipient's cannot be created here; thawed by the mint's authority, it receives.
    const frozenByDefault = await t22().mint(['defaultFrozen'])
    await chain.mintTo({ mint: frozenByDefault, owner: sender.address, amount: 5_000n, account: await t22().account(sender.address, frozenByDefault, true) })
    expect(await refusal(frozenByDefault, newWallet().address)).toBe('new accounts start frozen')
    const thawed = newWallet().address
    await t22().account(thawed, frozenByDefault, true)
    await chain.signAndSend((await transfer(frozenByDefault, thawed))[0]!.transaction.serializedTransaction as string, sender)
    expect(await chain.tokenBalance(frozenByDefault, thawed)).toBe(1_000n)

    // An account frozen by the freeze authority, the recipient's or the sender's.
    const recipient = newWallet().address
    await t22().freeze(await t22().account(recipient, plain), plain)
    expect(await refusal(plain, recipient)).toBe("frozen in the recipient's account")
    await t22().freeze(await t22().ata(sender.address, plain), plain)
    expect(await refusal(plain, newWallet().address)).toBe("frozen in the wallet's account")
  })
})

describe('a recipient that could never move what it is sent', () => {
  test('a token account (given for its owner), a mint or a program is refused; a wallet never used, or a multisig vault PDA, is taken', async () => {
    const owner = newWallet().address
    const tokenAccount = await chain.mintTo({ mint, owner, amount: 0n })
    for (const [to, reason] of [
      [tokenAccount, 'is a token account or a mint, not a wallet (its owner)'],
      [mint, 'is a token account or a mint, not a wallet (its owner)'],
      ['SysvarC1ock11111111111111111111111111111111', 'is a sysvar, not a wallet'],
      [TOKEN_PROGRAM_ADDRESS, 'is a program, not a wallet'],
      ['11111111111111111111111111111111', 'is a program, not a wallet'],
    ] as const) {
      for (const token of [mint, 'native']) {
        const refused = await buildTransfer(client, params({ token, to, amount: 1_000_000_000n })).catch((e: unknown) => e)
        expect(refused, `${to} ${token}`).toBeInstanceOf(UnfitRecipientError)
        expect((refused as UnfitRecipientError).reason).toBe(reason)
      }
    }
    // An address off the curve with no account yet (a Squads vault, say) is a wallet its program signs for.
    const [pda] = await findAssociatedTokenPda({ owner: address(owner), mint: address(mint), tokenProgram: TOKEN_2022_PROGRAM_ADDRESS })
    expect((await buildTransfer(client, params({ to: pda }))).length).toBe(1)
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

  test("a Token-2022 mint charging a transfer fee, in force or scheduled, is refused (the treasury would get less than asked); a fee of 0, or one switched off, lands whole", async () => {
    async function mintWithFee(older: [maximum: bigint, bps: number], newer: [maximum: bigint, bps: number], newerEpoch = 1n) {
      const feeMint = await mintWithTransferFee(chain, older, newer, newerEpoch)
      await chain.mintTo({ mint: feeMint, owner: sender.address, amount: 5_000_000n })
      return feeMint
    }
    for (const [older, newer, fee] of [
      [[10_000n, 100], [10_000n, 100], 10_000n],
      [[u64Max, 0], [u64Max, 100], 10_151n],
      [[3n, 50], [0n, 0], 3n],
    ] as const) {
      const feeMint = await mintWithFee(older as [bigint, number], newer as [bigint, number])
      const e = await buildTransfer(client, params({ token: feeMint })).catch((x: unknown) => x)
      expect(e).toBeInstanceOf(InvalidArgumentError)
      expect((e as InvalidArgumentError).context).toEqual({ token: 'charges a transfer fee' })
      expect((e as InvalidArgumentError).message).toContain(`up to ${fee} of these 1015002`)
    }
    // No fee; a zero maximum; and a fee switched off from this epoch on (the chain's epoch is 0 here), whose older fee stays stored.
    expect(chain.svm.getClock().epoch).toBe(0n)
    for (const free of [[[u64Max, 0], [u64Max, 0], 1n], [[0n, 100], [0n, 100], 1n], [[3n, 50], [0n, 0], 0n]] as const) {
      const feeMint = await mintWithFee(free[0] as [bigint, number], free[1] as [bigint, number], free[2])
      const p = params({ token: feeMint })
      const [step] = await buildTransfer(client, p)
      await chain.signAndSend(step!.transaction.serializedTransaction as string, sender)
      expect(await chain.tokenBalance(feeMint, p.to)).toBe(1_015_002n)
    }
  })

  test('an unknown signature is 404', async () => {
    const unknown = '5'.repeat(87)
    await expect(readTransfers(client, { chainId: 'localnet', txHash: unknown })).rejects.toThrow(NotFoundError)
  })
})
