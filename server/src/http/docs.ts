/**
 * `/openapi.json`, generated from the route schemas, and `/docs`, a page rendered here from that
 * document so it works offline (no script from a CDN). Neither needs a key.
 */
import { type AnyElysia, Elysia } from 'elysia'
import { IDEMPOTENCY_KEY_PATTERN } from '@earn/core'
import { ERROR_ENVELOPE } from './envelope.ts'

const escape = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!)

type Spec = { info: { title: string; version: string; description?: string }; paths: Record<string, Record<string, any>> }

function renderDocs(spec: Spec): string {
  const rows: string[] = []
  for (const [path, methods] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const cost = op['x-cost-units'] === undefined ? '' : `${op['x-cost-units']} units`
      const key = op['x-key-kind'] === 'secret' ? 'secret' : op['x-key-kind'] ? 'publishable' : 'none'
      rows.push(
        `<tr${op.deprecated ? ' class="dep"' : ''}><td><code>${method.toUpperCase()}</code></td><td><code>${escape(path)}</code></td>` +
          `<td>${escape(op.summary ?? '')}</td><td>${key}</td><td>${cost}</td></tr>`,
      )
    }
  }
  return `<!doctype html><html><head><meta charset="utf-8"><title>${escape(spec.info.title)}</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem}table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left}.dep{color:#999;text-decoration:line-through}code{font-size:13px}</style></head>
<body><h1>${escape(spec.info.title)} <small>${escape(spec.info.version)}</small></h1><p>${escape(spec.info.description ?? '')}</p>
<p>Send your key in the <code>X-API-Key</code> header. The machine-readable document is <a href="/openapi.json">/openapi.json</a>.</p>
<table><thead><tr><th>Method</th><th>Path</th><th>Summary</th><th>Key</th><th>Cost</th></tr></thead><tbody>${rows.join('')}</tbody></table></body></html>`
}

const DOCUMENTATION = {
  info: {
    title: 'Earn API',
    description:
      'Register wallets as members, discover yield opportunities, build deposit and withdrawal transactions. ' +
      'Every error is {code, status, error, context}. Every metered response carries X-RateLimit-* and X-Monthly-* headers.',
  },
  components: { securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } } },
}

/**
 * The generator names a body's media type only for Elysia's built-in parsers; ours is a function
 * (it hands malformed JSON to the guard), so every JSON body is described here. TypeBox schemas are
 * JSON Schema already.
 */
function describeJsonBodies(app: AnyElysia, paths: Record<string, Record<string, any>>) {
  for (const route of app.routes) {
    const body = (route.hooks as { body?: unknown } | undefined)?.body
    const operation = paths[route.path.replace(/:(\w+)/g, '{$1}')]?.[route.method.toLowerCase()]
    if (body && operation?.requestBody) operation.requestBody.content = { 'application/json': { schema: body } }
  }
}

type Hooks = { response?: unknown; params?: { properties?: Record<string, any> }; query?: { properties?: Record<string, any> } }
const isSchema = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && ('type' in value || 'anyOf' in value || '$ref' in value)

/**
 * Answers and parameters described by the routes' own schemas as well: the generator rewrites a nullable field, and a
 * union of literals, into a schema of its own without the description written on it (when `netDeposited` is null, what
 * each stream `state` means: an audit). TypeBox schemas are JSON Schema, as OpenAPI 3.1 takes them.
 */
function describeFromRouteSchemas(app: AnyElysia, paths: Record<string, Record<string, any>>) {
  for (const route of app.routes) {
    const hooks = route.hooks as Hooks | undefined
    const operation = paths[route.path.replace(/:(\w+)/g, '{$1}')]?.[route.method.toLowerCase()]
    if (!hooks || !operation) continue
    // One schema is the 200's; else one per status.
    const byStatus: Record<string, unknown> = isSchema(hooks.response) ? { 200: hooks.response } : ((hooks.response as Record<string, unknown> | undefined) ?? {})
    for (const [status, schema] of Object.entries(byStatus)) {
      const media = operation.responses?.[status]?.content?.['application/json']
      if (media && isSchema(schema)) media.schema = schema
    }
    for (const parameter of operation.parameters ?? []) {
      const schema = (parameter.in === 'path' ? hooks.params : parameter.in === 'query' ? hooks.query : undefined)?.properties?.[parameter.name]
      if (!isSchema(schema)) continue
      // A query value parsed from its string is shown as what it stands for (core's `QueryValue`).
      parameter.schema = isSchema(schema.documented) ? schema.documented : schema
      if (typeof schema.description === 'string') parameter.description ??= schema.description
    }
  }
}

/** Every error response's schema becomes a reference to one `ErrorEnvelope` component, instead of a copy each. */
function referToErrorEnvelope(paths: Record<string, Record<string, any>>): Record<string, unknown> {
  let envelope: Record<string, unknown> | undefined
  for (const operation of Object.values(paths).flatMap((methods) => Object.values(methods)))
    for (const response of Object.values<any>(operation.responses ?? {}))
      for (const media of Object.values<any>(response.content ?? {}))
        if (media.schema?.title === ERROR_ENVELOPE) {
          envelope ??= media.schema
          media.schema = { $ref: `#/components/schemas/${ERROR_ENVELOPE}` }
        }
  return envelope ? { [ERROR_ENVELOPE]: envelope } : {}
}

const header = (description: string, type: 'integer' | 'string' = 'integer') => ({ description, schema: { type } })

/** DECISIONS.md's metering headers: on every answer to a valid key, a 429 adding when to come back. */
const HEADERS = {
  'X-Request-Id': header("This request's id, which the logs carry: the X-Request-Id sent (its first 64 characters, keeping letters, digits, _ . and -), else a new UUID.", 'string'),
  'X-RateLimit-Limit': header('Hourly cost-unit budget of the key.'),
  'X-RateLimit-Remaining': header('Cost units remaining this hour.'),
  'X-RateLimit-Used': header('Cost units consumed this hour.'),
  'X-Monthly-Limit': header('Monthly cost-unit cap; sent only where a cap is set.'),
  'X-Monthly-Usage': header('Cost units consumed this month (UTC calendar month).'),
  'X-Monthly-Remaining': header('Cost units remaining this month; sent only where a cap is set.'),
  'Retry-After': header(
    'Seconds to wait before sending again: on a 429, until the exhausted window resets; on a 503 while the meter (Redis) cannot count, 1; on a 409 for an Idempotency-Key in use, 1 (its request under way answers within about a second as a rule).',
  ),
  'X-RateLimit-Reset': header('End of the exhausted window, in epoch seconds.'),
  'Idempotent-Replayed': header('`true` where this is the answer kept for the Idempotency-Key sent, given again: the request was not run a second time.', 'string'),
  'Cache-Control': header("`no-store`: the answer is the caller's (its key's organization and usage), for no cache to keep.", 'string'),
  'Vary': header('`X-API-Key` (and `Origin` where the deployment lists the origins CORS allows): answers differ by the key sent.', 'string'),
}
const METERED = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Used', 'X-Monthly-Limit', 'X-Monthly-Usage', 'X-Monthly-Remaining']
const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` })

/**
 * Every response names its headers: the request id and the cache headers (privateAnswers.ts) always, the metering headers on a metered operation's answers
 * (a 401 carries them when the key is valid but not the kind the route takes; a missing or unknown key has no usage
 * to report, so they stay optional), and a 429's reset time.
 */
function describeResponseHeaders(paths: Record<string, Record<string, any>>) {
  for (const operation of Object.values(paths).flatMap((methods) => Object.values(methods)))
    for (const [status, response] of Object.entries<any>(operation.responses ?? {})) {
      const metered = operation['x-cost-units'] !== undefined
      // A metered operation's 503 while the meter cannot count carries Retry-After too (METER_REDIS_OUTAGE=closed).
      const idempotent = operation['x-idempotent'] === true
      const names = [
        'X-Request-Id',
        'Cache-Control',
        'Vary',
        ...(metered ? METERED : []),
        ...(status === '429' ? ['Retry-After', 'X-RateLimit-Reset'] : []),
        ...((status === '503' && metered) || (status === '409' && idempotent) ? ['Retry-After'] : []),
        ...(status === '200' && idempotent ? ['Idempotent-Replayed'] : []),
      ]
      response.headers = { ...response.headers, ...Object.fromEntries(names.map((name) => [name, headerRef(name)])) }
    }
}

/** What an error status means on every metered operation, where the route says nothing more particular (its `error` says the rest). */
const ERROR_DESCRIPTIONS: Record<string, string> = {
  '401': 'The API key is missing, malformed, unknown or revoked, or publishable where this operation needs a secret key',
  '404': 'Not found: an unknown id, or a wallet that is not a member where one must be',
  '409': 'Conflicts with what exists already',
  '413': 'The body is over 64 KiB',
  '429': "The key's hourly or monthly cost-unit budget is spent (`context.budget`); nothing was charged",
  '500': 'A fault of this server, not of the request: the `error` carries a request id to report; retry with backoff',
  '503':
    'A dependency did not answer in time or is not configured: a chain (`context.chainId`, or the setting at fault, e.g. `SOLANA_RPC_URL`; an EVM capability answers within four EVM_RPC_TIMEOUT_MS) or the store (`context.database`: busy, unreachable, unwritable). Nothing was recorded; retry with backoff',
}

/** What each operation's success answers, in place of the generator's "Response for status 200". */
const SUCCESS_DESCRIPTIONS: Record<string, string> = {
  getHealthz: 'The process is up',
  getReadyz: 'The store, the meter and every configured chain answered (`degraded`: metering per process, Redis unreachable)',
  'membership.check': 'Whether the wallet is a member',
  'membership.create': 'The wallet is a member now',
  'membership.agreement': 'The message to sign, and the nonce to send back with its signature',
  'opportunities.list': 'A page of opportunities, with the pagination',
  'opportunities.get': 'The opportunity',
  'actions.deposit': 'The unsigned transactions to sign and send, in order, and the id the action is recorded under',
  'actions.withdraw': 'The unsigned transactions to sign and send, in order, and the id the action is recorded under',
  'actions.verify': 'Whether the transaction carries a valid attribution tag of this server, and what it attributes',
  'portfolio.v2': "The wallet's holdings and, per opportunity, its earnings",
  'portfolio.v1': "The wallet's holdings and, per opportunity, its earnings (as v2)",
  'activity.wallets': "A page of the wallets' actions, newest first",
  'activity.distributor': "A page of the distributor's actions and signups, newest first",
  'streams.create': 'The stream, created (a token stream pending until its funding is confirmed)',
  'streams.list': "A page of the organization's streams",
  'streams.get': 'The stream',
  'streams.confirm': 'The stream, active once its funding transfer is found',
  'streams.transition': 'The stream in its new state',
}

const IDEMPOTENCY_PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: IDEMPOTENCY_KEY_PATTERN },
  description:
    "A key of yours (1 to 255 visible ASCII characters but the comma, spaces inside allowed; a UUID say; the header once) making this request safe to send again: within 24 hours, the same key from any of the organization's API keys, " +
    'with the same path and body (the same values written the same way; fields in any order), gets the first success given again (header Idempotent-Replayed: true) rather than a second row; with another path or body, 400. ' +
    "Only a success is kept: after a refusal or a 503 the key may be sent again. While the first request is under way, 409 with Retry-After (the key is held at most 60 s; after that, a request with any body takes it over). A replay's transactions are the first answer's: not to be sent twice. Each request is metered.",
}
const IDEMPOTENCY_CONFLICT =
  'The Idempotency-Key sent belongs to a request still under way (Retry-After says when to send it again), or this request ran past 60 s and a retry with its key took over (nothing was recorded for this one)'

/** What `/healthz` and `/readyz` answer besides success (they are not metered). */
const PROBE_DESCRIPTIONS: Record<string, string> = {
  '400': "A Host header that names no one host (invalid, or sent twice); a probe with an empty one, or HTTP/1.0's without one, is answered (an HTTP/1.1 request with no Host line at all is Bun's own empty 400)",
  '503': 'Not ready: `checks` names what did not answer',
}

/**
 * What the generator cannot know: a GET's body is never read, so no 413; a metered operation's 400 also covers a query
 * parameter it does not take or one given twice (the guard); and every request may send its own X-Request-Id.
 */
function describeRequests(paths: Record<string, Record<string, any>>) {
  for (const methods of Object.values(paths))
    for (const [method, operation] of Object.entries<any>(methods)) {
      if (method === 'get') delete operation.responses?.['413']
      for (const [status, response] of Object.entries<any>(operation.responses ?? {})) {
        if (!response.description?.startsWith('Response for status')) continue
        const metered = operation['x-cost-units'] !== undefined
        if (status === '200' && Object.hasOwn(SUCCESS_DESCRIPTIONS, operation.operationId)) response.description = SUCCESS_DESCRIPTIONS[operation.operationId]
        else if (metered && Object.hasOwn(ERROR_DESCRIPTIONS, status)) response.description = ERROR_DESCRIPTIONS[status]
        else if (!metered && Object.hasOwn(PROBE_DESCRIPTIONS, status)) response.description = PROBE_DESCRIPTIONS[status]
      }
      const invalid = operation.responses?.['400']
      if (invalid && operation['x-cost-units'] !== undefined)
        invalid.description = 'A parameter or body field that does not parse, or a query parameter this operation does not take or that is given twice'
      if (operation['x-idempotent'] === true) {
        const conflict = operation.responses?.['409']
        if (conflict?.description?.startsWith('Response for status') || conflict?.description === ERROR_DESCRIPTIONS['409']) conflict.description = IDEMPOTENCY_CONFLICT
        operation.parameters = [...(operation.parameters ?? []), IDEMPOTENCY_PARAMETER]
      }
      operation.parameters = [
        ...(operation.parameters ?? []),
        { name: 'X-Request-Id', in: 'header', required: false, schema: { type: 'string' }, description: 'An id of your own for this request: echoed in the X-Request-Id response header and logged (its first 64 characters, keeping letters, digits, _ . and -)' },
      ]
    }
}

/**
 * The document generator's module. Imported on the first request for the document, or by `loadDocsGenerator` once the
 * server is up (main.ts, with the chain plugins): `bun run start` runs a bundle in which it is a chunk of its own, and
 * a process must hold every chunk it may need before a newer release's start prunes the bundle it came from.
 */
const generator = () => import('@elysiajs/openapi')
export const loadDocsGenerator = async (): Promise<void> => void (await generator())

/**
 * `/openapi.json` and `/docs` for the composed app. The generator is imported on the first request
 * (it is a fair share of the cold start otherwise) and its document kept: routes do not change after start.
 */
/** A promise kept once it succeeds; one that failed (a chunk that could not be read) is made again on the next call. */
function keptOnSuccess<T>(make: () => Promise<T>): () => Promise<T> {
  let kept: Promise<T> | undefined
  return () =>
    (kept ??= make().catch((e: unknown) => {
      kept = undefined
      throw e
    }))
}

/**
 * Elysia closes an object schema in place (`additionalProperties: false`) when a route first validates with it, then
 * drops the fields it does not name: a body field an operation does not take is ignored (README), and answers may gain
 * fields. Our schemas never close an object, so the document leaves them all open: it had said "closed" for whichever
 * operations had been called before it was made (an audit: the membership bodies).
 */
const leaveObjectsOpen = (key: string, value: unknown) => (key === 'additionalProperties' && value === false ? undefined : value)

export function apiDocs(version: string, app: () => AnyElysia) {
  const document = keptOnSuccess(() =>
    generator().then(({ toOpenAPISchema }) => {
      const { paths, components } = toOpenAPISchema(app() as never)
      describeJsonBodies(app(), paths as Record<string, Record<string, any>>)
      describeFromRouteSchemas(app(), paths as Record<string, Record<string, any>>)
      const shared = referToErrorEnvelope(paths as Record<string, Record<string, any>>)
      describeResponseHeaders(paths as Record<string, Record<string, any>>)
      describeRequests(paths as Record<string, Record<string, any>>)
      const spec = {
        openapi: '3.1.0',
        info: { ...DOCUMENTATION.info, version },
        paths,
        components: { ...DOCUMENTATION.components, schemas: { ...components.schemas, ...shared }, headers: HEADERS },
      }
      // A copy: the schemas in it are the routes' own, which Elysia validates with.
      return JSON.parse(JSON.stringify(spec), leaveObjectsOpen) as Spec
    }),
  )
  // Both answers are kept as text too: they need no key, and serializing ~150 KB on every request made a cheap way
  // to hold the one thread (hundreds of pipelined requests on a connection kept every other client waiting).
  const asJson = keptOnSuccess(() => document().then((d) => JSON.stringify(d)))
  const asHtml = keptOnSuccess(() => document().then(renderDocs))
  return new Elysia({ name: 'earn/docs' })
    .get('/openapi.json', async () => new Response(await asJson(), { headers: { 'content-type': 'application/json' } }), { detail: { hide: true } })
    .get('/docs', async () => new Response(await asHtml(), { headers: { 'content-type': 'text/html; charset=utf-8' } }), { detail: { hide: true } })
}
