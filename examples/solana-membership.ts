/**
 * Registers a Solana wallet as an Earn member, the way an integrator's backend drives the API:
 * check, request the agreement, sign its message, create the membership.
 *
 *   EARN_SECRET_KEY=sk_... EARN_PUBLISHABLE_KEY=pk_... bun examples/solana-membership.ts
 *
 * Env: EARN_URL (default http://127.0.0.1:3000), EARN_SECRET_KEY, EARN_PUBLISHABLE_KEY,
 * EARN_DISTRIBUTOR_ID (optional).
 *
 * A throwaway ed25519 key stands in for the user's wallet. In a real app the wallet signs: pass
 * the agreement `message` to `signMessage` (or `solana:signIn`) as UTF-8 bytes and send back the
 * 64-byte signature in base58. The private key never leaves the wallet or reaches the API.
 *
 * No dependencies: Bun's WebCrypto signs ed25519, and base58 is a few lines below.
 */

const baseUrl = (process.env.EARN_URL ?? 'http://127.0.0.1:3000').replace(/\/+$/, '')
const secretKey = required('EARN_SECRET_KEY')
const publishableKey = required('EARN_PUBLISHABLE_KEY')
const distributorId = process.env.EARN_DISTRIBUTOR_ID || undefined
const appUrl = 'https://app.example.com'

function required(name: string): string {
  const value = process.env[name]
  if (!value) {
    console.error(`${name} is not set; see the header of examples/solana-membership.ts`)
    process.exit(2)
  }
  return value
}

const BASE58_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'

/** Bitcoin-alphabet base58, the spelling of Solana addresses and signatures. */
function base58(bytes: Uint8Array): string {
  let n = bytes.reduce((acc, b) => (acc << 8n) | BigInt(b), 0n)
  let out = ''
  while (n > 0n) {
    out = BASE58_ALPHABET[Number(n % 58n)] + out
    n /= 58n
  }
  for (const b of bytes) {
    if (b !== 0) break
    out = `1${out}` // each leading zero byte is a leading '1'
  }
  return out
}

async function call(method: 'GET' | 'POST', path: string, apiKey: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { 'X-API-Key': apiKey, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  }).catch((e: unknown) => {
    throw new Error(`cannot reach the Earn API at ${baseUrl} (${e instanceof Error ? e.message : String(e)}); is it running?`)
  })
  const text = await res.text()
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    json = text
  }
  console.log(`${method} ${path} -> ${res.status}`)
  console.log(JSON.stringify(json, null, 2))
  if (!res.ok) throw new Error(`${method} ${path} failed with ${res.status}`)
  return json
}

async function main() {
  // The wallet: a Solana address is the base58 of the raw 32-byte ed25519 public key.
  const wallet = (await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify'])) as CryptoKeyPair
  const address = base58(new Uint8Array(await crypto.subtle.exportKey('raw', wallet.publicKey)))
  console.log(`wallet ${address}\n`)

  // 1. Check. Reads take the publishable key.
  await call('GET', `/v2/membership/?${new URLSearchParams({ address, walletEcosystem: 'solana' })}`, publishableKey)

  // 2. Agreement: a single-use nonce and the Sign-In-With-Solana text to sign. The publishable key
  // suffices, so a front end may make this call itself.
  const agreement = (await call('POST', '/v2/membership/agreement', publishableKey, {
    address,
    walletEcosystem: 'solana',
    url: appUrl,
  })) as { nonce: string; message: string }

  // 3. Sign the message exactly as received, as UTF-8 bytes.
  const signature = new Uint8Array(
    await crypto.subtle.sign({ name: 'Ed25519' }, wallet.privateKey, new TextEncoder().encode(agreement.message)),
  )

  // 4. Create. Writes take the secret key, so this call belongs on the integrator's backend.
  await call('POST', '/v2/membership/', secretKey, {
    address,
    walletEcosystem: 'solana',
    signature: base58(signature),
    nonce: agreement.nonce,
    ...(distributorId ? { distributorId } : {}),
  })
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e)
  process.exit(1)
})
