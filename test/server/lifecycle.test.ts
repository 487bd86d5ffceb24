/** The server process: first start on an empty embedded store, later starts, SIGTERM. */
import { afterAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { outputMatching, runCli, startServer, withDemoBanner } from '../process.ts'
import { cuttableProxy } from '../proxy.ts'
import { DATABASE_URL, freshSchema, REDIS_URL, redisAvailable } from '../services.ts'

const dir = mkdtempSync(join(tmpdir(), 'earn-life-'))
/** The demo organization's publishable key, as the first start in `dir` prints it. */
let demoKey: string
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('server process', () => {
  test('a first start that cannot listen (the port is taken) creates no demo; the next start shows its keys', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'earn-life-taken-'))
    const taken = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('busy') })
    try {
      const proc = Bun.spawn([process.execPath, join(import.meta.dir, '../../server/src/main.ts')], {
        env: { ...process.env, DATA_DIR: fresh, PORT: String(taken.port), HOST: '127.0.0.1', LOG_REQUESTS: '0' },
        stdout: 'pipe',
        stderr: 'pipe',
      })
      const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
      expect(code, stdout + stderr).not.toBe(0)
      expect(stdout).not.toContain('_live_')
      const next = await startServer({ DATA_DIR: fresh })
      expect(await withDemoBanner(next)).toMatch(/secret key +sk_live_\w+/)
      expect(await next.stop()).toBe(0)
    } finally {
      await taken.stop(true)
      rmSync(fresh, { recursive: true, force: true })
    }
  })

  test('first start prints demo keys and a curl line that works; later starts print no keys', async () => {
    const first = await startServer({ DATA_DIR: dir })
    const out = await withDemoBanner(first)
    const key = out.match(/publishable key (pk_live_\w+)/)?.[1]
    expect(key).toBeDefined()
    demoKey = key!
    expect(out).toMatch(/secret key +sk_live_\w+/)
    expect(out).toMatch(/distributor id +[0-9a-f-]{36}/)
    const curl = out.match(/curl -s -H 'X-API-Key: (\S+)' '(\S+)'/)
    expect(curl?.[1]).toBe(key)
    const r = await fetch(curl![2]!, { headers: { 'x-api-key': curl![1]! } })
    expect(r.status).toBe(200)
    expect(await r.json()).toEqual({ isMember: false })
    // A listening server decodes a bad escape leniently where app.handle does not: both answer 400 saying why.
    const bad = await fetch(`${first.url}/v2/opportunities/%zz`, { headers: { 'x-api-key': key! } })
    expect([bad.status, await bad.json()]).toEqual([400, { code: 400, status: 'INVALID_ARGUMENT', error: 'path segment %zz is not valid percent-encoding', context: { opportunityId: 'is not valid percent-encoding' } }])
    expect(await first.stop()).toBe(0)

    const second = await startServer({ DATA_DIR: dir })
    // The demo would be made once the plugins have loaded.
    expect(await outputMatching(second, /ecosystems loaded/, 20_000)).toContain('ecosystems loaded')
    expect(second.output()).not.toContain('_live_')
    expect(await second.stop()).toBe(0)
  })

  test('SIGTERM lets a request in flight finish, logged as any other, then exits 0', async () => {
    const server = await startServer({ DATA_DIR: dir, LOG_REQUESTS: '1' })
    // Once ready, nothing (such as plugins still loading) holds the event loop when the request arrives.
    while ((await fetch(`${server.url}/readyz`)).status !== 200) await Bun.sleep(50)
    // A body sent in two parts keeps the request in flight across the signal.
    let send!: (s: string) => void
    let finish!: () => void
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        const enc = new TextEncoder()
        send = (s) => controller.enqueue(enc.encode(s))
        finish = () => controller.close()
      },
    })
    const response = fetch(`${server.url}/v2/membership/agreement`, {
      method: 'POST',
      // A valid key: a body without one is not read at all (the 401 comes at once).
      headers: { 'content-type': 'application/json', 'x-api-key': demoKey },
      body,
      // @ts-expect-error: Bun accepts the fetch spec's duplex option for streamed bodies
      duplex: 'half',
    })
    send('{"address":"0x000000000000000000000000000000000000dEaD",')
    await Bun.sleep(300)
    const exited = server.stop('SIGTERM')
    await Bun.sleep(300)
    send('"walletEcosystem":"evm","url":"https://app.example.com"}')
    finish()
    const r = await response
    expect(r.status).toBe(200)
    expect((await r.json()).message).toContain('0x000000000000000000000000000000000000dEaD')
    expect(await exited).toBe(0)
    // Its log line is written after its answer: the exit had come first.
    expect(server.output()).toContain(`"requestId":"${r.headers.get('x-request-id')}","method":"POST","route":"/v2/membership/agreement","status":200`)
    expect(server.output()).toContain('"msg":"stopped","drained":true')
    expect(await fetch(`${server.url}/healthz`).then(() => 'answered', () => 'refused')).toBe('refused')
  })

  test('SHUTDOWN_DELAY_SECONDS: after SIGTERM, readiness fails at once while new connections are still answered, until the delay ends', async () => {
    const server = await startServer({ DATA_DIR: dir, SHUTDOWN_DELAY_SECONDS: '2' })
    while ((await fetch(`${server.url}/readyz`)).status !== 200) await Bun.sleep(50)
    const exited = server.stop('SIGTERM')
    await Bun.sleep(300)
    // A new connection each (what a balancer not yet told sends), past the 100 ms quiet time a stop otherwise waits.
    for (let i = 0; i < 5; i++) {
      const headers = { connection: 'close' }
      expect((await fetch(`${server.url}/readyz`, { headers })).status).toBe(503)
      expect((await fetch(`${server.url}/healthz`, { headers })).status).toBe(200)
      await Bun.sleep(200)
    }
    expect(await exited).toBe(0)
    expect(await fetch(`${server.url}/healthz`).then(() => 'answered', () => 'refused')).toBe('refused')
  })

  test('a stop whose last usage write the store refuses all through its grace (a full disk) says what was lost, and exits 1', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'earn-life-full-'))
    try {
      const server = await startServer({ DATA_DIR: fresh, SHUTDOWN_GRACE_SECONDS: '1' })
      const key = (await withDemoBanner(server)).match(/publishable key (pk_live_\w+)/)![1]!
      // The store stops taking usage (as a full disk would refuse it): a trigger, through a connection of the test's own.
      const db = new Database(join(fresh, 'earn.sqlite'))
      db.exec("create trigger full_insert before insert on key_usage begin select raise(abort, 'database or disk is full'); end")
      db.exec("create trigger full_update before update on key_usage begin select raise(abort, 'database or disk is full'); end")
      db.close()
      // Reads go on being served and charged, the usage held in memory (periodic writes fail too).
      for (let i = 0; i < 3; i++) expect((await fetch(`${server.url}/v2/opportunities/`, { headers: { 'x-api-key': key } })).status).toBe(200)
      expect(await server.stop('SIGTERM')).toBe(1)
      expect(server.output()).toContain('"msg":"meter: usage the store did not take is lost","keys":1,"units":6')
      expect(server.output()).toMatch(/"msg":"stopped".*"usage":"lost"/)
    } finally {
      rmSync(fresh, { recursive: true, force: true })
    }
  })

  test('requests already sent on keep-alive connections when SIGTERM arrives are answered before the connections close', async () => {
    const server = await startServer({ DATA_DIR: dir })
    while ((await fetch(`${server.url}/readyz`)).status !== 200) await Bun.sleep(50)
    const { port } = new URL(server.url)
    const request = `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`
    // Each connection answered once (so the server holds it, idle, kept alive), then sent a second request the
    // instant before the signal.
    const connections = await Promise.all(
      Array.from({ length: 32 }, async () => {
        let received = ''
        let closed!: () => void
        const ended = new Promise<void>((resolve) => (closed = resolve))
        const socket = await Bun.connect({
          hostname: '127.0.0.1',
          port: Number(port),
          socket: { data: (_, chunk) => void (received += chunk.toString()), close: () => closed(), error: () => closed() },
        })
        socket.write(request)
        while (!received.includes('"status":"ok"')) await Bun.sleep(5)
        return { socket, ended, received: () => received }
      }),
    )
    for (const c of connections) c.socket.write(request)
    const exited = server.stop('SIGTERM')
    await Promise.all(connections.map((c) => c.ended))
    const answers = connections.map((c) => c.received().split('HTTP/1.1 200').length - 1)
    expect(answers).toEqual(connections.map(() => 2))
    expect(await exited).toBe(0)
  })

  test('a grace period of 0 still writes the usage: a restart counts on from it', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'earn-life-grace0-'))
    try {
      const first = await startServer({ DATA_DIR: fresh, SHUTDOWN_GRACE_SECONDS: '0' })
      const key = (await withDemoBanner(first)).match(/publishable key (pk_live_\w+)/)![1]!
      const check = (url: string) => fetch(`${url}/v2/membership/?address=0x000000000000000000000000000000000000dEaD`, { headers: { 'x-api-key': key } })
      for (let i = 0; i < 5; i++) expect((await check(first.url)).status).toBe(200)
      expect(await first.stop('SIGTERM')).toBe(0)
      // Nothing was under way: the refresh and the watch, stopped at once, are not said abandoned either.
      expect(first.output()).toMatch(/"msg":"stopped","drained":true}/)
      const second = await startServer({ DATA_DIR: fresh })
      expect((await check(second.url)).headers.get('x-monthly-usage')).toBe('6')
      expect(await second.stop()).toBe(0)
    } finally {
      rmSync(fresh, { recursive: true, force: true })
    }
  })

  test('the same stop delivered twice (a group signal, passed on by `bun run` too) stops gracefully; a later second signal stops at once', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'earn-life-twice-'))
    try {
      const first = await startServer({ DATA_DIR: fresh })
      const key = (await withDemoBanner(first)).match(/publishable key (pk_live_\w+)/)![1]!
      const check = (url: string) => fetch(`${url}/v2/membership/?address=0x000000000000000000000000000000000000dEaD`, { headers: { 'x-api-key': key } })
      for (let i = 0; i < 3; i++) expect((await check(first.url)).status).toBe(200)
      process.kill(first.pid, 'SIGINT')
      expect(await first.stop('SIGINT')).toBe(0)
      expect(first.output()).not.toContain('stopping now')
      // The usage was written: a restart counts on from it.
      const second = await startServer({ DATA_DIR: fresh })
      expect((await check(second.url)).headers.get('x-monthly-usage')).toBe('4')
      // A request whose body never ends keeps the stop waiting; a signal well after the first is the operator insisting.
      const body = new ReadableStream<Uint8Array>({ start: (c) => c.enqueue(new TextEncoder().encode('{"address":')) })
      // @ts-expect-error: Bun accepts the fetch spec's duplex option for streamed bodies
      const held = fetch(`${second.url}/v2/membership/agreement`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body, duplex: 'half' }).catch(() => 'cut')
      await Bun.sleep(200)
      process.kill(second.pid, 'SIGTERM')
      await Bun.sleep(1_200)
      expect(await second.stop('SIGTERM')).toBe(1)
      expect(second.output()).toContain('"msg":"stopping now"')
      expect(await held).toBe('cut')
    } finally {
      rmSync(fresh, { recursive: true, force: true })
    }
  })

  test('SIGTERM right as the server listens stops it gracefully, not by the default signal handling', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'earn-life-early-'))
    try {
      const server = await startServer({ DATA_DIR: fresh })
      const code = await server.stop('SIGTERM')
      expect([code, server.output()]).toEqual([0, expect.stringContaining('"msg":"stopped"')])
    } finally {
      rmSync(fresh, { recursive: true, force: true })
    }
  })

  test('a database that stops answering does not hold the stop past its grace period (the usage it did not take is reported lost)', async () => {
    const { schema, drop } = await freshSchema()
    const proxy = cuttableProxy(Number(new URL(DATABASE_URL).port || 5432))
    const url = new URL(DATABASE_URL)
    url.host = `127.0.0.1:${proxy.port}`
    url.searchParams.set('search_path', schema)
    try {
      const server = await startServer({ DATABASE_URL: url.toString(), SHUTDOWN_GRACE_SECONDS: '1' })
      const org = (await runCli(['org', 'create', '--name', 'Grace', '--json'], { DATABASE_URL: url.toString() })).json() as { publishableKey: string }
      // Usage the stop would write to the store, which no longer answers.
      const checked = await fetch(`${server.url}/v2/membership/?address=0x000000000000000000000000000000000000dEaD`, { headers: { 'x-api-key': org.publishableKey } })
      expect(checked.status).toBe(200)
      proxy.cut()
      const started = performance.now()
      // The usage it could not write is lost: said, and the exit is a failure.
      expect(await server.stop('SIGTERM')).toBe(1)
      expect(performance.now() - started).toBeLessThan(5_000)
      expect(server.output()).toContain('"close":"abandoned"')
      expect(server.output()).toContain('"msg":"meter: usage the store did not take is lost","keys":1,"units":1')
    } finally {
      proxy.stop()
      await drop()
    }
  })

  test("a standard output whose reader went away (a closed pipe) loses log lines, not the server; the demo's keys go to standard error", async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'earn-life-pipe-'))
    const proc = Bun.spawn([process.execPath, join(import.meta.dir, '../../server/src/main.ts')], {
      env: { ...process.env, DATA_DIR: fresh, PORT: '0', HOST: '127.0.0.1', LOG_REQUESTS: '1' },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    try {
      const reader = proc.stdout.getReader()
      const { value } = await reader.read()
      const url = JSON.parse(new TextDecoder().decode(value).split('\n')[0]!).url as string
      await reader.cancel()
      // The plugins' load logs a line a second after listening (where the process died of EPIPE), each request one more.
      await Bun.sleep(1500)
      for (let i = 0; i < 3; i++) expect((await fetch(`${url}/healthz`)).status).toBe(200)
      expect(proc.exitCode).toBeNull()
      proc.kill('SIGTERM')
      expect(await proc.exited).toBe(0)
      const stderr = await new Response(proc.stderr).text()
      expect(stderr).toStartWith('standard output refused a write (EPIPE); log lines are lost while it has no reader\n')
      // The first start's demo keys, shown nowhere else, on standard error instead.
      expect(stderr).toMatch(/secret key +sk_live_\w+/)
    } finally {
      proc.kill('SIGKILL')
      rmSync(fresh, { recursive: true, force: true })
    }
  })

  test('an embedded store on a read-only mount stops the start with one line, where it started ready and failed every write', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'earn-life-ro-'))
    try {
      const first = await startServer({ DATA_DIR: fresh })
      while ((await fetch(`${first.url}/readyz`)).status !== 200) await Bun.sleep(50)
      expect(await first.stop()).toBe(0)
      // The directory mounted read-only in a mount namespace of the server's own (as root, file modes do not stop a write).
      const main = join(import.meta.dir, '../../server/src/main.ts')
      const proc = Bun.spawn(['unshare', '-m', 'sh', '-c', `mount --bind "$DATA_DIR" "$DATA_DIR" && mount -o remount,ro,bind "$DATA_DIR" && exec "${process.execPath}" "${main}"`], {
        env: { ...process.env, DATA_DIR: fresh, PORT: '0', HOST: '127.0.0.1', LOG_REQUESTS: '0' },
        stdout: 'pipe',
        stderr: 'pipe',
      })
      const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
      expect(stdout).not.toContain('listening')
      expect([code, stderr.trim()]).toEqual([1, `startup error: opening the embedded store in ${fresh} (DATA_DIR): the embedded store's file ${join(fresh, 'earn.sqlite')} takes no writes (EROFS)`])

      // The file a symbolic link to a writable one elsewhere: SQLite writes there (its WAL beside it), so the start goes on.
      const linked = mkdtempSync(join(tmpdir(), 'earn-life-ro-link-'))
      symlinkSync(join(fresh, 'earn.sqlite'), join(linked, 'earn.sqlite'))
      const started = Bun.spawn(['unshare', '-m', 'sh', '-c', `mount --bind "$DATA_DIR" "$DATA_DIR" && mount -o remount,ro,bind "$DATA_DIR" && exec "${process.execPath}" "${main}"`], {
        env: { ...process.env, DATA_DIR: linked, PORT: '0', HOST: '127.0.0.1', LOG_REQUESTS: '0' },
        stdout: 'pipe',
        stderr: 'pipe',
      })
      try {
        const { value } = await started.stdout.getReader().read()
        expect(new TextDecoder().decode(value)).toContain('"msg":"listening"')
      } finally {
        started.kill('SIGKILL')
        await started.exited
        rmSync(linked, { recursive: true, force: true })
      }
    } finally {
      rmSync(fresh, { recursive: true, force: true })
    }
  })

  test('log lines reach a reader that comes back (a log shipper reopening the FIFO it reads)', async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'earn-life-fifo-'))
    const fifo = join(fresh, 'log.fifo')
    expect(Bun.spawnSync(['mkfifo', fifo]).exitCode).toBe(0)
    const reader = () => Bun.spawn(['cat', fifo], { stdout: 'pipe' })
    const first = reader()
    const main = join(import.meta.dir, '../../server/src/main.ts')
    const server = Bun.spawn(['sh', '-c', `exec "${process.execPath}" "${main}" > "${fifo}"`], {
      env: { ...process.env, DATA_DIR: fresh, PORT: '0', HOST: '127.0.0.1', LOG_REQUESTS: '1' },
      stderr: 'pipe',
    })
    try {
      const { value } = await first.stdout.getReader().read()
      const url = JSON.parse(new TextDecoder().decode(value).split('\n')[0]!).url as string
      first.kill()
      await first.exited
      // Written while no one reads: refused (EPIPE), the server serving on.
      for (let i = 0; i < 3; i++) expect((await fetch(`${url}/healthz`)).status).toBe(200)
      const second = reader()
      // Until the reader has opened the FIFO, a write still finds none.
      let seen = ''
      const pump = (async () => {
        const r = second.stdout.getReader()
        for (let chunk = await r.read(); !chunk.done; chunk = await r.read()) seen += new TextDecoder().decode(chunk.value)
      })()
      for (let i = 0; i < 50 && !seen.includes('"route":"/healthz"'); i++) {
        await fetch(`${url}/healthz`)
        await Bun.sleep(100)
      }
      expect(seen).toContain('"route":"/healthz"')
      // Gone again: told again.
      second.kill()
      await pump.catch(() => {})
      for (let i = 0; i < 5; i++) expect((await fetch(`${url}/healthz`)).status).toBe(200)
      await Bun.sleep(200)
      const third = reader()
      for (let i = 0; i < 3; i++) await fetch(`${url}/healthz`)
      server.kill('SIGTERM')
      await server.exited
      third.kill()
      const notes = (await new Response(server.stderr).text()).split('\n').filter((l) => l.startsWith('standard output refused a write (EPIPE)'))
      expect(notes).toHaveLength(2)
    } finally {
      server.kill('SIGKILL')
      first.kill()
      rmSync(fresh, { recursive: true, force: true })
    }
  })

  test('a bad configuration value stops the start with one line naming the variable', async () => {
    await expect(startServer({ DATA_DIR: dir, NONCE_TTL_SECONDS: 'soon' }, 5000)).rejects.toThrow(/NONCE_TTL_SECONDS/)
  })

  test('a start that cannot open its store or listen stops with one line naming the step and the cause, no stack', async () => {
    const taken = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('busy') })
    try {
      const failures: [Record<string, string>, RegExp][] = [
        [{ DATA_DIR: '/etc/hostname/earn' }, /^startup error: opening the embedded store in \/etc\/hostname\/earn \(DATA_DIR\): ENOTDIR: not a directory.*$/m],
        [{ DATA_DIR: dir, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test' }, /^startup error: opening the database \(DATABASE_URL\): .*ECONNREFUSED.*$/m],
        [{ DATA_DIR: dir, PORT: String(taken.port) }, new RegExp(`^startup error: listening on 127\\.0\\.0\\.1:${taken.port} \\(HOST, PORT\\): .*$`, 'm')],
        // `.invalid` never resolves (RFC 6761); Bun's own words were a file not found.
        [{ DATA_DIR: dir, HOST: 'nonexistent.invalid' }, /^startup error: listening on nonexistent\.invalid:\d+ \(HOST, PORT\): the host name nonexistent\.invalid resolves to no address here; give one of this machine's names or an IP address$/m],
      ]
      for (const [env, line] of failures) {
        const error = await startServer(env, 10_000).then(() => undefined, (e: Error) => e.message)
        expect(error).toMatch(line)
        expect(error).toContain('exited with 1')
        expect(error).not.toMatch(/^\s+at /m)
      }
    } finally {
      await taken.stop(true)
    }
  })

  test('a Redis that refuses the connection as the server starts (a database number it lacks, a wrong password) stops the start naming REDIS_URL: no metering alone for good', async () => {
    if (!(await redisAvailable())) return
    for (const [change, refusal] of [
      [(u: URL) => (u.pathname = '/99'), 'ERR DB index is out of range'],
      [(u: URL) => ((u.username = 'nobody'), (u.password = 'wrong')), 'WRONGPASS invalid username-password pair or user is disabled'],
    ] as const) {
      const url = new URL(REDIS_URL)
      change(url)
      const error = await startServer({ DATA_DIR: dir, REDIS_URL: url.href }, 10_000).then(
        async (server) => {
          await server.stop('SIGTERM')
          return 'started'
        },
        (e: Error) => e.message,
      )
      expect(error).toMatch(new RegExp(`^startup error: connecting to Redis \\(REDIS_URL\\): redis refused the connection: ${refusal}; check the user, password and database number in REDIS_URL$`, 'm'))
      expect(error).toContain('exited with 1')
      expect(error).not.toContain('wrong')
    }
  })

  test('a Redis refusing for load as the server starts (at its connection limit) is an outage, not a misconfiguration: the server starts, not ready, refusing metered requests; with METER_REDIS_OUTAGE=open, metering per process', async () => {
    // What a Redis at maxclients answers every new connection, as a server of our own answers it to everything.
    const full = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data: (socket) => void socket.write('-ERR max number of clients reached\r\n') } })
    try {
      const closed = await startServer({ DATA_DIR: dir, REDIS_URL: `redis://127.0.0.1:${full.port}` }, 15_000)
      try {
        const ready = await fetch(`${closed.url}/readyz`)
        expect(ready.status).toBe(503)
        expect(((await ready.json()) as { checks: Record<string, string> }).checks.meter).toMatch(/^unavailable: redis unreachable .*metered requests are refused until it is back$/)
        const metered = await fetch(`${closed.url}/v2/membership/?address=0x000000000000000000000000000000000000dEaD`, { headers: { 'x-api-key': demoKey } })
        expect([metered.status, ((await metered.json()) as { context: unknown }).context]).toEqual([503, { meter: 'unavailable' }])
      } finally {
        expect(await closed.stop('SIGTERM')).toBe(0)
      }
      const server = await startServer({ DATA_DIR: dir, REDIS_URL: `redis://127.0.0.1:${full.port}`, METER_REDIS_OUTAGE: 'open' }, 15_000)
      try {
        // Ready once the plugins are in (a second after start).
        let ready = await fetch(`${server.url}/readyz`)
        for (let i = 0; i < 100 && ready.status !== 200; i++) {
          await Bun.sleep(100)
          ready = await fetch(`${server.url}/readyz`)
        }
        expect(ready.status).toBe(200)
        expect(((await ready.json()) as { checks: Record<string, string> }).checks.meter).toStartWith('degraded: ')
      } finally {
        expect(await server.stop('SIGTERM')).toBe(0)
      }
    } finally {
      full.stop(true)
    }
  })

  test('a second server on a port an Earn server holds stops at start, rather than share the port and half its requests', async () => {
    const first = await startServer({ DATA_DIR: dir })
    const otherDir = mkdtempSync(join(tmpdir(), 'earn-second-'))
    try {
      const port = new URL(first.url).port
      const error = await startServer({ DATA_DIR: otherDir, PORT: port }, 10_000).then(
        async (second) => {
          await second.stop('SIGTERM')
          return undefined
        },
        (e: Error) => e.message,
      )
      expect(error).toMatch(new RegExp(`^startup error: listening on 127\\.0\\.0\\.1:${port} \\(HOST, PORT\\): .*$`, 'm'))
    } finally {
      await first.stop('SIGTERM')
      rmSync(otherDir, { recursive: true, force: true })
    }
  })

  test('a stream treasury its chain\'s ecosystem does not take stops the server once the plugins load, naming the variable', async () => {
    const server = await startServer({ DATA_DIR: dir, ECOSYSTEMS: 'evm', EVM_RPC_URLS: '8453=http://127.0.0.1:9', STREAM_TREASURIES: '8453=garbage,localnet=nobody' })
    const deadline = Date.now() + 15_000
    while (!server.output().includes('configuration error') && Date.now() < deadline) await Bun.sleep(50)
    // Chain localnet is Solana's, which this deployment does not load: left alone.
    // With the plugin's reason, as an API address error gives it.
    expect(server.output()).toMatch(/configuration error: STREAM_TREASURIES: the treasury for chain 8453 is not a valid evm address \(.*0x.*\)/)
    expect(await server.stop()).toBe(1)
  })

  test("a chain plugin's bad variable stops the server when the plugin loads, naming the variable; a first start makes no demo then", async () => {
    const fresh = mkdtempSync(join(tmpdir(), 'earn-life-plugin-'))
    try {
      // A shutdown delay is for a balancer to stop sending; a server stopped by its configuration was never ready.
      const server = await startServer({ DATA_DIR: fresh, EVM_LOGS_BLOCK_RANGE: 'many', SHUTDOWN_DELAY_SECONDS: '60' })
      const deadline = Date.now() + 15_000
      while (!server.output().includes('configuration error') && Date.now() < deadline) await Bun.sleep(50)
      expect(server.output()).toMatch(/configuration error: evm plugin: EVM_LOGS_BLOCK_RANGE must be a whole number/)
      const alive = () => {
        try {
          process.kill(server.pid, 0)
          return true
        } catch {
          return false
        }
      }
      for (let i = 0; i < 200 && alive(); i++) await Bun.sleep(50)
      expect(alive()).toBe(false)
      expect(await server.stop()).toBe(1)
      // Its keys were never shown, so none was made: the fixed start shows them.
      expect(server.output()).not.toContain('_live_')
      const fixed = await startServer({ DATA_DIR: fresh })
      expect(await withDemoBanner(fixed)).toMatch(/secret key +sk_live_\w+/)
      expect(await fixed.stop()).toBe(0)
    } finally {
      rmSync(fresh, { recursive: true, force: true })
    }
  })
})
