/**
 * Membership sign-in on EVM: an EIP-4361 (Sign-In with Ethereum) message signed with `personal_sign`.
 *
 * An EOA's signature is checked offline. Contract wallets (ERC-1271 when deployed, ERC-6492 when not yet) can
 * only be asked on their own chain, through that chain's RPC; when that RPC cannot answer, `verify` rejects with
 * `UnavailableError` instead of calling a possibly good signature bad.
 */
import {
  InvalidArgumentError,
  type SignInMessageParameters,
  type VerifySignInParameters,
  type VerifySignInResult,
} from '@earn/core'
import {
  encodeDeployData,
  encodeFunctionData,
  erc6492SignatureValidatorAbi,
  erc6492SignatureValidatorByteCode,
  hashMessage,
  isErc6492Signature,
  isErc8010Signature,
  parseErc8010Signature,
  parseAbi,
  parseCompactSignature,
  compactSignatureToSignature,
  recoverMessageAddress,
  serializeSignature,
  type Address,
  type SignedAuthorization,
  type Hex,
  type PublicClient,
} from 'viem'
import { createSiweMessage, parseSiweMessage, SiweInvalidMessageFieldError } from 'viem/siwe'
import { verifyAuthorization } from 'viem/utils'
import { format, parse } from './address.ts'
import { type EvmClient, MULTICALL3_ADDRESS } from './client.ts'
import { decodeAggregate3, encodeAggregate3 } from './multicall.ts'
import { ask, assertServesChain } from './rpc.ts'

export const SIGN_IN_STATEMENT =
  'Sign in to register this wallet as a member. This request will not trigger a blockchain transaction or cost any gas.'

/** `isValidSignature`'s selector, left-aligned in the 32-byte word a wallet that accepts must answer. */
const ERC1271_MAGIC_WORD = `0x1626ba7e${'0'.repeat(56)}`
const erc1271Abi = parseAbi(['function isValidSignature(bytes32 hash, bytes signature) view returns (bytes4)'])

/** An ECDSA signature is 64 or 65 bytes; contract wallets wrap or concatenate them, so nothing shorter is one. */
const MIN_SIGNATURE_BYTES = 64
const EOA_SIGNATURE_BYTES = 65

/** EIP-4361 nonces are alphanumeric; our nonces are UUIDs, so the message carries them without dashes. */
const siweNonce = (nonce: string) => nonce.replaceAll('-', '')

function chainIdNumber(chainId: string): number {
  const n = Number(chainId)
  if (!/^[1-9]\d*$/.test(chainId) || !Number.isSafeInteger(n))
    throw new InvalidArgumentError(`chainId must be a positive decimal integer for EVM, got "${chainId}"`, {
      chainId: 'must be a positive decimal integer, e.g. "1" for Ethereum mainnet',
    })
  return n
}

/** SIWE names a chain; an agreement asked for without one names Ethereum mainnet (SPEC: `chainId` defaults to 1). */
export const DEFAULT_CHAIN_ID = '1'

// The API field each EIP-4361 field comes from, so a rejected value is reported where the caller sent it.
const SOURCE_FIELD: Record<string, string> = { domain: 'url', uri: 'url', chainId: 'chainId', nonce: 'nonce', address: 'address' }

export function message(p: SignInMessageParameters): string {
  try {
    return createSiweMessage({
      domain: p.domain,
      address: format(p.address),
      statement: SIGN_IN_STATEMENT,
      uri: p.uri,
      version: '1',
      chainId: chainIdNumber(p.chainId ?? DEFAULT_CHAIN_ID),
      nonce: siweNonce(p.nonce),
      issuedAt: p.issuedAt,
      expirationTime: p.expiresAt,
    })
  } catch (e) {
    if (!(e instanceof SiweInvalidMessageFieldError)) throw e
    const field = Object.keys(SOURCE_FIELD).find((f) => e.shortMessage.includes(`"${f}"`)) ?? 'message'
    throw new InvalidArgumentError(`cannot build a Sign-In with Ethereum message: ${e.shortMessage}`, {
      [SOURCE_FIELD[field] ?? field]: `not accepted in an EIP-4361 message (${field})`,
    })
  }
}

const invalid = (reason: string): VerifySignInResult => ({ valid: false, reason })
const VALID: VerifySignInResult = { valid: true }

/** Why the stored message does not belong to this agreement, or `undefined` when every field matches. */
function messageMismatch(p: VerifySignInParameters): string | undefined {
  const m = parseSiweMessage(p.message)
  if (!m.address || !m.domain || !m.uri || !m.version || m.chainId === undefined || !m.nonce || !m.issuedAt)
    return 'the agreement message is not a complete EIP-4361 message'
  if (m.version !== '1') return `the agreement message has EIP-4361 version ${m.version}; only version 1 is supported`
  if (m.address.toLowerCase() !== p.address.toLowerCase()) return 'the agreement message was issued to another address'
  if (m.domain !== p.domain) return `the agreement message is for the domain ${m.domain}, not ${p.domain}`
  if (m.uri !== p.uri) return `the agreement message is for the URI ${m.uri}, not ${p.uri}`
  const chainId = p.chainId ?? DEFAULT_CHAIN_ID
  if (String(m.chainId) !== chainId) return `the agreement message is for chain ${m.chainId}, not chain ${chainId}`
  if (m.nonce !== siweNonce(p.nonce)) return 'the agreement message carries another nonce'
  const now = p.now.getTime()
  const expiresAt = m.expirationTime?.getTime()
  if (expiresAt === undefined || Number.isNaN(expiresAt)) return 'the agreement message has no valid expiration time'
  if (Math.min(expiresAt, p.expiresAt.getTime()) <= now) return 'the agreement has expired; request a new one'
  const notBefore = m.notBefore?.getTime()
  if (notBefore !== undefined && (Number.isNaN(notBefore) || notBefore > now)) return 'the agreement message is not valid yet'
  return undefined
}

/** The signature as hex, or why it cannot be a wallet signature at all. */
function signatureHex(signature: string): { hex: Hex } | { problem: string } {
  if (typeof signature !== 'string' || !/^0x[0-9a-fA-F]*$/.test(signature))
    return { problem: 'the signature must be 0x-prefixed hexadecimal, as personal_sign returns it' }
  if (signature.length % 2 !== 0) return { problem: 'the signature has an odd number of hex digits' }
  const bytes = (signature.length - 2) / 2
  if (bytes < MIN_SIGNATURE_BYTES) return { problem: `the signature is ${bytes} bytes, too short for a wallet signature (an EOA's is 65)` }
  return { hex: signature as Hex }
}

async function recoversTo(message: string, signature: Hex, address: Address): Promise<boolean> {
  try {
    // 64 bytes: EIP-2098's compact form (the parity in s's top bit) of the same signature, which some signers give.
    const full = signature.length === 2 + 2 * MIN_SIGNATURE_BYTES ? serializeSignature(compactSignatureToSignature(parseCompactSignature(signature))) : signature
    return (await recoverMessageAddress({ message, signature: full })).toLowerCase() === address
  } catch {
    // r, s or v out of range: not an ECDSA signature, though it may still be a contract wallet's.
    return false
  }
}

export async function verify(client: EvmClient, p: VerifySignInParameters): Promise<VerifySignInResult> {
  const mismatch = messageMismatch(p)
  if (mismatch) return invalid(mismatch)
  const sig = signatureHex(p.signature)
  if ('problem' in sig) return invalid(sig.problem)
  const address = parse(p.address)
  const signature = sig.hex

  const wrapped = isErc6492Signature(signature) || isErc8010Signature(signature)
  if (!wrapped && (sig.hex.length === 2 + 2 * EOA_SIGNATURE_BYTES || sig.hex.length === 2 + 2 * MIN_SIGNATURE_BYTES) && (await recoversTo(p.message, signature, address)))
    return VALID

  // Not this address's key: only a contract wallet at this address can still vouch for the signature.
  const chainId = p.chainId ?? DEFAULT_CHAIN_ID
  const publicClient = client.publicClient(chainId)
  if (!publicClient)
    return invalid(
      `the signature was not made by this wallet's key over the message issued with this nonce (sign that message exactly as returned); a contract wallet could not be checked either: no RPC is configured for chain ${chainId}`,
    )
  return verifyContractWallet({ client: publicClient, chainId }, address, hashMessage(p.message), signature)
}

/** The chain a contract wallet is asked on. */
interface WalletChain {
  client: PublicClient
  chainId: string
}

async function verifyContractWallet(chain: WalletChain, address: Address, hash: Hex, signature: Hex): Promise<VerifySignInResult> {
  const { client, chainId } = chain
  if (isErc6492Signature(signature)) {
    await assertServesChain(client, chainId)
    return verifyCounterfactual(chain, address, hash, signature)
  }
  if (isErc8010Signature(signature)) return verifyDelegated(chain, address, hash, signature)

  const [, code] = await Promise.all([
    assertServesChain(client, chainId),
    ask(chainId, () => client.getCode({ address })),
  ])
  if (!code || code === '0x')
    return invalid(`the signature was not made by this wallet's key over the message issued with this nonce (sign that message exactly as returned), and no contract wallet is deployed at this address on chain ${chainId}`)
  return (await acceptedBy(chain, { to: address, data: isValidSignatureData(hash, signature) }))
    ? VALID
    : invalid(`the contract wallet on chain ${chainId} did not accept the signature (ERC-1271)`)
}

const isValidSignatureData = (hash: Hex, signature: Hex) => encodeFunctionData({ abi: erc1271Abi, functionName: 'isValidSignature', args: [hash, signature] })

/**
 * An eth_call of its own, never in a Multicall3 batch: the wallet it asks is the client's to name, and may answer
 * megabytes or revert with them, which failed the batch and the valid sign-ins of other wallets checked beside it.
 * The server's transport sends every eth_call in an HTTP request of its own too (client.ts), so a wallet slow to
 * answer holds only its own check. A revert rejects.
 */
async function callAlone(chain: WalletChain, call: { to?: Address; data: Hex; authorizationList?: SignedAuthorization[] }): Promise<Hex> {
  return (await chain.client.call({ ...call, batch: false })).data ?? '0x'
}

/** Whether the wallet's `isValidSignature` accepts: a refusal (a revert) is `false`; a chain that does not answer, the 503. */
async function acceptedBy(chain: WalletChain, call: { to: Address; data: Hex; authorizationList?: SignedAuthorization[] }): Promise<boolean> {
  const answer = await ask<Hex | undefined>(chain.chainId, () => callAlone(chain, call), () => undefined)
  return answer !== undefined && accepts(answer)
}

/**
 * The whole first word, as OpenZeppelin's SignatureChecker reads it: decoded as `bytes4`, only its first four bytes
 * counted, and a contract that echoes its calldata (which starts with the selector) passed for anyone's signature.
 */
const accepts = (answer: Hex) => answer.slice(0, 66).toLowerCase() === ERC1271_MAGIC_WORD

const NOT_WRAPPED = 'the signature ends in the ERC-8010 marker but is not a well-formed ERC-8010 wrapper'
const DELEGATE_REFUSED = 'the EIP-7702 account did not accept the signature (ERC-8010)'

/**
 * ERC-8010: an EIP-7702 account's signature, wrapped with the authorization that delegates it to a contract (and
 * that contract's init call, if it needs one). Checked here, not by viem's verifyHash (2.56.9), which took any
 * answer merely starting with the magic value (a delegate echoing its calldata passed a stranger's signature),
 * never checked the authorization of an account already delegated, and read the answer through the shared Multicall3
 * batch (a delegate answering megabytes failed another account's valid sign-in).
 */
async function verifyDelegated(chain: WalletChain, address: Address, hash: Hex, signature: Hex): Promise<VerifySignInResult> {
  const { client, chainId } = chain
  let wrapper: ReturnType<typeof parseErc8010Signature>
  try {
    // The magic suffix is all `isErc8010Signature` looks at; a wrapper that does not unwrap throws an error of its own.
    wrapper = parseErc8010Signature(signature)
  } catch {
    return invalid(NOT_WRAPPED)
  }
  if (!wrapper.authorization) return invalid(NOT_WRAPPED)
  const authorization: SignedAuthorization = { ...wrapper.authorization, chainId: Number(wrapper.authorization.chainId), nonce: Number(wrapper.authorization.nonce) }
  const [, code] = await Promise.all([assertServesChain(client, chainId), ask(chainId, () => client.getCode({ address }))])
  const check = isValidSignatureData(hash, wrapper.signature)
  // Delegated already to the contract the wrapper names: the account's code answers, as any contract wallet's does.
  if (code?.toLowerCase() === `0xef0100${authorization.address.slice(2).toLowerCase()}`)
    return (await acceptedBy(chain, { to: address, data: check })) ? VALID : invalid(DELEGATE_REFUSED)
  // Not (yet): only the account's own key may delegate it, or anyone could name a delegate that accepts everything.
  if (!(await verifyAuthorization({ address, authorization }).catch(() => false)))
    return invalid("the ERC-8010 authorization was not signed by this account's key")
  // One the node would skip (another chain, a nonce not the account's) would leave the account without the delegate:
  // said as what it is, not as the account refusing.
  if (authorization.chainId !== 0 && String(authorization.chainId) !== chainId)
    return invalid(`the ERC-8010 authorization is for chain ${authorization.chainId}, not ${chainId}`)
  const nonce = await ask(chainId, () => client.getTransactionCount({ address, blockTag: 'latest' }))
  if (authorization.nonce !== nonce) return invalid(`the ERC-8010 authorization's nonce is ${authorization.nonce}, the account's is ${nonce}: sign a new authorization`)
  if (!wrapper.data) return (await acceptedBy(chain, { to: address, data: check, authorizationList: [authorization] })) ? VALID : invalid(DELEGATE_REFUSED)
  // The delegate's init call first, then the check, in one call with the delegation applied: through Multicall3.
  const calls = [
    { to: wrapper.address ?? address, data: wrapper.data },
    { to: address, data: check },
  ]
  const results = await ask<{ success: boolean; returnData: Hex }[] | 'no multicall' | 'failed'>(
    chainId,
    async () => {
      const data = await callAlone(chain, { to: MULTICALL3_ADDRESS, data: encodeAggregate3(calls), authorizationList: [authorization] })
      // No code at Multicall3's address answers nothing; any other answer not of aggregate3's shape is the node's fault.
      return data === '0x' ? 'no multicall' : decodeAggregate3(data, calls.length)
    },
    () => 'failed',
  )
  if (results === 'no multicall') return invalid(`the ERC-8010 account's init call needs Multicall3 (${MULTICALL3_ADDRESS}) on chain ${chainId}, which has none`)
  // Every sub-call may fail alone: the whole failing is one of them running the call out of gas or memory.
  if (results === 'failed') return invalid("the ERC-8010 account's init call or its check failed the whole call (out of gas or memory)")
  const [init, checked] = results
  if (!init!.success) return invalid("the ERC-8010 account's init call reverted")
  return checked!.success && accepts(checked!.returnData) ? VALID : invalid(DELEGATE_REFUSED)
}

/**
 * ERC-6492: the signature carries the wallet's factory call. The validator is run deployless in an `eth_call`
 * (as viem's verifyHash does), but called here directly, because verifyHash reports an RPC failure as `false`.
 */
async function verifyCounterfactual(chain: WalletChain, address: Address, hash: Hex, signature: Hex): Promise<VerifySignInResult> {
  const { chainId } = chain
  const data = encodeDeployData({
    abi: erc6492SignatureValidatorAbi,
    bytecode: erc6492SignatureValidatorByteCode,
    args: [address, hash, signature],
  })
  const result = await ask(chainId, () => callAlone(chain, { data }), () => undefined)
  return result !== undefined && /^0x0*1$/.test(result)
    ? VALID
    : invalid(`the counterfactual wallet on chain ${chainId} did not accept the signature (ERC-6492)`)
}
