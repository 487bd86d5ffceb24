/**
 * A field's path as every 400 names it: `a.b[0]["odd key"]`, an index in brackets and a key that is no identifier
 * quoted, as the catalog's messages spell it. Validation errors had said `a.0.b` where the duplicate-key check said
 * `a[0].b`, so one field of one body was named two ways.
 */
export function fieldPath(segments: readonly (string | number)[]): string {
  let path = ''
  for (const s of segments)
    path = typeof s === 'number' ? `${path}[${s}]` : IDENTIFIER.test(s) ? (path ? `${path}.${s}` : s) : `${path}[${JSON.stringify(s)}]`
  return path
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/

/**
 * TypeBox's path (`/a/0/b`), whose segments do not say an array's index from an object's key: a whole number is read
 * as an index (no field of the API is named by digits).
 */
export const pointerPath = (pointer: string): string =>
  fieldPath(pointer.split('/').slice(1).map((s) => (/^(?:0|[1-9]\d*)$/.test(s) ? Number(s) : s)))
