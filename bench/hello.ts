// The same-run baseline for every bench: a hello-world Elysia server.
import { Elysia } from 'elysia'

const app = new Elysia().get('/', () => 'hello').get('/healthz', () => ({ status: 'ok' }))
app.listen({ port: Number(process.env.PORT ?? 0), hostname: '127.0.0.1' })
console.log(JSON.stringify({ msg: 'listening', url: `http://127.0.0.1:${app.server!.port}` }))
