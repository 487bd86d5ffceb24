/**
 * Registering a TON wallet as an Earn member, end to end, as an integrator's backend would do it.
 *
 * In a real app the wallet signs in the browser through TON Connect: the backend asks Earn for an
 * agreement, hands its `message` to `tonConnectUI.setConnectRequestParameters({ state: 'ready',
 * value: { tonProof: message } })`, and forwards what the wallet returns. Here a local key pair and a
 * W5 (v5r1) wallet play the wallet's part, so the script runs without a browser or a funded wallet.
 *
 *   EARN_URL=http://127.0.0.1:3000 EARN_PUBLISHABLE_KEY=pk_live_... EARN_SECRET_KEY=sk_live_... \
 *     [EARN_DISTRIBUTOR_ID=...] bun examples/ton-membership.ts
 *
 * Needs @ton/core, @ton/crypto and @ton/ton, which examples/package.json installs with the workspace.
 */
import { createHash } from 'node:crypto'
import { Address, beginCell, storeStateInit, type StateInit } from '@ton/core'
import { mnemonicNew, mnemonicToPrivateKey, sign, type KeyPair } from '@ton/crypto'
import { WalletContractV5R1 } from '@ton/ton'

const EARN_URL = (process.env.EARN_URL ?? 'http://127.0.0.1:3000').replace(/\/+$/, '')
const PUBLISHABLE_KEY = requireEnv('EARN_PUBLISHABLE_KEY')
const SECRET_KEY = requireEnv('EARN_SECRET_KEY')
const DISTRIBUTOR_ID = process.env.EARN_DISTRIBUTOR_ID || undefined
/** The app the user signs in to; the wallet binds its host into the proof, and Earn checks it. */
const APP_URL = 'https://app.example.com'

function requireEnv(name: string): string {
  const value = process.env[name]
  if (!value) {
    console.error(`${name} is not set; see the comment at the top of this file`)
    process.exit(1)
  }
  return value
}

// ---- The wallet's side (what a TON Connect wallet does when asked for ton_proof) ----------------

const sha256 = (...parts: Buffer[]) => parts.reduce((h, p) => h.update(p), createHash('sha256')).digest()

/**
 * The proof object TON Connect returns for `ton_proof`, plus the wallet's stateInit, as JSON in base64:
 * the `signature` field Earn expects for TON. The signed bytes follow the TON Connect spec; note the
 * mixed endianness (workchain big-endian, lengths and timestamp little-endian).
 */
function tonProof(p: { keyPair: KeyPair; address: Address; stateInit: StateInit; domain: string; payload: string }) {
  const timestamp = Math.floor(Date.now() / 1000)
  const domain = Buffer.from(p.domain, 'utf8')
  const workchain = Buffer.alloc(4)
  workchain.writeInt32BE(p.address.workChain)
  const domainLength = Buffer.alloc(4)
  domainLength.writeUInt32LE(domain.length)
  const time = Buffer.alloc(8)
  time.writeBigUInt64LE(BigInt(timestamp))
  const message = sha256(
    Buffer.from('ton-proof-item-v2/'),
    workchain,
    p.address.hash,
    domainLength,
    domain,
    time,
    Buffer.from(p.payload, 'utf8'),
  )
  const signature = sign(sha256(Buffer.from([0xff, 0xff]), Buffer.from('ton-connect'), message), p.keyPair.secretKey)
  const proof = {
    timestamp,
    domain: { lengthBytes: domain.length, value: p.domain },
    signature: signature.toString('base64'),
    payload: p.payload,
    stateInit: beginCell().store(storeStateInit(p.stateInit)).endCell().toBoc().toString('base64'),
  }
  return Buffer.from(JSON.stringify(proof)).toString('base64')
}

// ---- The integrator's backend talking to Earn --------------------------------------------------

async function call(method: 'GET' | 'POST', path: string, key: string, body?: unknown) {
  const response = await fetch(`${EARN_URL}${path}`, {
    method,
    headers: { 'X-API-Key': key, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await response.text()
  let json: unknown = text
  try {
    json = JSON.parse(text)
  } catch {
    // Not JSON: print it as it came.
  }
  console.log(`\n${method} ${path} -> ${response.status}`)
  console.log(typeof json === 'string' ? json : JSON.stringify(json, null, 2))
  return { status: response.status, body: json }
}

const keyPair = await mnemonicToPrivateKey(await mnemonicNew(24))
const wallet = WalletContractV5R1.create({ publicKey: keyPair.publicKey })
// TON Connect reports `account.address` in raw form; Earn also accepts the UQ…/EQ… forms.
const address = wallet.address.toRawString()
console.log(`wallet (W5, not deployed): ${address}  (${wallet.address.toString({ bounceable: false })})`)

await call('GET', `/v2/membership/?address=${encodeURIComponent(address)}&walletEcosystem=ton`, PUBLISHABLE_KEY)

const agreement = await call('POST', '/v2/membership/agreement', PUBLISHABLE_KEY, {
  address,
  walletEcosystem: 'ton',
  url: APP_URL,
})
const { nonce, message } = (agreement.body ?? {}) as { nonce?: string; message?: string }
if (agreement.status < 200 || agreement.status >= 300 || typeof nonce !== 'string' || typeof message !== 'string') {
  console.error('\nno agreement was issued; stopping')
  process.exit(1)
}

// The agreement's message is the ton_proof payload, verbatim.
const signature = tonProof({ keyPair, address: wallet.address, stateInit: wallet.init, domain: new URL(APP_URL).host, payload: message })

const created = await call('POST', '/v2/membership/', SECRET_KEY, {
  address,
  walletEcosystem: 'ton',
  signature,
  nonce,
  ...(DISTRIBUTOR_ID ? { distributorId: DISTRIBUTOR_ID } : {}),
})
process.exit(created.status >= 200 && created.status < 300 ? 0 : 1)
