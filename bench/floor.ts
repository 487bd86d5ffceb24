/**
 * The floor of the metered route, for bench/metering.ts: an Elysia app that does what every answer of ours
 * must (a request id from a hook, the query validated by its schema, the four usage headers, a JSON body)
 * and nothing else: no key check, no meter, no store. What separates it from hello-world is the HTTP work the
 * contract asks for; what separates our route from it is our own code.
 */
import { Elysia, t } from 'elysia'

const app = new Elysia()
  .onRequest(({ set }) => {
    set.headers['x-request-id'] = crypto.randomUUID()
  })
  .get(
    '/v2/membership/',
    ({ set }) => {
      Object.assign(set.headers, { 'x-ratelimit-limit': '1000000000', 'x-ratelimit-remaining': '999999999', 'x-ratelimit-used': '1', 'x-monthly-usage': '1' })
      return { isMember: false }
    },
    { query: t.Object({ address: t.String(), walletEcosystem: t.Optional(t.String()) }), response: t.Object({ isMember: t.Boolean() }) },
  )
app.listen({ port: Number(process.env.PORT ?? 0), hostname: '127.0.0.1' })
console.log(JSON.stringify({ msg: 'listening', url: `http://127.0.0.1:${app.server!.port}` }))
