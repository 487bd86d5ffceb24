/**
 * Store failures that are the database's state, not the request's or the code's: a statement past its timeout,
 * a lock not granted in time, a connection refused or lost, SQLite's write lock held past its busy timeout, a disk
 * that is full or a database that takes no writes (a standby after a failover). The request is fine and may be sent
 * again, so the API answers 503 (with its retry advice), not 500.
 */

export type StoreUnavailable = 'busy' | 'unreachable' | 'unwritable'

// SQLSTATE: 57014 statement timeout or cancel; 55P03 lock not available; 40P01 deadlock (the transaction was rolled
// back and may run again); 53300 too many connections; 25P03 idle in
// transaction timeout; classes 08 (connection exception) and 57P (shutdown, cannot connect now); 25006 read-only
// transaction, 53100 disk full, 53200 out of memory.
const POSTGRES_STATES: Record<string, StoreUnavailable> = { '57014': 'busy', '55P03': 'busy', '40P01': 'busy', '53300': 'busy', '25P03': 'busy', '25006': 'unwritable', '53100': 'unwritable', '53200': 'busy' }
// postgres.js's own codes for a connection it lost or could not open, and the socket's.
const CONNECTION_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN'])

function sqlite(code: string): StoreUnavailable | undefined {
  if (code.startsWith('SQLITE_BUSY')) return 'busy'
  // Disk full, a read or write the disk failed, a file or directory the process may no longer write.
  if (code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR') || code.startsWith('SQLITE_READONLY')) return 'unwritable'
  return undefined
}

/** Why the store could not serve now, or undefined for any other failure. */
/** Set on the store's own failures (a statement it timed itself, postgresDialect.ts) to say which they are. */
export const STORE_UNAVAILABLE = Symbol('storeUnavailable')

export function storeUnavailable(error: unknown): StoreUnavailable | undefined {
  const { name, code, [STORE_UNAVAILABLE]: own } = (error ?? {}) as { name?: unknown; code?: unknown; [STORE_UNAVAILABLE]?: StoreUnavailable }
  if (own) return own
  if (typeof code !== 'string') return undefined
  if (name === 'SQLiteError') return sqlite(code)
  if (name === 'PostgresError') return code.startsWith('08') || code.startsWith('57P') ? 'unreachable' : POSTGRES_STATES[code]
  return CONNECTION_CODES.has(code) ? 'unreachable' : undefined
}
