/**
 * The transport to a real chain (LiteSVM behind the JSON-RPC facade) through an endpoint that can misbehave: an
 * answer past the limit, plain or compressed, is the node's failure (503), not a balance believed after the whole
 * body was read; integers past 2^53 stay exact; identical requests of one tick leave once.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { UnavailableError } from '@earn/core'
import { address, generateKeyPairSigner, type KeyPairSigner } from '@solana/kit'
import { gzipSync } from 'node:zlib'
import { interceptingEndpoint, startSolana, type SolanaChain } from '../../../test/chains/solana.ts'
import { readBalance } from './balance.ts'
import { connect } from './client.ts'
import { MAX_SOLANA_ANSWER_BYTES, parseAnswer, SOLANA_IN_FLIGHT } from './transport.ts'
import { parseJsonWithBigInts } from '@solana/rpc-spec-types'
import { MalformedAnswerError } from './answers.ts'
import { anotherServer } from '../../../test/anotherServer.ts'

let chain: SolanaChain
let owner: KeyPairSigner
let endpoint: ReturnType<typeof Bun.serve>
/** How the endpoint answers getBalance; other methods pass through to the chain. */
let balanceAnswer: ((id: unknown) => Response | Promise<Response>) | undefined
const seen: string[] = []

beforeAll(async () => {
  chain = await startSolana()
  owner = await generateKeyPairSigner()
  await chain.airdrop(owner.address, 3_000_000_000n)
  endpoint = interceptingEndpoint(chain.url, (call) => {
    seen.push(call.method)
    return call.method === 'getBalance' && balanceAnswer ? balanceAnswer(call.id) : undefined
  })
})
afterAll(async () => {
  await endpoint?.stop(true)
  chain?.stop()
})

const client = () => connect({ SOLANA_RPC_URL: `http://127.0.0.1:${endpoint.port}` })
const balance = () => readBalance(client(), { chainId: 'localnet', owner: owner.address, token: 'native' })
const answer = (id: unknown, value: string, padding = 0) =>
  `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"context":{"slot":1},"value":${value}}}${' '.repeat(padding)}`

describe('the Solana RPC transport', () => {
  test('the chain answers through it as through kit: the balance is the chain’s', async () => {
    balanceAnswer = undefined
    expect(await balance()).toBe(3_000_000_000n)
  })

  test('an answer past the limit is the node’s failure, though what it starts with is a balance', async () => {
    // Valid JSON to its end: read whole, it would be believed.
    balanceAnswer = (id) => new Response(answer(id, '5', MAX_SOLANA_ANSWER_BYTES), { headers: { 'content-type': 'application/json' } })
    expect(await balance().catch((e: unknown) => e)).toBeInstanceOf(UnavailableError)
    // Compressed, it declares a few kilobytes and inflates past the limit: counted as it inflates.
    const bomb = gzipSync(answer(0, '5', 4 * MAX_SOLANA_ANSWER_BYTES))
    expect(bomb.length).toBeLessThan(MAX_SOLANA_ANSWER_BYTES / 100)
    balanceAnswer = () => new Response(bomb, { headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } })
    expect(await balance().catch((e: unknown) => e)).toBeInstanceOf(UnavailableError)
    // A compressed answer within the limit is read.
    balanceAnswer = (id) => new Response(gzipSync(answer(id, '7', 1_000)), { headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } })
    expect(await balance()).toBe(7n)
  })

  test('an HTTP failure is the node’s (503), its body left unread', async () => {
    balanceAnswer = () => new Response('x'.repeat(2 * MAX_SOLANA_ANSWER_BYTES), { status: 502 })
    const error = await balance().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UnavailableError)
    // The context names the setting the operator checks, as a missing one's does.
    expect((error as UnavailableError).context).toEqual({ SOLANA_RPC_URL: 'did not answer' })
  })

  test('a balance past 2^53 is exact', async () => {
    balanceAnswer = (id) => new Response(answer(id, '18446744073709551615'), { headers: { 'content-type': 'application/json' } })
    expect(await balance()).toBe(18446744073709551615n)
  })

  test('identical requests of one tick leave once; a caller that gives up leaves the others their answer', async () => {
    balanceAnswer = undefined
    const rpc = client().rpc!
    const who = address(owner.address)
    seen.length = 0
    const gaveUp = new AbortController()
    const [a, b, c] = [rpc.getBalance(who).send(), rpc.getBalance(who).send({ abortSignal: gaveUp.signal }).catch((e: unknown) => (e as Error).message), rpc.getBalance(who).send()]
    await Promise.resolve()
    gaveUp.abort(new Error('gave up'))
    expect<bigint>((await a).value).toBe(3_000_000_000n)
    expect(await b).toBe('gave up')
    expect<bigint>((await c).value).toBe(3_000_000_000n)
    expect(seen).toEqual(['getBalance'])
    // Another tick, another request.
    expect<bigint>((await rpc.getBalance(who).send()).value).toBe(3_000_000_000n)
    expect(seen).toEqual(['getBalance', 'getBalance'])
  })

  test('a request every caller gave up is abandoned', async () => {
    const held = Promise.withResolvers<void>()
    let aborted = false
    balanceAnswer = (id) => new Response(new ReadableStream({
      async pull(c) {
        await held.promise
        c.enqueue(new TextEncoder().encode(answer(id, '1')))
        c.close()
      },
      cancel: () => void (aborted = true),
    }))
    const rpc = client().rpc!
    const gaveUp = new AbortController()
    const pending = rpc.getBalance(address(owner.address)).send({ abortSignal: gaveUp.signal }).catch((e: unknown) => e)
    await Bun.sleep(100)
    gaveUp.abort(new Error('gave up'))
    expect(((await pending) as Error).message).toBe('gave up')
    for (let i = 0; i < 50 && !aborted; i++) await Bun.sleep(20)
    held.resolve()
    expect(aborted).toBe(true)
  })

  test(`at most ${SOLANA_IN_FLIGHT} requests in flight; a request to another server meanwhile is not held behind them`, async () => {
    // Bun's fetch holds 256 requests in flight for the whole process: unbounded, these 300 held the other server's.
    let [inFlight, most] = [0, 0]
    balanceAnswer = async (id) => {
      inFlight++
      most = Math.max(most, inFlight)
      await Bun.sleep(1_000)
      inFlight--
      return new Response(answer(id, '7'))
    }
    const other = anotherServer()
    try {
      const c = client()
      // Distinct owners: identical requests of one tick would leave as one.
      const owners = await Promise.all(Array.from({ length: 300 }, () => generateKeyPairSigner()))
      const reads = owners.map((o) => readBalance(c, { chainId: 'localnet', owner: o.address, token: 'native' }))
      await Bun.sleep(100)
      expect(await other.answerMs()).toBeLessThan(300)
      // Each waits inside its own 10 s deadline: three turns of one second, all answered.
      expect(await Promise.all(reads)).toEqual(owners.map(() => 7n))
      expect(most).toBe(SOLANA_IN_FLIGHT)
    } finally {
      balanceAnswer = undefined
      other.stop()
    }
  }, 30_000)
})

test('answers parse as kit parses them: integers (with a positive exponent too) bigints, fractions numbers; past 1,000 digits malformed', () => {
  for (const text of ['{"a":18446744073709551615,"b":1.5,"c":-3,"d":1e3,"e":2E+2,"f":1e-3,"g":[0,-0,12],"h":"5","i":null,"j":{"k":[true,1]}}', '[]', '7', '"x"'])
    expect(parseAnswer(text)).toEqual(parseJsonWithBigInts(text))
  expect(() => parseAnswer(`[${'9'.repeat(1_001)}]`)).toThrow(MalformedAnswerError)
  expect(() => parseAnswer('[1e1000]')).toThrow(MalformedAnswerError)
  expect(parseAnswer(`[${'9'.repeat(1_000)}]`)).toEqual([10n ** 1000n - 1n])
})
