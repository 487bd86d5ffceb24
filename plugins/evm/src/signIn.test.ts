import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { InvalidArgumentError, UnavailableError, type VerifySignInParameters } from '@earn/core'
import {
  concatHex,
  encodeErrorResult,
  encodeFunctionData,
  parseAbi,
  parseSignature,
  serializeCompactSignature,
  serializeErc6492Signature,
  serializeErc8010Signature,
  signatureToCompactSignature,
  toHex,
  type Address,
  type Hex,
} from 'viem'
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts'
import { parseSiweMessage } from 'viem/siwe'
import {
  closedPortUrl,
  deploy,
  deployHostile,
  deploySmartWallet,
  recordingProxy,
  deploySmartWalletFactory,
  startAnvil,
  testSmartWalletFactoryAbi,
  type Anvil,
} from '../../../test/chains/evm.ts'
import { connect, evmClientFromPublicClients, type EvmClient } from './client.ts'
import { message, SIGN_IN_STATEMENT, verify } from './signIn.ts'

const NOW = new Date('2026-03-01T12:00:00.000Z')
const NONCE = '3f2b8c4e-9a1d-4e7f-8b2c-5d6e7f8a9b0c'
const offline: EvmClient = connect({})

function agreement(address: string, over: Partial<VerifySignInParameters> = {}) {
  return {
    address: address.toLowerCase(),
    domain: 'app.example.com',
    uri: 'https://app.example.com/earn',
    chainId: '1',
    nonce: NONCE,
    issuedAt: NOW,
    expiresAt: new Date(NOW.getTime() + 300_000),
    ...over,
  }
}

/** What the server does: issue a message, have the wallet sign it, verify against the stored text. */
async function signed(account: PrivateKeyAccount, over: Partial<VerifySignInParameters> = {}) {
  const p = agreement(account.address, over)
  const text = message(p)
  const signature = await account.signMessage({ message: text })
  return { ...p, message: text, signature, now: new Date(NOW.getTime() + 1_000) } satisfies VerifySignInParameters
}

describe('signIn.message', () => {
  test('is an EIP-4361 message carrying every agreement field, the address in EIP-55 form', () => {
    const account = privateKeyToAccount(generatePrivateKey())
    const text = message(agreement(account.address))
    expect(text).toBe(
      [
        `app.example.com wants you to sign in with your Ethereum account:`,
        account.address,
        '',
        SIGN_IN_STATEMENT,
        '',
        'URI: https://app.example.com/earn',
        'Version: 1',
        'Chain ID: 1',
        'Nonce: 3f2b8c4e9a1d4e7f8b2c5d6e7f8a9b0c',
        'Issued At: 2026-03-01T12:00:00.000Z',
        'Expiration Time: 2026-03-01T12:05:00.000Z',
      ].join('\n'),
    )
    expect(parseSiweMessage(text).address).toBe(account.address)
  })

  test('keeps the port of a local domain', () => {
    const text = message(agreement(privateKeyToAccount(generatePrivateKey()).address, { domain: 'localhost:5173', uri: 'http://localhost:5173' }))
    expect(text).toStartWith('localhost:5173 wants you to sign in')
  })

  test('refuses a chain id that is not a positive integer, naming the field', () => {
    const address = privateKeyToAccount(generatePrivateKey()).address
    for (const chainId of ['mainnet', '0', '-1', '1.5', '']) {
      expect(() => message(agreement(address, { chainId }))).toThrow(InvalidArgumentError)
    }
    try {
      message(agreement(address, { chainId: 'mainnet' }))
    } catch (e) {
      expect((e as InvalidArgumentError).context).toHaveProperty('chainId')
    }
  })

  test('refuses a domain EIP-4361 cannot carry, naming the url field', () => {
    const address = privateKeyToAccount(generatePrivateKey()).address
    let thrown: unknown
    try {
      message(agreement(address, { domain: 'not a host' }))
    } catch (e) {
      thrown = e
    }
    expect(thrown).toBeInstanceOf(InvalidArgumentError)
    expect((thrown as InvalidArgumentError).context).toEqual({ url: expect.stringContaining('domain') })
  })
})

describe('signIn.verify, EOA (offline)', () => {
  const alice = privateKeyToAccount(generatePrivateKey())
  const mallory = privateKeyToAccount(generatePrivateKey())

  test("accepts the wallet's own signature with no RPC at all", async () => {
    expect(await verify(offline, await signed(alice))).toEqual({ valid: true })
  })

  test('accepts an uppercase-hex signature', async () => {
    const p = await signed(alice)
    expect(await verify(offline, { ...p, signature: `0x${p.signature.slice(2).toUpperCase()}` })).toEqual({ valid: true })
  })

  const rejects = async (p: VerifySignInParameters, reason: RegExp) => {
    const r = await verify(offline, p)
    expect(r).toEqual({ valid: false, reason: expect.stringMatching(reason) })
  }

  test('rejects a different nonce than the agreement', async () => {
    await rejects({ ...(await signed(alice)), nonce: '00000000-0000-4000-8000-000000000000' }, /another nonce/)
  })

  test('rejects a different domain', async () => {
    await rejects({ ...(await signed(alice)), domain: 'evil.example.com' }, /domain app\.example\.com, not evil\.example\.com/)
  })

  test('rejects a different URI', async () => {
    await rejects({ ...(await signed(alice)), uri: 'https://app.example.com/other' }, /URI/)
  })

  test('rejects a different chain', async () => {
    await rejects({ ...(await signed(alice)), chainId: '8453' }, /chain 1, not chain 8453/)
  })

  test('rejects a message issued to another address', async () => {
    await rejects({ ...(await signed(alice)), address: mallory.address.toLowerCase() }, /another address/)
  })

  test('rejects an expired agreement, at the second it expires', async () => {
    const p = await signed(alice)
    await rejects({ ...p, now: p.expiresAt }, /expired/)
    await rejects({ ...p, now: new Date(p.expiresAt.getTime() + 60_000) }, /expired/)
    expect(await verify(offline, { ...p, now: new Date(p.expiresAt.getTime() - 1) })).toEqual({ valid: true })
  })

  test('rejects a tampered message, even one whose fields still match', async () => {
    const p = await signed(alice)
    await rejects({ ...p, message: p.message.replace('register this wallet', 'register that wallet') }, /not made by this wallet's key/)
  })

  test('rejects text that is not an EIP-4361 message', async () => {
    await rejects({ ...(await signed(alice)), message: 'hello' }, /not a complete EIP-4361 message/)
  })

  test("rejects another key's signature over the same message", async () => {
    const p = await signed(alice)
    await rejects({ ...p, signature: await mallory.signMessage({ message: p.message }) }, /no RPC is configured for chain 1/)
  })

  test.each([
    ['', /0x-prefixed hexadecimal/],
    ['not a signature', /0x-prefixed hexadecimal/],
    ['0x', /0 bytes/],
    ['0x1234', /2 bytes/],
    ['0xabc', /odd number/],
    [`0x${'zz'.repeat(65)}`, /0x-prefixed hexadecimal/],
    [`0x${'00'.repeat(65)}`, /not made by this wallet's key/],
    [`0x${'ff'.repeat(65)}`, /not made by this wallet's key/],
  ])('rejects the garbage signature %p without throwing', async (signature, reason) => {
    await rejects({ ...(await signed(alice)), signature }, reason)
  })

  test('a signature without its 0x prefix is not accepted', async () => {
    const p = await signed(alice)
    await rejects({ ...p, signature: p.signature.slice(2) }, /0x-prefixed/)
  })
})

/** Code that answers any call with 3,800,000 zero bytes (PUSH3 3800000, PUSH1 0, RETURN). */
const MEGABYTES: Hex = '0x6239fb806000f3'

describe('signIn.verify, contract wallets (anvil)', () => {
  let anvil: Anvil
  let client: EvmClient
  const owner = privateKeyToAccount(generatePrivateKey())
  const stranger = privateKeyToAccount(generatePrivateKey())
  let wallet: Address
  let factory: Address

  beforeAll(async () => {
    anvil = await startAnvil()
    client = evmClientFromPublicClients({ [anvil.chainId]: anvil.publicClient })
    wallet = await deploySmartWallet(anvil, owner.address)
    factory = await deploySmartWalletFactory(anvil)
  })
  afterAll(() => anvil?.stop())

  /** The wallet's owner signs the agreement issued to the contract wallet's address (as a Safe app would relay). */
  async function signedFor(address: Address, signer: PrivateKeyAccount) {
    const p = agreement(address, { chainId: anvil.chainId })
    const text = message(p)
    return { ...p, message: text, signature: await signer.signMessage({ message: text }), now: new Date(NOW.getTime() + 1_000) }
  }

  test("ERC-1271: the owner's signature verifies through the chain", async () => {
    expect(await verify(client, await signedFor(wallet, owner))).toEqual({ valid: true })
  })

  test("ERC-1271: a stranger's signature is refused by the wallet", async () => {
    expect(await verify(client, await signedFor(wallet, stranger))).toEqual({
      valid: false,
      reason: expect.stringContaining('did not accept the signature (ERC-1271)'),
    })
  })

  test('ERC-1271: a signature over another message is refused', async () => {
    const p = await signedFor(wallet, owner)
    const other = await signedFor(wallet, owner)
    const forged = { ...other, message: other.message.replace('Sign in', 'Log in') }
    expect(await verify(client, { ...forged, signature: p.signature })).toMatchObject({ valid: false })
  })

  test('ERC-1271: garbage of a plausible length is refused by the wallet, not thrown', async () => {
    const p = await signedFor(wallet, owner)
    expect(await verify(client, { ...p, signature: toHex(new Uint8Array(130).fill(7)) })).toMatchObject({ valid: false })
  })

  test("ERC-1271: a contract echoing its calldata (the answer starts with the magic value) is refused a stranger's signature", async () => {
    const echo = await deployHostile(anvil, 'TestEcho')
    // Read as bytes4, this answer was the magic value: its first word is the selector and 28 bytes of the hash.
    const p = await signedFor(echo, stranger)
    expect(await verify(client, p)).toEqual({ valid: false, reason: expect.stringContaining('did not accept the signature (ERC-1271)') })
  })

  test("ERC-1271: a wallet that answers megabytes beside another's check leaves that check to its own answer", async () => {
    // The server's client, batching reads in Multicall3 as in production: both checks in flight at once.
    const batching = connect({ EVM_RPC_URLS: `${anvil.chainId}=${anvil.url}` })
    const bomb = await deployHostile(anvil, 'TestReturnBomb')
    for (let round = 0; round < 3; round++) {
      const [honest, hostile] = await Promise.all([signedFor(wallet, owner), signedFor(bomb, stranger)])
      const [a, b] = await Promise.all([verify(batching, honest), verify(batching, hostile)])
      expect(a).toEqual({ valid: true })
      expect(b).toMatchObject({ valid: false })
    }
  })

  test('ERC-1271: a wallet reverting with an OffchainLookup (CCIP-Read) is refused, and the server fetches nothing it names', async () => {
    const asked: string[] = []
    // Never answers: viem followed the lookup with no time limit, so the sign-in hung too.
    const listener = Bun.serve({ hostname: '127.0.0.1', port: 0, idleTimeout: 0, fetch: async (request) => (asked.push(request.url), await Bun.sleep(60_000), new Response('')) })
    try {
      const lookup = privateKeyToAccount(generatePrivateKey()).address
      const revert = encodeErrorResult({
        abi: parseAbi(['error OffchainLookup(address sender, string[] urls, bytes callData, bytes4 callbackFunction, bytes extraData)']),
        errorName: 'OffchainLookup',
        args: [lookup, [`http://127.0.0.1:${listener.port}/internal/{sender}/{data}`], '0x1234', '0x12345678', '0x'],
      })
      await anvil.testClient.setCode({ address: lookup, bytecode: revertingWith(revert) })
      const server = connect({ EVM_RPC_URLS: `${anvil.chainId}=${anvil.url}` })
      const outcome = await Promise.race([verify(server, await signedFor(lookup, stranger)), Bun.sleep(5_000).then(() => 'still waiting')])
      expect(outcome).toEqual({ valid: false, reason: expect.stringContaining('did not accept the signature (ERC-1271)') })
      expect(asked).toEqual([])
    } finally {
      listener.stop(true)
    }
  })

  test('an ERC-8010 marker after bytes that are no ERC-8010 wrapper is refused, not thrown', async () => {
    const p = await signedFor(wallet, owner)
    const magic = '8010'.repeat(16)
    const zeroLength = '0'.repeat(64)
    for (const signature of [`0x${'ab'.repeat(100)}${magic}`, `0x${'ab'.repeat(100)}${'f'.repeat(64)}${magic}`, `${p.signature}${zeroLength}${magic}`] as Hex[])
      expect(await verify(client, { ...p, signature })).toEqual({ valid: false, reason: expect.stringContaining('not a well-formed ERC-8010 wrapper') })
  })

  test('wallets answering megabytes beside a valid check fail only their own (a JSON-RPC batch too large goes again one request at a time)', async () => {
    // The server's client: viem's transport sends one tick's requests as one JSON-RPC batch, its answer bounded at
    // 10 MiB, which two such answers (~7.6 MB of hex each) pass together.
    const server = connect({ EVM_RPC_URLS: `${anvil.chainId}=${anvil.url}` })
    const bombs = [privateKeyToAccount(generatePrivateKey()).address, privateKeyToAccount(generatePrivateKey()).address]
    for (const bomb of bombs) await anvil.testClient.setCode({ address: bomb, bytecode: MEGABYTES })
    const asks = [await signedFor(wallet, owner), ...(await Promise.all(bombs.map((bomb) => signedFor(bomb, stranger))))]
    const [genuine, ...refused] = await Promise.all(asks.map((p) => verify(server, p)))
    expect(genuine).toEqual({ valid: true })
    for (const r of refused) expect(r).toEqual({ valid: false, reason: `the contract wallet on chain ${anvil.chainId} did not accept the signature (ERC-1271)` })
  })

  test('a wallet slow to answer beside a valid check holds only its own (each eth_call is an HTTP request of its own)', async () => {
    // A node takes its time over a contract the client names (a trace, a wallet burning gas); a JSON-RPC batch is
    // answered only when all of it is, so a valid sign-in sent in the same tick as such a wallet's waited for it.
    const slowOwner = privateKeyToAccount(generatePrivateKey())
    const slow = await deploySmartWallet(anvil, slowOwner.address)
    const proxy = recordingProxy(anvil.url, {
      delayMs: (call) => (call.method === 'eth_call' && String((call.params[0] as { to?: string })?.to).toLowerCase() === slow.toLowerCase() ? 3_000 : 0),
    })
    try {
      const server = connect({ EVM_RPC_URLS: `${anvil.chainId}=${proxy.url}` })
      const [genuine, held] = [await signedFor(wallet, owner), await signedFor(slow, slowOwner)]
      const started = performance.now()
      const slowCheck = verify(server, held)
      const genuineTook = await verify(server, genuine).then((r) => ({ r, ms: performance.now() - started }))
      expect(genuineTook.r).toEqual({ valid: true })
      expect(genuineTook.ms).toBeLessThan(1_500)
      expect(await slowCheck).toEqual({ valid: true })
      for (const request of proxy.requests.filter((r) => r.includes('eth_call'))) expect(request).toEqual(['eth_call'])
    } finally {
      proxy.stop()
    }
  })

  test("a 64-byte (EIP-2098 compact) signature by the wallet's own key verifies, offline; another key's is refused", async () => {
    const eoa = privateKeyToAccount(generatePrivateKey())
    const p = await signedFor(eoa.address, eoa)
    const compact = (signature: Hex) => serializeCompactSignature(signatureToCompactSignature(parseSignature(signature)))
    expect(compact(p.signature).length).toBe(2 + 128)
    expect(await verify(offline, { ...p, signature: compact(p.signature) })).toEqual({ valid: true })
    const other = await signedFor(eoa.address, stranger)
    expect(await verify(client, { ...other, signature: compact(other.signature) })).toEqual({
      valid: false,
      reason: `the signature was not made by this wallet's key over the message issued with this nonce (sign that message exactly as returned), and no contract wallet is deployed at this address on chain ${anvil.chainId}`,
    })
  })

  test('an EOA address with a stranger signature: no contract there, so refused', async () => {
    const eoa = privateKeyToAccount(generatePrivateKey())
    expect(await verify(client, await signedFor(eoa.address, stranger))).toEqual({
      valid: false,
      reason: expect.stringContaining(`no contract wallet is deployed at this address on chain ${anvil.chainId}`),
    })
  })

  test('the same contract-wallet signature on a chain with no RPC is refused, with the reason', async () => {
    const p = await signedFor(wallet, owner)
    expect(await verify(offline, p)).toEqual({
      valid: false,
      reason: expect.stringContaining(`no RPC is configured for chain ${anvil.chainId}`),
    })
  })

  test('an RPC that is down makes the check unavailable (503), not invalid', async () => {
    const url = await closedPortUrl()
    const down = connect({ EVM_RPC_URLS: `${anvil.chainId}=${url}` })
    const p = await signedFor(wallet, owner)
    const error = await verify(down, p).then(
      (r) => r,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(UnavailableError)
    expect(error).toMatchObject({ status: 503, code: 'UNAVAILABLE', context: { chainId: anvil.chainId } })
    // The text reaches the client and the cause may reach the logs: neither carries the RPC URL (it may hold an
    // API key) nor the signature.
    const cause = (error as Error).cause as Error
    expect(cause).toBeInstanceOf(Error)
    for (const text of [(error as Error).message, cause.message, String(cause.stack)]) {
      expect(text).not.toContain(url)
      expect(text).not.toContain(p.signature.slice(2, 40))
    }
    // An EOA needs no chain, so the same outage does not stop it.
    const eoa = privateKeyToAccount(generatePrivateKey())
    expect(await verify(down, await signedFor(eoa.address, eoa))).toEqual({ valid: true })
  })

  test('an RPC that serves another chain is not trusted with a contract wallet', async () => {
    const misrouted = evmClientFromPublicClients({ '1': anvil.publicClient })
    const p = agreement(wallet, { chainId: '1' })
    const text = message(p)
    const outcome = verify(misrouted, { ...p, message: text, signature: await owner.signMessage({ message: text }), now: NOW })
    await expect(outcome).rejects.toBeInstanceOf(UnavailableError)
    await expect(outcome).rejects.toThrow(`serves chain ${anvil.chainId}`)
  })

  describe('ERC-8010 (EIP-7702 accounts)', () => {
    let delegate: Address
    let echo: Address
    let bomb: Address
    const chainId = () => Number(anvil.chainId)
    beforeAll(async () => {
      delegate = await deploy(anvil, 'TestEoaDelegate')
      echo = await deployHostile(anvil, 'TestEcho')
      bomb = await deployHostile(anvil, 'TestReturnBomb')
    })
    /** An authorization no key made: what a wrapper for an account already delegated may carry. */
    const junk = (address: Address) => ({ address, chainId: chainId(), nonce: 0, r: toHex(1n, { size: 32 }), s: toHex(1n, { size: 32 }), yParity: 0 })
    const delegated = async (to: Address) => {
      const account = privateKeyToAccount(generatePrivateKey())
      await anvil.testClient.setCode({ address: account.address, bytecode: concatHex(['0xef0100', to]) })
      return account
    }

    test("not yet delegated: the account's own authorization and key verify; an authorization by another key is refused", async () => {
      const account = privateKeyToAccount(generatePrivateKey())
      const p = await signedFor(account.address, account)
      const own = await account.signAuthorization({ contractAddress: delegate, chainId: chainId(), nonce: 0 })
      expect(await verify(client, { ...p, signature: serializeErc8010Signature({ authorization: own, signature: p.signature }) })).toEqual({ valid: true })
      const others = await stranger.signAuthorization({ contractAddress: echo, chainId: chainId(), nonce: 0 })
      expect(await verify(client, { ...p, signature: serializeErc8010Signature({ authorization: others, signature: p.signature }) })).toEqual({
        valid: false,
        reason: "the ERC-8010 authorization was not signed by this account's key",
      })
    })

    test('the authorization goes to the node as viem writes it: r and s without leading zeros, which geth refuses', async () => {
      // An account whose authorization's r or s begins with a zero nibble (about one in six).
      let account = privateKeyToAccount(generatePrivateKey())
      let authorization = await account.signAuthorization({ contractAddress: delegate, chainId: chainId(), nonce: 0 })
      while (!/^0x0/.test(toHex(BigInt(authorization.r), { size: 32 })) && !/^0x0/.test(toHex(BigInt(authorization.s), { size: 32 }))) {
        account = privateKeyToAccount(generatePrivateKey())
        authorization = await account.signAuthorization({ contractAddress: delegate, chainId: chainId(), nonce: 0 })
      }
      const proxy = recordingProxy(anvil.url)
      try {
        const server = connect({ EVM_RPC_URLS: `${anvil.chainId}=${proxy.url}` })
        const p = await signedFor(account.address, account)
        expect(await verify(server, { ...p, signature: serializeErc8010Signature({ authorization, signature: p.signature }) })).toEqual({ valid: true })
        const sent = proxy.calls.find((c) => c.method === 'eth_call' && (c.params[0] as { authorizationList?: unknown }).authorizationList)
        expect((sent!.params[0] as { authorizationList: unknown[] }).authorizationList[0]).toEqual({
          address: delegate.toLowerCase(),
          chainId: toHex(chainId()),
          nonce: '0x0',
          r: toHex(BigInt(authorization.r)),
          s: toHex(BigInt(authorization.s)),
          yParity: toHex(authorization.yParity!),
        })
      } finally {
        await proxy.stop()
      }
    })

    test("not yet delegated, with the delegate's init call: run first, the delegation applied, then the check", async () => {
      const account = privateKeyToAccount(generatePrivateKey())
      // The owner signs; the init call makes it the account's guardian, whose signature the delegate then accepts.
      const p = await signedFor(account.address, owner)
      const authorization = await account.signAuthorization({ contractAddress: delegate, chainId: chainId(), nonce: 0 })
      const data = encodeFunctionData({ abi: parseAbi(['function init(address guardian)']), functionName: 'init', args: [owner.address] })
      expect(await verify(client, { ...p, signature: serializeErc8010Signature({ authorization, signature: p.signature, data, address: account.address }) })).toEqual({ valid: true })
      // Without it, the owner is nobody to the account.
      expect(await verify(client, { ...p, signature: serializeErc8010Signature({ authorization, signature: p.signature }) })).toEqual({
        valid: false,
        reason: 'the EIP-7702 account did not accept the signature (ERC-8010)',
      })
    })

    test("delegated already: the delegate's whole first word counts, so one echoing its calldata does not pass a stranger's signature", async () => {
      const victim = await delegated(echo)
      const p = await signedFor(victim.address, stranger)
      expect(await verify(client, { ...p, signature: serializeErc8010Signature({ authorization: junk(echo), signature: p.signature }) })).toEqual({
        valid: false,
        reason: 'the EIP-7702 account did not accept the signature (ERC-8010)',
      })
    })

    test('an authorization the node would skip (another chain, a stale nonce) is refused as such; an init call failing the whole call says so', async () => {
      const account = privateKeyToAccount(generatePrivateKey())
      const p = await signedFor(account.address, account)
      const wrapped = async (over: { chainId?: number; nonce?: number; data?: Hex; address?: Address }) =>
        serializeErc8010Signature({
          authorization: await account.signAuthorization({ contractAddress: delegate, chainId: over.chainId ?? chainId(), nonce: over.nonce ?? 0 }),
          signature: p.signature,
          ...(over.data ? { data: over.data, address: over.address } : {}),
        })
      expect(await verify(client, { ...p, signature: await wrapped({ chainId: 1 }) })).toEqual({ valid: false, reason: `the ERC-8010 authorization is for chain 1, not ${anvil.chainId}` })
      expect(await verify(client, { ...p, signature: await wrapped({ nonce: 5 }) })).toEqual({
        valid: false,
        reason: "the ERC-8010 authorization's nonce is 5, the account's is 0: sign a new authorization",
      })
      // Chain 0 is any chain (EIP-7702).
      expect(await verify(client, { ...p, signature: await wrapped({ chainId: 0 }) })).toEqual({ valid: true })
      // An init call answering megabytes runs the whole call out of gas: not Multicall3 missing.
      const huge = privateKeyToAccount(generatePrivateKey()).address
      await anvil.testClient.setCode({ address: huge, bytecode: MEGABYTES })
      expect(await verify(client, { ...p, signature: await wrapped({ data: '0x12', address: huge }) })).toEqual({
        valid: false,
        reason: "the ERC-8010 account's init call or its check failed the whole call (out of gas or memory)",
      })
    })

    test('delegated already: a delegate answering megabytes fails its own check only, not a valid one asked with it', async () => {
      // The server's client, which folds concurrent reads into Multicall3 batches.
      const server = connect({ EVM_RPC_URLS: `${anvil.chainId}=${anvil.url}` })
      const good = await delegated(delegate)
      const bad = await delegated(bomb)
      const [mine, theirs] = await Promise.all([signedFor(good.address, good), signedFor(bad.address, bad)])
      const [accepted, refused] = await Promise.all([
        verify(server, { ...mine, signature: serializeErc8010Signature({ authorization: junk(delegate), signature: mine.signature }) }),
        verify(server, { ...theirs, signature: serializeErc8010Signature({ authorization: junk(bomb), signature: theirs.signature }) }),
      ])
      expect(accepted).toEqual({ valid: true })
      expect(refused).toEqual({ valid: false, reason: 'the EIP-7702 account did not accept the signature (ERC-8010)' })
    })
  })

  describe('ERC-6492 (counterfactual wallet)', () => {
    const salt = toHex(1n, { size: 32 })
    let predicted: Address

    beforeAll(async () => {
      predicted = await anvil.publicClient.readContract({
        address: factory,
        abi: testSmartWalletFactoryAbi,
        functionName: 'predict',
        args: [owner.address, salt],
      })
    })

    const wrap = (signature: Hex, walletOwner: Address = owner.address) =>
      serializeErc6492Signature({
        address: factory,
        data: encodeFunctionData({ abi: testSmartWalletFactoryAbi, functionName: 'deploy', args: [walletOwner, salt] }),
        signature,
      })

    test("the owner's wrapped signature verifies before the wallet exists, and deploys nothing", async () => {
      expect(await anvil.publicClient.getCode({ address: predicted })).toBeUndefined()
      const p = await signedFor(predicted, owner)
      expect(await verify(client, { ...p, signature: wrap(p.signature) })).toEqual({ valid: true })
      expect(await anvil.publicClient.getCode({ address: predicted })).toBeUndefined()
    })

    test("a stranger's wrapped signature is refused", async () => {
      const p = await signedFor(predicted, stranger)
      expect(await verify(client, { ...p, signature: wrap(p.signature) })).toEqual({
        valid: false,
        reason: expect.stringContaining('ERC-6492'),
      })
    })

    test('a factory call that deploys a wallet at another address is refused', async () => {
      const p = await signedFor(predicted, stranger)
      expect(await verify(client, { ...p, signature: wrap(p.signature, stranger.address) })).toMatchObject({ valid: false })
    })

    test('with the RPC down it is unavailable, not invalid', async () => {
      const down = connect({ EVM_RPC_URLS: `${anvil.chainId}=${await closedPortUrl()}` })
      const p = await signedFor(predicted, owner)
      await expect(verify(down, { ...p, signature: wrap(p.signature) })).rejects.toBeInstanceOf(UnavailableError)
    })
  })
})

/** Runtime code that reverts every call with `data` (MSTOREs of its words, then REVERT). */
function revertingWith(data: Hex): Hex {
  const hex = data.slice(2)
  let code = ''
  for (let at = 0; at < hex.length / 2; at += 32)
    code += `7f${hex.slice(at * 2, at * 2 + 64).padEnd(64, '0')}61${at.toString(16).padStart(4, '0')}52`
  return `0x${code}61${(hex.length / 2).toString(16).padStart(4, '0')}6000fd`
}
