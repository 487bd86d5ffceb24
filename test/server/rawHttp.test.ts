/**
 * What a listening server answers to requests only a raw socket can send: no Host header (Bun then hands the app
 * a relative URL), a short Host such as a proxy's upstream name, a body past Bun's own size limit. `app.handle`
 * always has a whole URL and no transport limit, so these go through a real process.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expectEnvelope } from '../harness.ts'
import { startServer, withDemoBanner, type ServerProcess } from '../process.ts'

const dir = mkdtempSync(join(tmpdir(), 'earn-raw-'))
let server: ServerProcess
let key: string
let port: number

beforeAll(async () => {
  server = await startServer({ DATA_DIR: dir })
  port = Number(new URL(server.url).port)
  key = (await withDemoBanner(server)).match(/publishable key (pk_live_\w+)/)![1]!
})
afterAll(async () => {
  await server.stop()
  rmSync(dir, { recursive: true, force: true })
})

interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
}

/** Sends `head` (and `body`) as written and reads the answer until the server closes the connection. */
function raw(head: string, body: Uint8Array | string = ''): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(head.replaceAll('\n', '\r\n') + '\r\n')
      if (body.length) socket.write(body)
    })
    socket.on("data", (c: Buffer) => chunks.push(c))
    socket.on('error', reject)
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8')
      const [top = '', rest = ''] = text.split('\r\n\r\n', 2)
      const [statusLine = '', ...lines] = top.split('\r\n')
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest })
    })
  })
}

const json = (r: RawResponse) => JSON.parse(r.body.replace(/^[0-9a-f]+\r\n|\r\n0\r\n\r\n$/g, ''))

describe('Host', () => {
  test('an empty Host, or HTTP/1.0 without one, is a 400 envelope naming host, on known and unknown paths alike', async () => {
    const requests = [
      `GET /v2/opportunities/ HTTP/1.1\nHost:\nX-API-Key: ${key}\nConnection: close\n`,
      `GET /nope HTTP/1.1\nHost:\nConnection: close\n`,
      `GET /v2/opportunities/%zz HTTP/1.1\nHost:\nX-API-Key: ${key}\nConnection: close\n`,
      `GET /v2/membership/?address=0x000000000000000000000000000000000000dEaD HTTP/1.0\nX-API-Key: ${key}\n`,
    ]
    for (const request of requests) {
      const r = await raw(request)
      expect(r.status).toBe(400)
      expect(r.headers['content-type']).toMatch(/^application\/json/)
      const body = json(r)
      expectEnvelope(body, 400, 'INVALID_ARGUMENT')
      expect(body.context).toEqual({ host: 'missing' })
      expect(body.error).toContain('no Host header')
    }
  })

  test("the health probes answer without a Host (a load balancer's default HTTP/1.0 check sends none); other paths stay 400", async () => {
    // As answered with a Host (this server's chains may not all answer: its readiness is what it is).
    const answer = (r: RawResponse) => [r.status, json(r).status, Object.keys(json(r).checks).sort()]
    const withHost = answer(await raw('GET /readyz HTTP/1.1\nHost: localhost\nConnection: close\n'))
    expect(withHost[2]).toContain('store')
    expect(answer(await raw('GET /healthz HTTP/1.0\n'))).toEqual([200, 'ok', []])
    for (const request of ['GET /readyz HTTP/1.0\n', 'GET /readyz?full=1 HTTP/1.0\n', 'GET /readyz HTTP/1.1\nHost:\nConnection: close\n'])
      expect(answer(await raw(request)), request).toEqual(withHost)
    for (const path of ['/readyzz', '/healthz/x', '/v2/healthz']) expect((await raw(`GET ${path} HTTP/1.0\n`)).status, path).toBe(400)
  })

  test('an invalid Host, or more than one, is a 400 envelope saying which', async () => {
    // `é` as UTF-8: named as sent, not as Bun's Latin-1 reading of its bytes (Ã©).
    for (const host of ['a b', 'a@b', 'a/v2/opportunities', 'é']) {
      const r = await raw(`GET /v2/opportunities/ HTTP/1.1\nHost: ${host}\nX-API-Key: ${key}\nConnection: close\n`)
      const body = json(r)
      expectEnvelope(body, 400, 'INVALID_ARGUMENT')
      expect([body.context, body.error]).toEqual([{ host: 'invalid' }, expect.stringContaining(`Host header "${host}" is not a host`)])
      // Not charged, but the valid key is told its usage, as on every answer to it.
      expect(r.headers['x-ratelimit-limit'], host).toMatch(/^\d+$/)
      expect(r.headers['x-ratelimit-remaining'], host).toMatch(/^\d+$/)
    }
    const twice = await raw(`GET /v2/opportunities/ HTTP/1.1\nHost: 127.0.0.1\nHost: example.com\nX-API-Key: ${key}\nConnection: close\n`)
    expect([twice.status, json(twice).context]).toEqual([400, { host: 'repeated' }])
    expect(twice.headers['x-ratelimit-remaining']).toMatch(/^\d+$/)
    const missing = await raw(`GET /v2/opportunities/ HTTP/1.1\nHost:\nX-API-Key: ${key}\nConnection: close\n`)
    expect([missing.status, missing.headers['x-ratelimit-remaining']]).toEqual([400, expect.stringMatching(/^\d+$/)])
    // Each carries the key's usage, so none is for a shared cache (they had gone out before that header was set).
    for (const r of [twice, missing]) expect([r.headers['cache-control'], r.headers.vary]).toEqual(['no-store', 'X-API-Key'])
    // Nothing charged by any of them.
    const before = Number((await raw(`GET /nope HTTP/1.1\nHost: a b\nX-API-Key: ${key}\nConnection: close\n`)).headers['x-ratelimit-remaining'])
    const after = Number((await raw(`GET /nope HTTP/1.1\nHost: a b\nX-API-Key: ${key}\nConnection: close\n`)).headers['x-ratelimit-remaining'])
    expect(after).toBe(before)
    // An invalid key learns nothing.
    expect((await raw(`GET /v2/opportunities/ HTTP/1.1\nHost: a b\nX-API-Key: pk_live_nope\nConnection: close\n`)).headers['x-ratelimit-remaining']).toBeUndefined()
  })

  test('with CORS_ORIGINS a list, the Host check\'s 400 varies by Origin too, as every answer then does', async () => {
    const listedDir = mkdtempSync(join(tmpdir(), 'earn-raw-cors-'))
    const listed = await startServer({ DATA_DIR: listedDir, CORS_ORIGINS: 'https://a.example' })
    const own = port
    port = Number(new URL(listed.url).port)
    try {
      const r = await raw(`GET /v2/opportunities/ HTTP/1.1\nHost: a b\nOrigin: https://a.example\nConnection: close\n`)
      expect([r.status, r.headers['cache-control'], r.headers.vary]).toEqual([400, 'no-store', 'X-API-Key, Origin'])
    } finally {
      port = own
      await listed.stop()
      rmSync(listedDir, { recursive: true, force: true })
    }
  })

  test('a short Host (a proxy upstream named `api`, or one with the default port) reaches the trailing-slash routes', async () => {
    for (const host of ['api', 'a', 'api:80']) {
      const r = await raw(`GET /v2/opportunities/ HTTP/1.1\nHost: ${host}\nX-API-Key: ${key}\nConnection: close\n`)
      expect(r.status).toBe(200)
      expect(json(r)).toHaveProperty('opportunities')
      const member = await raw(`GET /v2/membership/?address=0x000000000000000000000000000000000000dEaD HTTP/1.1\nHost: ${host}\nX-API-Key: ${key}\nConnection: close\n`)
      expect([member.status, json(member)]).toEqual([200, { isMember: false }])
    }
    const unknown = await raw(`GET /v2/nope HTTP/1.1\nHost: api\nConnection: close\n`)
    expect([unknown.status, json(unknown).context]).toEqual([404, { path: '/v2/nope' }])
  })
})

describe('bodies past 64 KiB', () => {
  const post = (body: BodyInit, headers: Record<string, string> = {}) =>
    fetch(`${server.url}/v2/membership/agreement`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      // @ts-expect-error: Bun accepts the fetch spec's duplex option for streamed bodies
      duplex: 'half',
    })
  const big = 'a'.repeat(3 * 1024 * 1024)
  /** A body of unknown length: sent chunked, so only reading it shows its size. */
  const chunked = () =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        const piece = new TextEncoder().encode('a'.repeat(64 * 1024))
        for (let i = 0; i < 48; i++) controller.enqueue(piece)
        controller.close()
      },
    })

  test('are a 413 envelope with the metering headers, declared or chunked, where Bun alone answered an empty 413', async () => {
    for (const body of [big, chunked()]) {
      const r = await post(body, { 'x-api-key': key })
      expect(r.status).toBe(413)
      expect(r.headers.get('x-ratelimit-used')).toMatch(/^\d+$/)
      // The unread rest is dropped with the connection (else a graceful stop waits for it: see afterAll).
      expect(r.headers.get('connection')).toBe('close')
      const envelope = await r.json()
      expectEnvelope(envelope, 413, 'PAYLOAD_TOO_LARGE')
      expect(envelope.context).toEqual({ body: 'too large' })
    }
  })

  test('without a key they are 401, as any request without one', async () => {
    const r = await post(big)
    expect(r.status).toBe(401)
    expect(r.headers.get('connection')).toBe('close')
    expectEnvelope(await r.json(), 401, 'UNAUTHORIZED')
  })
})

describe('CORS on a listening server (Bun routes by method before the app sees a request)', () => {
  test('a browser preflight of a POST route and of a GET route is 204 with the allowed origin', async () => {
    for (const path of ['/v2/membership/agreement', '/v2/opportunities/']) {
      const r = await fetch(`${server.url}${path}`, {
        method: 'OPTIONS',
        headers: { origin: 'https://wallet.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-api-key' },
      })
      expect([r.status, r.headers.get('access-control-allow-origin'), r.headers.get('access-control-allow-headers')]).toEqual([
        204,
        '*',
        'content-type, x-api-key, x-request-id, idempotency-key',
      ])
    }
  })
})

describe('an empty body', () => {
  test('reads the same sent chunked as with Content-Length: 0: as no body, not as a JavaScript value', async () => {
    const answers = []
    for (const framing of ['Content-Length: 0', 'Transfer-Encoding: chunked']) {
      const r = await raw(
        `POST /v2/membership/agreement HTTP/1.1\nHost: a\nX-API-Key: ${key}\nContent-Type: application/json\n${framing}\nConnection: close\n`,
        framing.startsWith('Transfer') ? '0\r\n\r\n' : '',
      )
      const body = json(r)
      expectEnvelope(body, 400, 'INVALID_ARGUMENT')
      answers.push([r.status, body.context])
    }
    expect(answers[1]).toEqual(answers[0]!)
    expect(JSON.stringify(answers[0])).toContain('is required')
  })
})

describe('connections that send nothing', () => {
  /** When the server closes a connection that sent `head` and then nothing more, in ms from the last byte sent. */
  function closedAfter(head: string): Promise<number> {
    return new Promise((resolve, reject) => {
      let sent = 0
      const socket = connect(port, '127.0.0.1', () => {
        socket.write(head.replaceAll('\n', '\r\n'))
        sent = performance.now()
      })
      socket.on('data', () => {})
      socket.on('error', reject)
      socket.on('close', () => resolve(performance.now() - sent))
    })
  }

  test('an idle keep-alive connection, or a body stalled midway, is closed after about 10 s', async () => {
    const [idle, refused, limited, stalled] = await Promise.all([
      closedAfter('GET /healthz HTTP/1.1\nHost: x\n\n'),
      // Answered by the key check before any handler, and by the error handler.
      closedAfter('GET /v2/opportunities/ HTTP/1.1\nHost: x\n\n'),
      closedAfter(`GET /v2/opportunities/?limit=0 HTTP/1.1\nHost: x\nX-API-Key: ${key}\n\n`),
      closedAfter(`POST /v2/membership/agreement HTTP/1.1\nHost: x\nX-API-Key: ${key}\nContent-Type: application/json\nContent-Length: 100\n\n{"addr`),
    ])
    for (const ms of [idle, refused, limited, stalled]) {
      expect(ms).toBeGreaterThan(8_000)
      expect(ms).toBeLessThan(14_000)
    }
  }, 30_000)
})

describe('a request whose answer takes longer than the idle timeout', () => {
  test('is answered (a chain read taking 12 s): only a connection that sends nothing while not being answered is closed', async () => {
    // A stand-in EVM RPC that answers eth_getTransactionByHash after 12 s (with null: no such transaction), the rest at once.
    const rpc = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(req) {
        const body = (await req.json()) as { id: number; method: string } | { id: number; method: string }[]
        const calls = Array.isArray(body) ? body : [body]
        if (calls.some((c) => c.method === 'eth_getTransactionByHash' || c.method === 'eth_getTransactionReceipt')) await Bun.sleep(12_000)
        const answers = calls.map((c) => ({ jsonrpc: '2.0', id: c.id, result: c.method === 'eth_chainId' ? '0x7a69' : null }))
        return Response.json(Array.isArray(body) ? answers : answers[0])
      },
    })
    const slowDir = mkdtempSync(join(tmpdir(), 'earn-slow-'))
    const slow = await startServer({ DATA_DIR: slowDir, EVM_RPC_URLS: `31337=http://127.0.0.1:${rpc.port}`, EVM_RPC_TIMEOUT_MS: '15000' })
    try {
      const slowKey = (await withDemoBanner(slow)).match(/publishable key (pk_live_\w+)/)![1]!
      const started = performance.now()
      const r = await fetch(`${slow.url}/v2/actions/verify?chainId=31337&txHash=0x${'ab'.repeat(32)}`, { headers: { 'X-API-Key': slowKey } })
      expect(performance.now() - started).toBeGreaterThan(11_000)
      expect(r.status).toBe(404)
      expectEnvelope((await r.json()) as Record<string, unknown>, 404, 'NOT_FOUND')
    } finally {
      await slow.stop()
      await rpc.stop(true)
      rmSync(slowDir, { recursive: true, force: true })
    }
  }, 40_000)
})

describe('a body sent without a valid key', () => {
  test('is not read: the 401 comes before the body does, and the connection closes', async () => {
    // Ten bytes of a declared thousand: a server reading the body first would wait for the rest until its idle timeout.
    for (const keyHeader of ['', 'X-API-Key: sk_live_11111111111111111111\n']) {
      const r = await raw(`POST /v2/membership/agreement HTTP/1.1\nHost: 127.0.0.1\n${keyHeader}Content-Type: application/json\nContent-Length: 1000\n`, '{"address"')
      expect(r.status).toBe(401)
      expect(r.headers.connection).toBe('close')
      expectEnvelope(json(r), 401, 'UNAUTHORIZED')
    }
  })
})
