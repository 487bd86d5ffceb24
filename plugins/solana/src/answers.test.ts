/**
 * A broken endpoint in front of a real chain (LiteSVM behind the JSON-RPC facade): one method at a time answers
 * something other than its result, the rest pass through. Every read is then the node's failure (503), never a
 * TypeError (500), a balance believed, or a transaction built that could never land.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { UnavailableError } from '@earn/core'
import * as kit from '@solana/kit'
import { generateKeyPairSigner, type KeyPairSigner } from '@solana/kit'
import { interceptingEndpoint, startSolana, type SolanaChain } from '../../../test/chains/solana.ts'
import { readBalance } from './balance.ts'
import { connect } from './client.ts'
import { newWallet } from './fixtures.ts'
import { buildTransfer } from './fundingTransfer.ts'
import { health } from './health.ts'
import { readTransfers } from './readTransfers.ts'

const TAG = 'earn:v1:stream:5b0c1f2e-3d4a-4b5c-8d6e-7f8091a2b3c4:0123456789abcdef0123456789abcdef'

let chain: SolanaChain
let sender: KeyPairSigner
let mint: string
let landed: string
/** The method whose answer is replaced, and by what (a raw body, or a result). */
let broken: { method: string; body?: string; result?: unknown; rewrite?: (result: any) => void } | undefined
let endpoint: ReturnType<typeof Bun.serve>

beforeAll(async () => {
  chain = await startSolana()
  sender = await generateKeyPairSigner()
  await chain.airdrop(sender.address, 10_000_000_000n)
  mint = await chain.createMint({ decimals: 6 })
  await chain.mintTo({ mint, owner: sender.address, amount: 5_000_000n })
  const [step] = await buildTransfer(connect({ SOLANA_RPC_URL: chain.url }), { chainId: 'localnet', from: sender.address, token: 'native', to: newWallet().address, amount: 1_000_000_000n, tag: TAG })
  landed = await chain.signAndSend(step!.transaction.serializedTransaction as string, sender)
  endpoint = interceptingEndpoint(chain.url, async (call, forward) => {
    if (broken?.method !== call.method) return undefined
    if (broken.rewrite) {
      const answer = (await (await forward()).json()) as { result: unknown }
      broken.rewrite(answer.result)
      return Response.json(answer)
    }
    if (broken.body !== undefined) return new Response(broken.body, { headers: { 'content-type': 'text/html' } })
    return new Response(`{"jsonrpc":"2.0","id":${JSON.stringify(call.id)},"result":${broken.result}}`, { headers: { 'content-type': 'application/json' } })
  })
})
afterAll(async () => {
  await endpoint?.stop(true)
  chain?.stop()
})

/** A fresh client each time: the cluster's genesis is remembered per client. */
const client = () => connect({ SOLANA_RPC_URL: `http://127.0.0.1:${endpoint.port}` })
const HTML = '<html><body>502 Bad Gateway</body></html>'
const BLOCKHASH = 'CmpNeggWJ4JaWJeJ8YKN1Zypmk7uvQq3PECGUCAEMbky'

const reads: Record<string, () => Promise<unknown>> = {
  balance: () => readBalance(client(), { chainId: 'localnet', owner: sender.address, token: 'native' }),
  tokenBalance: () => readBalance(client(), { chainId: 'localnet', owner: sender.address, token: mint }),
  solTransfer: () => buildTransfer(client(), { chainId: 'localnet', from: sender.address, token: 'native', to: newWallet().address, amount: 1_000_000_000n, tag: TAG }),
  tokenTransfer: () => buildTransfer(client(), { chainId: 'localnet', from: sender.address, token: mint, to: newWallet().address, amount: 1_000n, tag: TAG }),
  transfers: () => readTransfers(client(), { chainId: 'localnet', txHash: landed }),
}

const CASES: [method: string, read: keyof typeof reads, answers: { body?: string; result?: string }[]][] = [
  ['getBalance', 'balance', [{ body: HTML }, { body: '{"jsonrpc":' }, { result: 'null' }, { result: '{}' }, { result: '"5"' }, { result: '42' }, { result: '{"context":{"slot":1},"value":-5}' }, { result: '{"context":{"slot":1},"value":1.5}' }, { result: '{"context":{"slot":1},"value":18446744073709551616}' }]],
  ['getBalance', 'solTransfer', [{ result: '{}' }, { result: '{"context":{"slot":1},"value":-5}' }]],
  ['getTokenAccountsByOwner', 'tokenBalance', [{ body: HTML }, { result: 'null' }, { result: '{"context":{"slot":1},"value":null}' }, { result: '{"context":{"slot":1},"value":[{"pubkey":"x"}]}' }, { result: `{"context":{"slot":1},"value":[{"pubkey":"${BLOCKHASH}","account":{"data":{"parsed":{"info":{"tokenAmount":{"amount":"abc"}}}}}}]}` }, { result: `{"context":{"slot":1},"value":[{"pubkey":"${BLOCKHASH}","account":{"data":["AAAA","base64"]}}]}` }]],
  ['getLatestBlockhash', 'solTransfer', [{ body: HTML }, { result: 'null' }, { result: '{"context":{"slot":1},"value":{"lastValidBlockHeight":5}}' }, { result: '{"context":{"slot":1},"value":{"blockhash":"0OIl","lastValidBlockHeight":5}}' }, { result: `{"context":{"slot":1},"value":{"blockhash":"${BLOCKHASH}","lastValidBlockHeight":"abc"}}` }, { result: `{"context":{"slot":1},"value":{"blockhash":"${BLOCKHASH}","lastValidBlockHeight":1.5}}` }]],
  ['getMultipleAccounts', 'tokenTransfer', [{ body: HTML }, { result: 'null' }, { result: '{"context":{"slot":1},"value":[]}' }, { result: '{"context":{"slot":1},"value":"abc"}' }, { result: '{"context":{"slot":1},"value":[{"data":"abc","owner":"x","lamports":1,"executable":false},null,null,null,null]}' }]],
  ['getTransaction', 'transfers', [{ body: HTML }, { result: '{}' }, { result: '"abc"' }, { result: '{"transaction":["!!!","base64"],"meta":null}' }, { result: '{"transaction":["AAAA","base64"],"meta":null}' }, { result: '{"transaction":["AAAA","base64"],"meta":{"fee":5000,"preBalances":[1.5],"postBalances":[1]}}' }]],
  // The recipient's account (a stream treasury, a catalog vault): a result that is no account read as none, and the check skipped.
  ['getAccountInfo', 'solTransfer', [{ body: HTML }, { result: 'null' }, { result: '{}' }, { result: '{"context":{"slot":1}}' }, { result: '{"context":{"slot":1},"value":{}}' }, { result: '{"context":{"slot":1},"value":"abc"}' }]],
  ['getGenesisHash', 'balance', [{ body: HTML }, { result: '42' }, { result: '"not base58 0OIl"' }]],
]

describe('an endpoint answering something other than the method result', () => {
  for (const [method, read, answers] of CASES)
    test(`${method} (read by ${read}): 503, whatever the answer`, async () => {
      for (const answer of answers) {
        broken = { method, ...answer }
        const e = await reads[read]!().then(
          () => 'answered',
          (x: unknown) => x,
        )
        expect(e, `${method} ${JSON.stringify(answer)}`).toBeInstanceOf(UnavailableError)
      }
      // The same read through the endpoint answering properly.
      broken = undefined
      await reads[read]!()
    })

  test('a JSON-RPC error of any code is the node failing (503): codes kit does not know (a provider limiting us) included', async () => {
    const error = (code: string) => `{"jsonrpc":"2.0","id":1,"error":{"code":${code},"message":"Too many requests"}}`
    const known = Object.entries(kit).flatMap(([name, value]) => (name.startsWith('SOLANA_ERROR__JSON_RPC__') && typeof value === 'number' ? [value] : []))
    expect(known.length).toBeGreaterThan(20)
    for (const code of [...known.map(String), '-32000', '-32429', '429', '0', '8078001', '1.5', '"x"', 'null']) {
      broken = { method: 'getLatestBlockhash', body: error(code) }
      expect(await reads.solTransfer!().catch((e: unknown) => e), code).toBeInstanceOf(UnavailableError)
    }
    // For SOL, a node refusing the parameters is broken, not telling of a mint: 503, not a 400 about the token.
    broken = { method: 'getBalance', body: error('-32602') }
    expect(await reads.balance!().catch((e: unknown) => e)).toBeInstanceOf(UnavailableError)
    broken = undefined
  })

  test('JSON nested deeper than a parse with a reviver walks (20 KB) is the node failing (503), wherever it is', async () => {
    const deep = `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`
    broken = { method: 'getBalance', body: `{"jsonrpc":"2.0","id":1,"x":${deep},"result":{"context":{"slot":1},"value":5}}` }
    expect(await reads.balance!().catch((e: unknown) => e)).toBeInstanceOf(UnavailableError)
    broken = undefined
  })

  test("a token account whose bytes do not decode (a state past the enum's) is the node's failure, 503, not a fault of ours", async () => {
    broken = {
      method: 'getMultipleAccounts',
      rewrite(result) {
        for (const account of result.value) {
          const bytes = account && Buffer.from(account.data[0], 'base64')
          if (bytes?.length === 165) {
            bytes[108] = 7
            account.data[0] = bytes.toString('base64')
          }
        }
      },
    }
    expect(await reads.tokenTransfer!().catch((e: unknown) => e)).toBeInstanceOf(UnavailableError)
    broken = undefined
    await reads.tokenTransfer!()
  })

  test('readiness: a getSlot answer that is not a slot is not ready', async () => {
    for (const result of ['null', '{}', '"abc"', '-1']) {
      broken = { method: 'getSlot', result }
      expect(await health(client())).toEqual([{ chain: 'solana', ok: false, detail: 'answers malformed' }])
    }
    broken = undefined
    expect(await health(client())).toEqual([{ chain: 'solana', ok: true }])
  })
})
