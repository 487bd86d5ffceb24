/**
 * Reading attribution back from transactions that landed on LiteSVM, fetched through the facade's
 * `getTransaction` as from a node.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { InvalidArgumentError, NotFoundError, UnavailableError, type UnsignedTransaction } from '@earn/core'
import { generateKeyPairSigner, getBase64EncodedWireTransaction, getBase64Encoder, getTransactionDecoder, signTransaction, type KeyPairSigner } from '@solana/kit'
import { getAddMemoInstruction, LEGACY_MEMO_PROGRAM_ADDRESS_V3 } from '@solana-program/memo'
import { getTransferSolInstruction } from '@solana-program/system'
import { startSolana, type SolanaChain } from '../../../test/chains/solana.ts'
import { connect, type SolanaClient } from './client.ts'
import { newWallet, toBase58 } from './fixtures.ts'
import { readTag } from './readTag.ts'
import { buildTransactions } from './transactions.ts'

let chain: SolanaChain
let client: SolanaClient
let user: KeyPairSigner
let mint: string

beforeAll(async () => {
  chain = await startSolana()
  client = connect({ SOLANA_RPC_URL: chain.url })
  user = await generateKeyPairSigner()
  await chain.airdrop(user.address, 10_000_000_000n)
  mint = await chain.createMint({ decimals: 6 })
  await chain.mintTo({ mint, owner: user.address, amount: 1_000_000n })
})
afterAll(() => chain?.stop())

const read = (txHash: string, c = client) => readTag(c, { chainId: 'localnet', txHash })
const rejection = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e)

async function buildDeposit(amount: bigint, tag: string): Promise<UnsignedTransaction> {
  const [step] = await buildTransactions(client, {
    kind: 'deposit',
    chainId: 'localnet',
    owner: user.address,
    opportunity: { id: 'opp', chainId: 'localnet', vaultAddress: newWallet().address, baseToken: mint, receiptToken: mint },
    tokenIn: mint,
    mode: 'direct',
    amount,
    slippageBps: 50,
    tag,
  })
  return step!
}

describe('readTag', () => {
  test('a landed deposit gives back its exact tag and the fee payer', async () => {
    const tag = 'earn:v1:5d2c1a8e-0000-4000-8000-000000000001:9b1f0c3e-0000-4000-8000-000000000002:Zm9vYmFyYmF6cXV4'
    const step = await buildDeposit(1_000n, tag)
    const signature = await chain.signAndSend(step.transaction.serializedTransaction as string, user)
    expect(await read(signature)).toEqual({ txHash: signature, tag, from: user.address })
  })

  test('the tag is found among other memos, and under the v3 Memo program too', async () => {
    const tag = 'earn:v1:other-tool:action:mac'
    const signature = await chain.send(
      [
        getAddMemoInstruction({ memo: 'gm from a wallet' }),
        getAddMemoInstruction({ memo: tag }, { programAddress: LEGACY_MEMO_PROGRAM_ADDRESS_V3 }),
      ],
      user,
    )
    expect(await read(signature)).toEqual({ txHash: signature, tag, from: user.address })
  })

  test('a transaction without an attribution memo has tag null', async () => {
    const signature = await chain.send([
      getTransferSolInstruction({ source: chain.payer, destination: user.address, amount: 1n }),
      getAddMemoInstruction({ memo: 'earn:v2:not-ours' }),
    ])
    expect(await read(signature)).toEqual({ txHash: signature, tag: null, from: chain.payer.address })
  })

  test('a transaction that landed but failed has tag null: it moved nothing', async () => {
    // Two deposits of the whole balance: once the first lands, the second moves more than the wallet holds.
    // Sent without preflight, it lands with an error and pays its fee.
    const held = await chain.tokenBalance(mint, user.address)
    const first = await buildDeposit(held, 'earn:v1:spent:deposit:mac')
    const step = await buildDeposit(held, 'earn:v1:failed:deposit:mac')
    await chain.signAndSend(first.transaction.serializedTransaction as string, user)
    const unsigned = getTransactionDecoder().decode(getBase64Encoder().encode(step.transaction.serializedTransaction as string))
    const signed = await signTransaction([user.keyPair], unsigned)
    const signature = await chain.rpc
      .sendTransaction(getBase64EncodedWireTransaction(signed), { encoding: 'base64', skipPreflight: true })
      .send()
    const { value: [status] } = await chain.rpc.getSignatureStatuses([signature]).send()
    expect(status?.err).not.toBeNull()
    expect(await read(signature)).toEqual({ txHash: signature, tag: null, from: user.address })
  })

  test('an unknown signature is a 404 naming the txHash', async () => {
    const unknown = toBase58(new Uint8Array(64).fill(7))
    const e = await rejection(read(unknown))
    expect(e).toBeInstanceOf(NotFoundError)
    expect((e as NotFoundError).status).toBe(404)
    expect((e as NotFoundError).context).toEqual({ txHash: unknown })
  })

  test('a malformed signature or a foreign chain id is a 400, before any read', async () => {
    const offline = connect({ SOLANA_RPC_URL: 'http://127.0.0.1:9' })
    for (const txHash of ['', '0xabc', user.address, 'l'.repeat(88)]) {
      const e = await rejection(read(txHash, offline))
      expect(e).toBeInstanceOf(InvalidArgumentError)
      expect(Object.keys((e as InvalidArgumentError).context)).toEqual(['txHash'])
    }
    const e = await rejection(readTag(offline, { chainId: '8453', txHash: toBase58(new Uint8Array(64).fill(1)) }))
    expect(Object.keys((e as InvalidArgumentError).context)).toEqual(['chainId'])
  })

  test('an RPC that cannot be reached is 503', async () => {
    const closed = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') })
    const url = `http://127.0.0.1:${closed.port}`
    await closed.stop(true)
    const e = await rejection(read(toBase58(new Uint8Array(64).fill(1)), connect({ SOLANA_RPC_URL: url })))
    expect(e).toBeInstanceOf(UnavailableError)
  })
})
