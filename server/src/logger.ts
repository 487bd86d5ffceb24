/** One JSON object per line. Callers pass fields, never a key, a signature or a body. */
export interface Logger {
  info(fields: Record<string, unknown>): void
  error(fields: Record<string, unknown>): void
}

let outputLost = false

/** Whether standard output has refused a write for want of a reader (its later writes may fail unseen). */
export const outputReaderGone = () => outputLost

/** A write error after which standard output takes nothing more: its reader is gone, or the descriptor is. */
const GONE = new Set(['EPIPE', 'EBADF', 'ECONNRESET', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_WRITE_AFTER_END'])

/**
 * Writes to standard output. A reader that went away (a closed pipe: `| head`, a log shipper restarting) loses the
 * lines while it is away, said once on standard error, never the process: the write threw EPIPE, which ended the
 * server mid-request (an audit). False when the text was lost.
 */
export function writeOutput(text: string): boolean {
  // Tried every time, gone or not: a reader may come back (a log shipper reopening the FIFO it reads), and the lines
  // reach it again (a re-audit: a latch had silenced the server for good).
  try {
    process.stdout.write(text, written)
    return true
  } catch (e) {
    outputRefused(e)
    return false
  }
}

/**
 * A write's outcome: Bun reports a reader gone by the write's callback (the stream's 'error' event comes only the first
 * time), and a write that lands says it is back, so each outage is told (a re-audit).
 */
const written = (e?: Error | null) => (e ? outputRefused(e) : void (outputLost = false))

/** Says on standard error, once per outage, that standard output's reader is gone (a write threw, or the stream reported it later). */
export function outputRefused(e: unknown): void {
  const code = (e as { code?: unknown } | null)?.code
  if (outputLost || typeof code !== 'string' || !GONE.has(code)) return
  outputLost = true
  try {
    process.stderr.write(`standard output refused a write (${code}); log lines are lost while it has no reader\n`)
  } catch {
    // Neither stream takes writes: nothing to say it with.
  }
}

export function createJsonLogger(write: (line: string) => void = writeOutput): Logger {
  const emit = (level: string, fields: Record<string, unknown>) =>
    write(JSON.stringify({ time: new Date().toISOString(), level, ...fields }) + '\n')
  return { info: (f) => emit('info', f), error: (f) => emit('error', f) }
}

export const silentLogger: Logger = { info() {}, error() {} }

/**
 * An error as the logs may hold it. Chain client errors (viem's) write the RPC URL into their message and stack,
 * whose path or query often holds the provider's API key, and the JSON-RPC request body, which may hold a
 * signature: the body lines go, and each URL keeps only its scheme and host.
 */
export function loggableError(error: unknown): { error: string; stack?: string } {
  if (!(error instanceof Error)) return { error: redactText(String(error)) }
  return { error: redactText(`${error.name}: ${error.message}`), ...(error.stack ? { stack: redactText(error.stack) } : {}) }
}

const redactText = (text: string) =>
  text
    .replace(/^\s*Request body:.*$/gm, '  Request body: (redacted)')
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/)(?:[^\s/@]*@)?([^\s/?#]+)[^\s]*/gi, (_, scheme: string, host: string) => `${scheme}${host}`)
