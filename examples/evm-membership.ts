/**
 * Registering an EVM wallet as a member, the way an integrator's backend does it against a running Earn API.
 *
 *   EARN_PUBLISHABLE_KEY=pk_live_... EARN_SECRET_KEY=sk_live_... bun examples/evm-membership.ts
 *
 * Optional: EARN_URL (default http://127.0.0.1:3000), EARN_DISTRIBUTOR_ID (credits the member to a distributor).
 *
 * The wallet is generated locally with viem and signs the agreement message with `personal_sign`, exactly as a
 * browser wallet would. In a real app the front end asks the user's wallet to sign; only the signature travels.
 */
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'

const baseUrl = (process.env.EARN_URL ?? 'http://127.0.0.1:3000').replace(/\/+$/, '')
const publishableKey = required('EARN_PUBLISHABLE_KEY', 'pk_live_')
const secretKey = required('EARN_SECRET_KEY', 'sk_live_')
const distributorId = process.env.EARN_DISTRIBUTOR_ID || undefined

function required(name: string, prefix: string): string {
  const value = process.env[name]
  if (!value) {
    console.error(`${name} is not set: give the ${prefix}... key the server printed for your organization.`)
    process.exit(2)
  }
  if (!value.startsWith(prefix)) console.warn(`warning: ${name} does not start with ${prefix}`)
  return value
}

interface Reply {
  status: number
  body: unknown
}

/** One API call; prints the request line and the response, never the key. */
async function call(method: 'GET' | 'POST', path: string, key: string, body?: unknown): Promise<Reply> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { 'X-API-Key': key, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // Not JSON (a proxy's error page, say): print it as text.
  }
  console.log(`\n${method} ${path} -> ${response.status}`)
  console.log(typeof parsed === 'string' ? parsed : JSON.stringify(parsed, null, 2))
  return { status: response.status, body: parsed }
}

function fail(step: string, reply: Reply, why = `HTTP ${reply.status}`): never {
  console.error(`\n${step} failed (${why}); see the response above.`)
  process.exit(1)
}

const account = privateKeyToAccount(generatePrivateKey())
const address = account.address
console.log(`Earn API: ${baseUrl}`)
console.log(`wallet:   ${address} (generated for this run)`)

const lookup = `/v2/membership/?${new URLSearchParams({ address, walletEcosystem: 'evm' })}`

// 1. Is the wallet a member already? A freshly generated one is not.
await call('GET', lookup, publishableKey)

// 2. Ask for the agreement: the server issues a nonce and the exact EIP-4361 text to sign.
const agreement = await call('POST', '/v2/membership/agreement', publishableKey, {
  address,
  walletEcosystem: 'evm',
  url: 'https://app.example.com',
  chainId: '1',
})
if (agreement.status !== 200) fail('agreement', agreement)
const { nonce, message } = agreement.body as { nonce: string; message: string }

// 3. The wallet signs the message verbatim (EIP-191 personal_sign). Changing a single byte voids the signature.
const signature = await account.signMessage({ message })
console.log(`\nsigned the agreement message (${message.split('\n').length} lines) with personal_sign`)

// 4. Register: secret key only, so this runs on the integrator's backend, never in a browser.
const created = await call('POST', '/v2/membership/', secretKey, {
  address,
  walletEcosystem: 'evm',
  signature,
  nonce,
  ...(distributorId ? { distributorId } : {}),
})
if (created.status < 200 || created.status > 299) fail('membership create', created)

// 5. The same lookup as step 1 now finds the member.
const after = await call('GET', lookup, publishableKey)
if (after.status !== 200) fail('membership lookup', after)
if ((after.body as { isMember?: boolean }).isMember !== true) fail('membership lookup', after, 'the wallet is still not a member')
console.log(`\n${address} is a member.`)
