/** One JSON object per line. Callers pass fields, never a key, a signature or a body. */
export interface Logger {
  info(fields: Record<string, unknown>): void
  error(fields: Record<string, unknown>): void
}

export function createJsonLogger(write: (line: string) => void = (l) => process.stdout.write(l)): Logger {
  const emit = (level: string, fields: Record<string, unknown>) =>
    write(JSON.stringify({ time: new Date().toISOString(), level, ...fields }) + '\n')
  return { info: (f) => emit('info', f), error: (f) => emit('error', f) }
}

export const silentLogger: Logger = { info() {}, error() {} }
