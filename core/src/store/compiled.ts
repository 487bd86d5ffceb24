/**
 * A query built and compiled once, then run with new values. Kysely builds, transforms and compiles
 * a query on every call, which costs more than running a point query; the queries of every request
 * (key lookup, membership check) are compiled once here. `build` gets one marker per value and must
 * use each exactly once as a parameter.
 */
import type { Compilable, CompiledQuery, Kysely } from 'kysely'
import type { RowReader } from './sqlite.ts'

export function compileOnce<V extends string[], R>(
  db: Kysely<any>,
  reader: RowReader | undefined,
  arity: V['length'],
  build: (...markers: V) => Compilable<R>,
): (...values: V) => Promise<R | undefined> {
  const markers = Array.from({ length: arity }, (_, i) => `\u0000value${i}`) as V
  const compiled = build(...markers).compile()
  const positions = markers.map((m) => compiled.parameters.indexOf(m))
  if (positions.some((p) => p < 0)) throw new Error(`compileOnce: a value is not a parameter of ${compiled.sql}`)
  const bind = (values: V) => {
    const parameters = compiled.parameters.slice()
    for (let i = 0; i < positions.length; i++) parameters[positions[i]!] = values[i]
    return parameters
  }
  if (reader) return async (...values) => reader(compiled.sql, bind(values)) as R | undefined
  return async (...values) => (await db.executeQuery<R>({ ...compiled, parameters: bind(values) } as CompiledQuery<R>)).rows[0]
}
