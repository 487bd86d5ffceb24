/**
 * Deposits and withdrawals built by the plugin, signed the way a wallet signs them and executed on
 * LiteSVM through the JSON-RPC facade: the balances that result are the test, not the bytes.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ChainNotConfiguredError, InsufficientBalanceError, InvalidAddressError, InvalidArgumentError, UnavailableError, type BuildParameters, type UnsignedTransaction } from '@earn/core'
import {
  address,
  generateKeyPairSigner,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  isSolanaError,
  SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE,
  type KeyPairSigner,
} from '@solana/kit'
// The tag's memo goes just before a token transfer, under Memo v3 (tag.ts).
import { LEGACY_MEMO_PROGRAM_ADDRESS_V3 as MEMO } from '@solana-program/memo'
import { SYSTEM_PROGRAM_ADDRESS } from '@solana-program/system'
import { ASSOCIATED_TOKEN_PROGRAM_ADDRESS, AuthorityType, findAssociatedTokenPda, getSetAuthorityInstruction, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { startSolana, type SolanaChain } from '../../../test/chains/solana.ts'
import { mintWithTransferFee } from '../../../test/chains/solanaToken2022.ts'
import { readBalance } from './balance.ts'
import { connect, type SolanaClient } from './client.ts'
import { rentExempt, WALLET_RENT } from './fees.ts'
import { TOKEN_2022_PROGRAM_ADDRESS } from './token.ts'
import { newWallet } from './fixtures.ts'
import { buildTransactions } from './transactions.ts'

let chain: SolanaChain
let client: SolanaClient

beforeAll(async () => {
  chain = await startSolana()
  client = connect({ SOLANA_RPC_URL: chain.url })
})
afterAll(() => chain?.stop())

const SOL = 1_000_000_000n
const FEE = 5_000n
let tagCounter = 0
const nextTag = () => `earn:v1:dist-${++tagCounter}:action-${tagCounter}:mac${tagCounter}`

interface Opportunity {
  vault: string
  baseToken: string
  receiptToken: string
}

/** A funded user and a vault with its own base and receipt mints; the vault holds no token account yet. */
async function setup(p: { tokens?: bigint } = {}) {
  const user = await generateKeyPairSigner()
  await chain.airdrop(user.address, 10n * SOL)
  const baseToken = await chain.createMint({ decimals: 6 })
  const receiptToken = await chain.createMint({ decimals: 6 })
  if (p.tokens) await chain.mintTo({ mint: baseToken, owner: user.address, amount: p.tokens })
  return { user, opportunity: { vault: newWallet().address, baseToken, receiptToken } satisfies Opportunity }
}

function deposit(user: KeyPairSigner, o: Opportunity, amount: bigint, extra: Partial<BuildParameters> = {}): BuildParameters {
  return {
    kind: 'deposit',
    chainId: 'localnet',
    owner: user.address,
    opportunity: { id: 'opp', chainId: 'localnet', vaultAddress: o.vault, baseToken: o.baseToken, receiptToken: o.receiptToken },
    tokenIn: o.baseToken,
    mode: 'direct',
    amount,
    slippageBps: 50,
    tag: nextTag(),
    ...extra,
  } as BuildParameters
}

function withdraw(user: KeyPairSigner, o: Opportunity, amount: bigint, extra: Partial<BuildParameters> = {}): BuildParameters {
  const { tokenIn: _t, mode: _m, ...rest } = deposit(user, o, amount) as Extract<BuildParameters, { kind: 'deposit' }>
  return { ...rest, kind: 'withdraw', ...extra } as BuildParameters
}

const serialized = (step: UnsignedTransaction) => step.transaction.serializedTransaction as string

function decode(step: UnsignedTransaction) {
  const tx = getTransactionDecoder().decode(getBase64Encoder().encode(serialized(step)))
  const message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes)
  if (message.version === 1) throw new Error('expected a v0 message')
  const programs = message.instructions.map((ix) => message.staticAccounts[ix.programAddressIndex])
  return { tx, message, programs }
}

const rejection = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e)

describe('deposit (SPL)', () => {
  test('one unsigned v0 transaction: the user pays, a recent blockhash, an empty signature slot', async () => {
    const { user, opportunity } = await setup({ tokens: 5_000_000n })
    const p = deposit(user, opportunity, 1_500_000n)
    const steps = await buildTransactions(client, p)
    expect(steps.map((s) => s.type)).toEqual(['deposit'])
    const [step] = steps as [UnsignedTransaction]
    expect(Object.keys(step.transaction)).toEqual(['serializedTransaction'])
    expect(step.description).toBe(`Deposit 1.5 of token ${opportunity.baseToken} into vault ${opportunity.vault}`)

    const { tx, message, programs } = decode(step)
    expect(message.version).toBe(0)
    expect(message.staticAccounts[0]).toBe(user.address)
    expect(message.header.numSignerAccounts).toBe(1) // only the user signs
    expect(Object.keys(tx.signatures)).toEqual([user.address])
    expect(tx.signatures[user.address as keyof typeof tx.signatures]).toBeNull() // 64 zero bytes on the wire
    const { value: latest } = await chain.rpc.getLatestBlockhash().send()
    expect(message.lifetimeToken).toBe(latest.blockhash)
    expect(step.metadata).toEqual({
      recentBlockhash: latest.blockhash,
      lastValidBlockHeight: latest.lastValidBlockHeight.toString(),
      feePayer: user.address,
      createsVaultTokenAccount: true,
    })
    expect(programs).toEqual([ASSOCIATED_TOKEN_PROGRAM_ADDRESS, MEMO, TOKEN_PROGRAM_ADDRESS])
    const memo = message.instructions[1]!
    expect(new TextDecoder().decode(memo.data as Uint8Array)).toBe(p.tag)
  })

  test("signed and sent, it moves the tokens; the vault's account is created on the first deposit only", async () => {
    const { user, opportunity } = await setup({ tokens: 10_000_000n })
    const first = (await buildTransactions(client, deposit(user, opportunity, 3_000_000n)))[0]!
    expect(first.metadata?.createsVaultTokenAccount).toBe(true)
    await chain.signAndSend(serialized(first), user)
    expect(await chain.tokenBalance(opportunity.baseToken, opportunity.vault)).toBe(3_000_000n)
    expect(await chain.tokenBalance(opportunity.baseToken, user.address)).toBe(7_000_000n)

    const second = (await buildTransactions(client, deposit(user, opportunity, 2_000_000n)))[0]!
    expect(second.metadata?.createsVaultTokenAccount).toBe(false)
    expect(decode(second).programs).toEqual([MEMO, TOKEN_PROGRAM_ADDRESS])
    await chain.signAndSend(serialized(second), user)
    expect(await chain.tokenBalance(opportunity.baseToken, opportunity.vault)).toBe(5_000_000n)
    expect(await chain.tokenBalance(opportunity.baseToken, user.address)).toBe(5_000_000n)
  })

  test('two deposits built before the vault has an account both land (the creation is idempotent)', async () => {
    const { user, opportunity } = await setup({ tokens: 10_000_000n })
    const a = (await buildTransactions(client, deposit(user, opportunity, 1_000_000n)))[0]!
    const b = (await buildTransactions(client, deposit(user, opportunity, 2_000_000n)))[0]!
    expect([a.metadata?.createsVaultTokenAccount, b.metadata?.createsVaultTokenAccount]).toEqual([true, true])
    await chain.signAndSend(serialized(a), user)
    await chain.signAndSend(serialized(b), user)
    expect(await chain.tokenBalance(opportunity.baseToken, opportunity.vault)).toBe(3_000_000n)
  })

  test("the user pays the fee and the vault account's rent; the vault pays nothing", async () => {
    const { user, opportunity } = await setup({ tokens: 1_000_000n })
    await chain.airdrop(opportunity.vault, SOL)
    const step = (await buildTransactions(client, deposit(user, opportunity, 1_000_000n)))[0]!
    const before = chain.svm.getBalance(user.address)!
    await chain.signAndSend(serialized(step), user)
    const rent = chain.svm.minimumBalanceForRentExemption(165n)
    expect<bigint | null>(chain.svm.getBalance(user.address)).toBe(before - FEE - rent)
    expect<bigint | null>(chain.svm.getBalance(address(opportunity.vault))).toBe(SOL)
  })

  test("a wallet without the SOL for the fee and the vault account's rent is refused, saying so; with exactly that, it lands", async () => {
    const user = await generateKeyPairSigner()
    const { opportunity } = await setup()
    await chain.mintTo({ mint: opportunity.baseToken, owner: user.address, amount: 1_000n })
    const rent = chain.svm.minimumBalanceForRentExemption(165n)
    expect(rentExempt(165)).toBe(rent)
    await chain.airdrop(user.address, FEE + rent - 1n)
    const e = await rejection(buildTransactions(client, deposit(user, opportunity, 1_000n)))
    expect(e).toBeInstanceOf(InsufficientBalanceError)
    expect((e as InsufficientBalanceError).context).toEqual({
      required: (FEE + rent).toString(),
      available: (FEE + rent - 1n).toString(),
      token: 'native',
      covers: `the 5000-lamport fee, ${rent} of rent for the recipient's new token account`,
    })
    await chain.airdrop(user.address, 1n)
    await chain.signAndSend(serialized((await buildTransactions(client, deposit(user, opportunity, 1_000n)))[0]!), user)
    expect(await chain.tokenBalance(opportunity.baseToken, opportunity.vault)).toBe(1_000n)
    expect(chain.svm.getBalance(user.address) ?? 0n).toBe(0n)
  })

  test('a Token-2022 mint: the deposit lands, the vault account created under Token-2022, its larger rent asked of the wallet exactly', async () => {
    const user = await generateKeyPairSigner()
    const { opportunity: o } = await setup()
    const mint = await chain.createMint({ decimals: 6, tokenProgram: TOKEN_2022_PROGRAM_ADDRESS })
    const opportunity = { ...o, baseToken: mint }
    await chain.mintTo({ mint, owner: user.address, amount: 1_000n })
    // An associated Token-2022 account carries ImmutableOwner: 170 bytes, not 165.
    const rent = rentExempt(170)
    await chain.airdrop(user.address, FEE + rent - 1n)
    const short = await rejection(buildTransactions(client, deposit(user, opportunity, 1_000n)))
    expect(short).toBeInstanceOf(InsufficientBalanceError)
    expect((short as InsufficientBalanceError).context).toMatchObject({ required: (FEE + rent).toString(), token: 'native' })
    await chain.airdrop(user.address, 1n)
    const [step] = await buildTransactions(client, deposit(user, opportunity, 1_000n))
    expect(step!.metadata).toMatchObject({ createsVaultTokenAccount: true })
    await chain.signAndSend(serialized(step!), user)
    const [vaultAta] = await findAssociatedTokenPda({ owner: address(opportunity.vault), mint: address(mint), tokenProgram: TOKEN_2022_PROGRAM_ADDRESS })
    expect(chain.svm.getAccount(vaultAta)).toMatchObject({ exists: true, programAddress: TOKEN_2022_PROGRAM_ADDRESS, lamports: rent })
    expect(await chain.tokenBalance(mint, opportunity.vault)).toBe(1_000n)
    expect(await readBalance(client, { chainId: 'localnet', owner: user.address, token: mint })).toBe(0n)
    expect(chain.svm.getBalance(user.address) ?? 0n).toBe(0n)
  })

  test("a Token-2022 mint's extensions price the new account at exactly its size: the wallet holding just that lands the deposit", async () => {
    // Extensions written into a Token-2022 mint's data (type, length, value after the account type byte), as a
    // mint initialized with them holds: MetadataPointer (18) adds nothing to an account, TransferFeeConfig (1, a 0 bps
    // fee here) adds TransferFeeAmount (12 bytes).
    async function mintWith(extensions: [type: number, length: number][]) {
      const mint = await chain.createMint({ decimals: 6, tokenProgram: TOKEN_2022_PROGRAM_ADDRESS })
      const base = chain.svm.getAccount(address(mint))
      if (!base.exists) throw new Error('no mint')
      const tlv = extensions.flatMap(([type, length]) => [type & 0xff, type >> 8, length & 0xff, length >> 8, ...new Array<number>(length).fill(0)])
      const data = new Uint8Array([...base.data, ...new Array<number>(165 - base.data.length).fill(0), 1, ...tlv])
      chain.svm.setAccount({ ...base, data, lamports: chain.svm.minimumBalanceForRentExemption(BigInt(data.length)) } as typeof base)
      return mint
    }
    // ConfidentialTransferFeeConfig (16) adds nothing to a new account: its part comes when the owner configures it.
    for (const [extensions, accountSize] of [[[[18, 64]], 170], [[[18, 64], [1, 108]], 182], [[[1, 108], [16, 129]], 182]] as const) {
      const user = await generateKeyPairSigner()
      const { opportunity: o } = await setup()
      const mint = await mintWith(extensions as unknown as [number, number][])
      await chain.mintTo({ mint, owner: user.address, amount: 1_000n })
      const rent = rentExempt(accountSize)
      await chain.airdrop(user.address, FEE + rent)
      const [step] = await buildTransactions(client, deposit(user, { ...o, baseToken: mint }, 1_000n))
      await chain.signAndSend(serialized(step!), user)
      const [vaultAta] = await findAssociatedTokenPda({ owner: address(o.vault), mint: address(mint), tokenProgram: TOKEN_2022_PROGRAM_ADDRESS })
      expect(chain.svm.getAccount(vaultAta)).toMatchObject({ exists: true, lamports: rent, space: BigInt(accountSize) })
      expect(chain.svm.getBalance(user.address) ?? 0n).toBe(0n)
    }
  })

  test('a transfer fee that takes the whole amount is refused, naming amount (the vault would get nothing); one that leaves some delivers the rest', async () => {
    // 1%, rounded up, at most 5: on 1 it takes 1.
    const mint = await mintWithTransferFee(chain, [5n, 100])
    const user = await generateKeyPairSigner()
    await chain.airdrop(user.address, SOL)
    await chain.mintTo({ mint, owner: user.address, amount: 1_000n })
    const { opportunity } = await setup()
    const o = { ...opportunity, baseToken: mint, receiptToken: mint }
    for (const build of [deposit(user, o, 1n), withdraw(user, o, 1n)]) {
      const e = await rejection(buildTransactions(client, build))
      expect(e).toBeInstanceOf(InvalidArgumentError)
      expect((e as InvalidArgumentError).context).toEqual({ amount: 'taken whole by the transfer fee' })
    }
    // Told before a shortfall of SOL (the fee, the vault account's rent) or of the token: no top-up mends it, so a wallet
    // told to top up first would be refused again (an audit).
    const bare = await generateKeyPairSigner()
    for (const build of [deposit(bare, o, 1n), withdraw(bare, o, 1n)]) {
      const e = await rejection(buildTransactions(client, build))
      expect(e).toBeInstanceOf(InvalidArgumentError)
      expect((e as InvalidArgumentError).context).toEqual({ amount: 'taken whole by the transfer fee' })
    }
    const [step] = await buildTransactions(client, deposit(user, o, 100n))
    // The step says what the vault receives: a person signing "Deposit 100" is told the fee.
    expect(step!.description).toEndWith('; the token withholds a transfer fee of 0.000001, so the vault receives 0.000099')
    expect(step!.metadata).toMatchObject({ transferFee: '1', delivered: '99' })
    await chain.signAndSend(serialized(step!), user)
    // 1 of 100 withheld in the vault's account: its balance shows what it holds, the withheld fee apart.
    expect(await chain.tokenBalance(mint, o.vault)).toBe(99n)
    const [back] = await buildTransactions(client, withdraw(user, o, 50n))
    expect(back!.metadata).toMatchObject({ transferFee: '1', delivered: '49' })
    // A larger fee scheduled from a later epoch (the chain is at 0): the one in force now, and the most, told apart.
    const scheduled = await mintWithTransferFee(chain, [5n, 100], [50n, 500], 1n)
    await chain.mintTo({ mint: scheduled, owner: user.address, amount: 1_000n })
    const s = { ...opportunity, baseToken: scheduled, receiptToken: scheduled }
    const [later] = await buildTransactions(client, deposit(user, s, 1_000n))
    expect(later!.metadata).toMatchObject({ transferFee: '5', delivered: '995', scheduledFromEpoch: '1', scheduledTransferFee: '50', scheduledDelivered: '950' })
    expect(later!.description).toEndWith('a transfer fee of 0.000005, so the vault receives 0.000995 (landing from epoch 1, a fee of 0.00005: the vault receives 0.00095)')
    await chain.signAndSend(serialized(later!), user)
    expect(await chain.tokenBalance(scheduled, s.vault)).toBe(995n)
    // A smaller one scheduled is told too: landing then, the vault receives more than the fee now leaves.
    const lower = await mintWithTransferFee(chain, [50n, 500], [5n, 100], 1n)
    await chain.mintTo({ mint: lower, owner: user.address, amount: 1_000n })
    const [cheaper] = await buildTransactions(client, deposit(user, { ...opportunity, baseToken: lower, receiptToken: lower }, 1_000n))
    expect(cheaper!.metadata).toMatchObject({ transferFee: '50', delivered: '950', scheduledFromEpoch: '1', scheduledTransferFee: '5', scheduledDelivered: '995' })
    // A token without a fee says nothing of one.
    const plain = await setup({ tokens: 1_000n })
    const [untaxed] = await buildTransactions(client, deposit(plain.user, plain.opportunity, 100n))
    expect(untaxed!.metadata).not.toHaveProperty('transferFee')
    expect(untaxed!.description).not.toContain('fee')
  })

  test("more than the associated account holds is refused, naming it, though the wallet's other account holds the rest", async () => {
    const { user, opportunity } = await setup({ tokens: 1_000n })
    const second = await chain.createTokenAccount({ mint: opportunity.baseToken, owner: user.address })
    await chain.mintTo({ mint: opportunity.baseToken, owner: user.address, amount: 5_000n, account: second })
    const e = await rejection(buildTransactions(client, deposit(user, opportunity, 1_001n)))
    expect(e).toBeInstanceOf(InsufficientBalanceError)
    const { context } = e as InsufficientBalanceError
    expect(context).toMatchObject({ required: '1001', available: '1000', token: opportunity.baseToken })
    const ata = (await findAssociatedTokenPda({ owner: user.address, mint: address(opportunity.baseToken), tokenProgram: TOKEN_PROGRAM_ADDRESS }))[0]
    expect(context.source).toBe(ata)
    // What the associated account holds still builds, and spends from it alone.
    const step = (await buildTransactions(client, deposit(user, opportunity, 1_000n)))[0]!
    await chain.signAndSend(serialized(step), user)
    expect(await chain.tokenBalance(opportunity.baseToken, opportunity.vault)).toBe(1_000n)
    expect(await chain.tokenBalance(opportunity.baseToken, user.address)).toBe(0n)
    expect(await readBalance(client, { chainId: 'localnet', owner: user.address, token: opportunity.baseToken })).toBe(5_000n)
  })

  test("SOL sent to the vault account's address before it exists (anyone can): the deposit still lands, its creation paying only the rest of the rent", async () => {
    const user = await generateKeyPairSigner()
    const { opportunity } = await setup()
    await chain.mintTo({ mint: opportunity.baseToken, owner: user.address, amount: 1_000n })
    const [vaultAta] = await findAssociatedTokenPda({ owner: address(opportunity.vault), mint: address(opportunity.baseToken), tokenProgram: TOKEN_PROGRAM_ADDRESS })
    const rent = chain.svm.minimumBalanceForRentExemption(165n)
    // At least a data-less account's minimum (Solana refuses less), short of a token account's.
    const prefunded = WALLET_RENT + 1_000n
    await chain.airdrop(vaultAta, prefunded)
    // Exactly the fee and what the creation still needs: one lamport less is refused for it, this lands.
    await chain.airdrop(user.address, FEE + rent - prefunded - 1n)
    const e = await rejection(buildTransactions(client, deposit(user, opportunity, 1_000n)))
    expect((e as InsufficientBalanceError).context).toMatchObject({ required: (FEE + rent - prefunded).toString() })
    await chain.airdrop(user.address, 1n)
    const step = (await buildTransactions(client, deposit(user, opportunity, 1_000n)))[0]!
    expect(step.metadata?.createsVaultTokenAccount).toBe(true)
    await chain.signAndSend(serialized(step), user)
    expect(await chain.tokenBalance(opportunity.baseToken, opportunity.vault)).toBe(1_000n)
    expect(chain.svm.getBalance(user.address) ?? 0n).toBe(0n)
    // More than the rent already there: the creation costs the wallet nothing.
    const next = await setup({ tokens: 1_000n })
    const [nextAta] = await findAssociatedTokenPda({ owner: address(next.opportunity.vault), mint: address(next.opportunity.baseToken), tokenProgram: TOKEN_PROGRAM_ADDRESS })
    await chain.airdrop(nextAta, 2n * rent)
    const before = chain.svm.getBalance(next.user.address)!
    await chain.signAndSend(serialized((await buildTransactions(client, deposit(next.user, next.opportunity, 1_000n)))[0]!), next.user)
    expect<bigint | null>(chain.svm.getBalance(next.user.address)).toBe(before - FEE)
    expect(await chain.tokenBalance(next.opportunity.baseToken, next.opportunity.vault)).toBe(1_000n)
  })

  test("a wallet's associated account handed to another owner is not its to spend: 0 available from it", async () => {
    const { user, opportunity } = await setup({ tokens: 5_000n })
    const [ata] = await findAssociatedTokenPda({ owner: user.address, mint: address(opportunity.baseToken), tokenProgram: TOKEN_PROGRAM_ADDRESS })
    await chain.send([getSetAuthorityInstruction({ owned: ata, owner: user, authorityType: AuthorityType.AccountOwner, newAuthority: address(newWallet().address) })], user)
    const e = await rejection(buildTransactions(client, deposit(user, opportunity, 1_000n)))
    expect(e).toBeInstanceOf(InsufficientBalanceError)
    expect((e as InsufficientBalanceError).context).toMatchObject({ required: '1000', available: '0', source: ata })
  })

  test("a vault account handed to another owner is refused: what arrives would be theirs", async () => {
    const { user, opportunity } = await setup({ tokens: 5_000n })
    const vault = await generateKeyPairSigner()
    await chain.airdrop(vault.address, SOL)
    const o = { ...opportunity, vault: vault.address }
    await chain.mintTo({ mint: o.baseToken, owner: vault.address, amount: 0n })
    const [vaultAta] = await findAssociatedTokenPda({ owner: vault.address, mint: address(o.baseToken), tokenProgram: TOKEN_PROGRAM_ADDRESS })
    const taker = newWallet().address
    await chain.send([getSetAuthorityInstruction({ owned: vaultAta, owner: vault, authorityType: AuthorityType.AccountOwner, newAuthority: address(taker) })], vault)
    const e = await rejection(buildTransactions(client, deposit(user, o, 1_000n)))
    expect(e).toBeInstanceOf(InvalidArgumentError)
    expect((e as InvalidArgumentError).message).toContain(`now belongs to ${taker}`)
    expect((e as InvalidArgumentError).context).toEqual({ tokenIn: "recipient's account belongs to another" })
  })

  test('a wallet with no associated account for the mint is refused with 0 available', async () => {
    const { user, opportunity } = await setup()
    const e = await rejection(buildTransactions(client, deposit(user, opportunity, 1n)))
    expect(e).toBeInstanceOf(InsufficientBalanceError)
    expect((e as InsufficientBalanceError).context).toMatchObject({ required: '1', available: '0' })
  })
})

describe('deposit (SOL)', () => {
  test('a System transfer to the vault plus the memo; lamports move', async () => {
    const { user, opportunity } = await setup()
    const sol = { ...opportunity, baseToken: 'native' }
    await chain.airdrop(sol.vault, SOL) // an existing account: a transfer below rent-exemption into a new one fails
    const p = deposit(user, sol, 250_000_000n, { tokenIn: 'native' })
    const [step] = (await buildTransactions(client, p)) as [UnsignedTransaction]
    expect(step.type).toBe('deposit')
    expect(step.description).toBe(`Deposit 0.25 SOL into vault ${sol.vault}`)
    expect(decode(step).programs).toEqual([SYSTEM_PROGRAM_ADDRESS, MEMO])
    expect(decode(step).message.staticAccounts[0]).toBe(user.address)
    const before = chain.svm.getBalance(user.address)!
    await chain.signAndSend(serialized(step), user)
    expect<bigint | null>(chain.svm.getBalance(address(sol.vault))).toBe(SOL + 250_000_000n)
    expect<bigint | null>(chain.svm.getBalance(user.address)).toBe(before - 250_000_000n - FEE)
  })

  test('a SOL deposit under the minimum: one top-up to `required` lands it, from nothing or from the minimum', async () => {
    const { opportunity } = await setup()
    const sol = { ...opportunity, baseToken: 'native' }
    await chain.airdrop(sol.vault, SOL)
    for (const start of [0n, WALLET_RENT]) {
      const user = await generateKeyPairSigner()
      if (start) await chain.airdrop(user.address, start)
      const e = await rejection(buildTransactions(client, deposit(user, sol, 100_000n, { tokenIn: 'native' })))
      expect(e).toBeInstanceOf(InsufficientBalanceError)
      const { required, covers } = (e as InsufficientBalanceError).context as { required: string; covers: string }
      expect(BigInt(required)).toBe(100_000n + FEE + WALLET_RENT)
      expect(covers).toBe(`100000 to move, the 5000-lamport fee, and the ${WALLET_RENT} lamports the wallet must keep: the fee must leave it nothing or at least that, and no wallet holds less than that and more than nothing`)
      await chain.airdrop(user.address, BigInt(required) - start)
      await chain.signAndSend(serialized((await buildTransactions(client, deposit(user, sol, 100_000n, { tokenIn: 'native' })))[0]!), user)
      expect<bigint | null>(chain.svm.getBalance(user.address)).toBe(WALLET_RENT)
    }
  })

  test('the wallet must keep the fee, and nothing or the rent-exempt minimum: refused where Solana would refuse, built (and landing) at each edge', async () => {
    const { user, opportunity } = await setup()
    const sol = { ...opportunity, baseToken: 'native' }
    await chain.airdrop(sol.vault, SOL)
    const held = 10n * SOL
    const minimum = chain.svm.minimumBalanceForRentExemption(0n)
    expect(WALLET_RENT).toBe(minimum)
    const all = await rejection(buildTransactions(client, deposit(user, sol, held, { tokenIn: 'native' })))
    expect(all).toBeInstanceOf(InsufficientBalanceError)
    expect((all as InsufficientBalanceError).context).toEqual({
      required: (held + FEE).toString(),
      available: held.toString(),
      token: 'native',
      covers: `${held} to move, the 5000-lamport fee`,
    })
    // One lamport left behind: below the rent-exempt minimum, and not nothing.
    const almost = await rejection(buildTransactions(client, deposit(user, sol, held - FEE - 1n, { tokenIn: 'native' })))
    expect(almost).toBeInstanceOf(InsufficientBalanceError)
    expect((almost as InsufficientBalanceError).context).toMatchObject({ required: (held - 1n + minimum).toString(), token: 'native' })
    expect((almost as InsufficientBalanceError).context.covers).toContain(`moving ${held - FEE} empties it`)
    // Leaving exactly the minimum lands.
    await chain.signAndSend(serialized((await buildTransactions(client, deposit(user, sol, held - FEE - minimum, { tokenIn: 'native' })))[0]!), user)
    expect<bigint | null>(chain.svm.getBalance(user.address)).toBe(minimum)
    // Holding the minimum, the wallet cannot pay a fee at all: the fee alone would leave it below the minimum. Moving
    // less than the minimum, it cannot be emptied either: it must hold the minimum beside what it spends.
    const stuck = await rejection(buildTransactions(client, deposit(user, sol, minimum - FEE, { tokenIn: 'native' })))
    expect(stuck).toBeInstanceOf(InsufficientBalanceError)
    expect((stuck as InsufficientBalanceError).context).toMatchObject({ required: (minimum + minimum).toString(), available: minimum.toString() })
    expect<bigint | null>(chain.svm.getBalance(address(sol.vault))).toBe(SOL + held - FEE - minimum)
    // Emptying a wallet lands.
    const other = await generateKeyPairSigner()
    await chain.airdrop(other.address, SOL)
    await chain.signAndSend(serialized((await buildTransactions(client, deposit(other, sol, SOL - FEE, { tokenIn: 'native' })))[0]!), other)
    expect(chain.svm.getBalance(other.address) ?? 0n).toBe(0n)
  })

  test('a first deposit into a SOL vault that holds nothing must be at least the rent-exempt minimum, which lands', async () => {
    const { user, opportunity } = await setup()
    const sol = { ...opportunity, baseToken: 'native' }
    const small = await rejection(buildTransactions(client, deposit(user, sol, WALLET_RENT - 1n, { tokenIn: 'native' })))
    expect(small).toBeInstanceOf(InvalidArgumentError)
    expect((small as InvalidArgumentError).context).toEqual({ amount: `must be at least ${WALLET_RENT} while the recipient holds nothing` })
    await chain.signAndSend(serialized((await buildTransactions(client, deposit(user, sol, WALLET_RENT, { tokenIn: 'native' })))[0]!), user)
    expect<bigint | null>(chain.svm.getBalance(address(sol.vault))).toBe(WALLET_RENT)
    // Once it exists, any amount.
    await chain.signAndSend(serialized((await buildTransactions(client, deposit(user, sol, 1n, { tokenIn: 'native' })))[0]!), user)
    expect<bigint | null>(chain.svm.getBalance(address(sol.vault))).toBe(WALLET_RENT + 1n)
  })

  test("tokenIn must be the opportunity's base token: SOL into a token vault, or a token into a SOL vault, is a 400", async () => {
    const { user, opportunity } = await setup()
    const solIntoToken = await rejection(buildTransactions(client, deposit(user, opportunity, 1n, { tokenIn: 'native' })))
    expect(solIntoToken).toBeInstanceOf(InvalidArgumentError)
    expect(Object.keys((solIntoToken as InvalidArgumentError).context)).toEqual(['tokenIn'])
    const tokenIntoSol = await rejection(
      buildTransactions(client, deposit(user, { ...opportunity, baseToken: 'native' }, 1n, { tokenIn: opportunity.baseToken })),
    )
    expect(Object.keys((tokenIntoSol as InvalidArgumentError).context)).toEqual(['tokenIn'])
  })
})

describe('withdraw', () => {
  test('returns the receipt tokens to the vault, with the tag in a memo', async () => {
    const { user, opportunity } = await setup()
    await chain.mintTo({ mint: opportunity.receiptToken, owner: user.address, amount: 4_000_000n })
    const p = withdraw(user, opportunity, 1_250_000n)
    const [step] = (await buildTransactions(client, p)) as [UnsignedTransaction]
    expect(step.type).toBe('withdraw')
    expect(step.description).toContain(`Return 1.25 receipt tokens (${opportunity.receiptToken}) to vault ${opportunity.vault}`)
    const { programs, message } = decode(step)
    expect(programs).toEqual([ASSOCIATED_TOKEN_PROGRAM_ADDRESS, MEMO, TOKEN_PROGRAM_ADDRESS])
    expect(message.staticAccounts[0]).toBe(user.address)
    await chain.signAndSend(serialized(step), user)
    expect(await chain.tokenBalance(opportunity.receiptToken, opportunity.vault)).toBe(1_250_000n)
    expect(await chain.tokenBalance(opportunity.receiptToken, user.address)).toBe(2_750_000n)
  })

  test('tokenOut other than the base token is a 400; the base token itself is accepted', async () => {
    const { user, opportunity } = await setup()
    await chain.mintTo({ mint: opportunity.receiptToken, owner: user.address, amount: 1n })
    const e = await rejection(buildTransactions(client, withdraw(user, opportunity, 1n, { tokenOut: 'native' })))
    expect(e).toBeInstanceOf(InvalidArgumentError)
    expect(Object.keys((e as InvalidArgumentError).context)).toEqual(['tokenOut'])
    const ok = await buildTransactions(client, withdraw(user, opportunity, 1n, { tokenOut: opportunity.baseToken }))
    expect(ok.map((s) => s.type)).toEqual(['withdraw'])
  })

  test('a receipt token that is no mint on the cluster is a 400 naming receiptToken', async () => {
    const { user, opportunity } = await setup()
    const e = await rejection(buildTransactions(client, withdraw(user, { ...opportunity, receiptToken: newWallet().address }, 1n)))
    expect(e).toBeInstanceOf(InvalidArgumentError)
    expect((e as InvalidArgumentError).context).toEqual({ receiptToken: 'not a token mint on this cluster' })
  })
})

describe('refusals', () => {
  test('swap mode is a 400 naming mode, before any read', async () => {
    const { user, opportunity } = await setup()
    const offline = connect({ SOLANA_RPC_URL: 'http://127.0.0.1:9' })
    const e = await rejection(buildTransactions(offline, deposit(user, opportunity, 1n, { mode: 'swap' })))
    expect(e).toBeInstanceOf(InvalidArgumentError)
    expect(Object.keys((e as InvalidArgumentError).context)).toEqual(['mode'])
  })

  test('a tokenIn that is no mint on the cluster is a 400 naming tokenIn; one that is no address too', async () => {
    const { user, opportunity } = await setup()
    const stranger = newWallet().address
    const unknown = await rejection(buildTransactions(client, deposit(user, { ...opportunity, baseToken: stranger }, 1n, { tokenIn: stranger })))
    expect(unknown).toBeInstanceOf(InvalidArgumentError)
    expect((unknown as InvalidArgumentError).context).toEqual({ tokenIn: 'not a token mint on this cluster' })
    // A token account is an SPL account but not a mint.
    const account = await chain.mintTo({ mint: opportunity.baseToken, owner: stranger, amount: 0n })
    const notMint = await rejection(buildTransactions(client, deposit(user, { ...opportunity, baseToken: account }, 1n, { tokenIn: account })))
    expect((notMint as InvalidArgumentError).context).toEqual({ tokenIn: 'not a token mint on this cluster' })
    const garbage = await rejection(buildTransactions(client, deposit(user, opportunity, 1n, { tokenIn: 'USDC' })))
    expect(garbage).toBeInstanceOf(InvalidAddressError)
    expect(Object.keys((garbage as InvalidAddressError).context)).toEqual(['tokenIn'])
  })

  test('amounts beyond u64, tags that are not attribution tags and foreign chain ids are 400s naming the field', async () => {
    const { user, opportunity } = await setup()
    const cases: [Partial<BuildParameters>, string][] = [
      [{ amount: 2n ** 64n }, 'amount'],
      [{ amount: 0n }, 'amount'],
      [{ tag: 'hello' }, 'tag'],
      [{ tag: `earn:v1:${'x'.repeat(300)}` }, 'tag'],
      [{ chainId: '1' }, 'chainId'],
      [{ owner: '0x52908400098527886E0F7030069857D2E4169EE7' }, 'userAddress'],
    ]
    for (const [extra, field] of cases) {
      const e = await rejection(buildTransactions(client, deposit(user, opportunity, 1n, extra)))
      expect(e).toBeInstanceOf(InvalidArgumentError)
      expect(Object.keys((e as InvalidArgumentError).context)).toEqual([field])
    }
  })

  test('an RPC that cannot be reached is 503, without its URL; no RPC configured is a 503 naming the setting', async () => {
    const { user, opportunity } = await setup()
    const closed = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') })
    const url = `http://127.0.0.1:${closed.port}/?api-key=secret`
    await closed.stop(true)
    const e = await rejection(buildTransactions(connect({ SOLANA_RPC_URL: url }), deposit(user, opportunity, 1n)))
    expect(e).toBeInstanceOf(UnavailableError)
    expect(e).not.toBeInstanceOf(ChainNotConfiguredError)
    expect((e as Error).message).not.toContain('secret')
    expect((e as Error).message).not.toContain(String(closed.port))
    const none = await rejection(buildTransactions(connect({}), deposit(user, opportunity, 1n)))
    expect(none).toBeInstanceOf(ChainNotConfiguredError)
    expect((none as ChainNotConfiguredError).status).toBe(503)
    expect(Object.keys((none as ChainNotConfiguredError).context)).toEqual(['SOLANA_RPC_URL'])
  })
})
