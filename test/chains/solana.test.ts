/**
 * The LiteSVM JSON-RPC facade, driven the way production code drives a node: @solana/kit over HTTP.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { getAddMemoInstruction } from '@solana-program/memo'
import { getTransferSolInstruction } from '@solana-program/system'
import { getTransferCheckedInstruction } from '@solana-program/token'
import {
  appendTransactionMessageInstructions,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64EncodedWireTransaction,
  getSignatureFromTransaction,
  isSolanaError,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  SOLANA_ERROR__JSON_RPC__METHOD_NOT_FOUND,
  SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE,
  type Instruction,
  type KeyPairSigner,
} from '@solana/kit'
import { deploySampleSolana, sampleSolanaAddresses, startSolana, type SolanaChain } from './solana.ts'

let chain: SolanaChain
let user: KeyPairSigner

beforeAll(async () => {
  chain = await startSolana()
  user = await generateKeyPairSigner()
  await chain.airdrop(user.address, 2_000_000_000n)
})
afterAll(() => chain?.stop())

async function signed(feePayer: KeyPairSigner, instructions: Instruction[]) {
  const { value: blockhash } = await chain.rpc.getLatestBlockhash().send()
  return pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayerSigner(feePayer, m),
    (m) => setTransactionMessageLifetimeUsingBlockhash(blockhash, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
    (m) => signTransactionMessageWithSigners(m),
  )
}

describe('LiteSVM JSON-RPC facade', () => {
  test('a transaction sent over HTTP executes, is finalized and can be read back byte for byte', async () => {
    // Programs get accounts from the helpers first: LiteSVM accepts only its latest blockhash.
    const mint = await chain.createMint({ decimals: 6 })
    const source = await chain.mintTo({ mint, owner: user.address, amount: 1_000n })
    const destination = await chain.mintTo({ mint, owner: chain.payer.address, amount: 0n })
    const tx = await signed(user, [
      getTransferCheckedInstruction({ source, mint, destination, authority: user, amount: 400n, decimals: 6 }),
      getTransferSolInstruction({ source: user, destination: chain.payer.address, amount: 1_000_000n }),
      getAddMemoInstruction({ memo: 'earn:v1:test-tag' }),
    ])
    const wire = getBase64EncodedWireTransaction(tx)
    const signature = await chain.rpc.sendTransaction(wire, { encoding: 'base64' }).send()
    expect(signature).toBe(getSignatureFromTransaction(tx))

    const { value: [status] } = await chain.rpc.getSignatureStatuses([signature]).send()
    expect(status).toMatchObject({ err: null, confirmationStatus: 'finalized' })
    expect<bigint>((await chain.rpc.getBalance(user.address).send()).value).toBe(2_000_000_000n - 1_000_000n - 5_000n)

    const raw = await chain.rpc.getTransaction(signature, { encoding: 'base64', maxSupportedTransactionVersion: 0 }).send()
    expect(raw?.transaction).toEqual([wire, 'base64'])
    expect(raw?.version).toBe(0)
    expect(raw?.meta?.err).toBeNull()
    expect<bigint | undefined>(raw?.meta?.fee).toBe(5_000n)
    const userIndex = 0 // the fee payer comes first
    expect(raw!.meta!.preBalances[userIndex]! - raw!.meta!.postBalances[userIndex]!).toBe(1_005_000n)
    const tokenDelta = (balances: readonly { owner?: string; uiTokenAmount: { amount: string } }[]) =>
      balances.find((b) => b.owner === user.address)?.uiTokenAmount.amount
    expect(tokenDelta(raw!.meta!.preTokenBalances!)).toBe('1000')
    expect(tokenDelta(raw!.meta!.postTokenBalances!)).toBe('600')

    const parsed = await chain.rpc.getTransaction(signature, { encoding: 'jsonParsed', maxSupportedTransactionVersion: 0 }).send()
    const memo = parsed?.transaction.message.instructions.find((ix) => 'program' in ix && ix.program === 'spl-memo')
    expect<unknown>(memo && 'parsed' in memo ? memo.parsed : undefined).toBe('earn:v1:test-tag')
    expect(parsed?.transaction.message.accountKeys[0]).toMatchObject({ pubkey: user.address, signer: true, writable: true })

    const json = await chain.rpc.getTransaction(signature, { encoding: 'json', maxSupportedTransactionVersion: 0 }).send()
    expect(json?.transaction.signatures).toEqual([signature])
    expect(json?.transaction.message.instructions).toHaveLength(3)
    expect(chain.ledger.get(signature)?.wire).toBeDefined()
  })

  test('getTransaction of a v0 transaction requires maxSupportedTransactionVersion, as a node does', async () => {
    const tx = await signed(user, [getAddMemoInstruction({ memo: 'versioned' })])
    const signature = await chain.rpc.sendTransaction(getBase64EncodedWireTransaction(tx), { encoding: 'base64' }).send()
    const e = await chain.rpc.getTransaction(signature, { encoding: 'json' }).send().catch((e: unknown) => e)
    expect(isSolanaError(e)).toBe(true)
    expect(await chain.rpc.getTransaction('1111111111111111111111111111111111111111111111111111111111111111' as never).send()).toBeNull()
  })

  test('a failing transaction is refused at preflight with its logs', async () => {
    const stranger = await generateKeyPairSigner()
    await chain.airdrop(stranger.address, 10_000_000n)
    const tx = await signed(stranger, [getTransferSolInstruction({ source: stranger, destination: user.address, amount: 10n ** 15n })])
    const e = await chain.rpc.sendTransaction(getBase64EncodedWireTransaction(tx), { encoding: 'base64' }).send().catch((e: unknown) => e)
    expect(isSolanaError(e, SOLANA_ERROR__JSON_RPC__SERVER_ERROR_SEND_TRANSACTION_PREFLIGHT_FAILURE)).toBe(true)
    const { value: [status] } = await chain.rpc.getSignatureStatuses([getSignatureFromTransaction(tx)]).send()
    expect(status).toBeNull()
  })

  test('simulateTransaction reports compute units without committing', async () => {
    const tx = await signed(user, [getTransferSolInstruction({ source: user, destination: chain.payer.address, amount: 1n })])
    const before = (await chain.rpc.getBalance(user.address).send()).value
    const sim = await chain.rpc
      .simulateTransaction(getBase64EncodedWireTransaction(tx), { encoding: 'base64', sigVerify: false, replaceRecentBlockhash: true })
      .send()
    expect(sim.value.err).toBeNull()
    expect(sim.value.unitsConsumed).toBeGreaterThan(0n)
    expect((await chain.rpc.getBalance(user.address).send()).value).toBe(before)
  })

  test('an unimplemented method is a JSON-RPC "method not found", not a silent default', async () => {
    const e = await chain.rpc.getInflationReward([user.address]).send().catch((e: unknown) => e)
    expect(isSolanaError(e, SOLANA_ERROR__JSON_RPC__METHOD_NOT_FOUND)).toBe(true)
  })

  test('answers JSON-RPC batches', async () => {
    const res = await fetch(chain.url, {
      method: 'POST',
      body: JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'getSlot' },
        { jsonrpc: '2.0', id: 2, method: 'getBalance', params: [user.address] },
      ]),
    })
    const body = (await res.json()) as { id: number; result: unknown }[]
    expect(body.map((r) => r.id)).toEqual([1, 2])
    expect(typeof body[0]!.result).toBe('number')
  })

  test('the sample Solana opportunity lives at fixed addresses, ready for deposits, and deploys idempotently', async () => {
    // What the sample catalog names; changing a seed label must change the catalog too.
    const expected = {
      vault: '75umGWgvv8S56349NvKVD4nGJ8oQ1vzffXgb9GThw2bb',
      baseMint: '5BmY6xsuTzo3wDSdPQGFDNk6mJGoepdurv4YQh6Rnvzc',
      receiptMint: 'HMkrcyEKgBGs9UdoVH4sHh2drrC9PC4T4YmVyzevFmCx',
    }
    expect<Record<string, string>>(await sampleSolanaAddresses()).toEqual(expected)
    const sample = await deploySampleSolana(chain)
    expect(sample).toMatchObject({ ...expected, decimals: 6 })
    expect(await deploySampleSolana(chain)).toMatchObject(expected)
    await sample.fund(user.address, 5_000_000n)
    await sample.issueReceipts(user.address, 7n)
    expect(await chain.tokenBalance(sample.baseMint, user.address)).toBe(5_000_000n)
    expect(await chain.tokenBalance(sample.receiptMint, user.address)).toBe(7n)
    // The operator's accounts exist, empty: deposits need not create them.
    for (const mint of [sample.baseMint, sample.receiptMint]) {
      const { value } = await chain.rpc.getTokenAccountsByOwner(sample.vault, { mint }, { encoding: 'jsonParsed' }).send()
      expect<string[]>(value.map((a) => a.account.data.parsed.info.tokenAmount.amount)).toEqual(['0'])
    }
  })
})
