/**
 * Store failures that are the database's state, not the request's or the code's: a statement past its timeout,
 * a lock not granted in time, a connection refused or lost, SQLite's write lock held past its busy timeout. The
 * request is fine and may be sent again, so the API answers 503 (with its retry advice), not 500.
 */

// SQLSTATE: 57014 statement timeout or cancel; 55P03 lock not available; 53300 too many connections; 25P03 idle in
// transaction timeout; classes 08 (connection exception) and 57P (shutdown, cannot connect now).
const POSTGRES_STATES = /^(57014|55P03|53300|25P03|08...|57P0.)$/
// postgres.js's own codes for a connection it lost or could not open, and the socket's.
const CONNECTION_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN'])

/** Why the store could not serve now (`busy` or `unreachable`), or undefined for any other failure. */
export function storeUnavailable(error: unknown): 'busy' | 'unreachable' | undefined {
  const { name, code } = (error ?? {}) as { name?: unknown; code?: unknown }
  if (typeof code !== 'string') return undefined
  if (name === 'SQLiteError') return code.startsWith('SQLITE_BUSY') ? 'busy' : undefined
  if (name === 'PostgresError' && POSTGRES_STATES.test(code)) return code.startsWith('08') || code.startsWith('57P') ? 'unreachable' : 'busy'
  return CONNECTION_CODES.has(code) ? 'unreachable' : undefined
}
