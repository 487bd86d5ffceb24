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

/**
 * A multi-row INSERT built and compiled once per row count, then run with new values: a group commit inserts
 * batches of a few recurring sizes, and Kysely building the statement cost about as much as SQLite running it.
 * Every row binds every one of `columns` (an absent value as null). At most `maxShapes` row counts are kept.
 */
export function compileInsertOnce<Row extends object>(
  db: Kysely<any>,
  table: string,
  columns: readonly (keyof Row & string)[],
  maxShapes = 64,
): (rows: readonly Row[]) => Promise<void> {
  const shapes = new Map<number, { compiled: CompiledQuery; positions: Int32Array }>()
  const shapeFor = (count: number) => {
    let shape = shapes.get(count)
    if (shape) return shape
    const marker = (row: number, column: number) => `\u0000r${row}c${column}`
    const rows = Array.from({ length: count }, (_, i) => Object.fromEntries(columns.map((c, j) => [c, marker(i, j)])))
    const compiled = db.insertInto(table).values(rows).compile()
    const index = new Map(compiled.parameters.map((p, i) => [p, i]))
    const positions = Int32Array.from(rows.flatMap((_, i) => columns.map((_, j) => index.get(marker(i, j)) ?? -1)))
    if (positions.some((p) => p < 0) || compiled.parameters.length !== positions.length)
      throw new Error(`compileInsertOnce: a value of ${table} is not a parameter of ${compiled.sql.slice(0, 80)}`)
    if (shapes.size >= maxShapes) shapes.clear()
    shape = { compiled, positions }
    shapes.set(count, shape)
    return shape
  }
  return async (rows) => {
    if (rows.length === 0) return
    const { compiled, positions } = shapeFor(rows.length)
    const parameters: unknown[] = new Array(positions.length)
    let k = 0
    for (const row of rows) for (const column of columns) parameters[positions[k++]!] = (row as Record<string, unknown>)[column] ?? null
    await db.executeQuery({ ...compiled, parameters })
  }
}
