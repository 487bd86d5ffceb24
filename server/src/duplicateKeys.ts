import { fieldPath } from './fieldPath.ts'

/**
 * The first key an object of a JSON text names twice. JSON.parse keeps the last silently, so a catalog entry with
 * two `vaultAddress` lines would list the second vault without a word. The text must already parse as JSON: this
 * only follows its strings and brackets.
 *
 * It runs on every request body before the key is checked, so it allocates little: a key is sliced from the text
 * unless it has an escape, an object's first key needs no set, and a path is only spelled out for the duplicate.
 */
/** `path`: where the object is (`a.b[0]`); `field`: the repeated key's own path, as every 400 names a field. */
export function firstDuplicateKey(text: string): { path: string; key: string; field: string } | undefined {
  let top: Frame | undefined
  let expectingKey = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      let end = i + 1
      let escaped = false
      for (let d = text.charCodeAt(end); d !== QUOTE; d = text.charCodeAt(end)) {
        if (d === BACKSLASH) {
          escaped = true
          end += 2
        } else end++
      }
      if (expectingKey && top?.object) {
        const key = escaped ? (JSON.parse(text.slice(i, end + 1)) as string) : text.slice(i + 1, end)
        if (top.keys === undefined && top.first === undefined) top.first = key
        else if (top.keys === undefined && top.first !== key) top.keys = new Set([top.first!, key])
        else if (top.keys === undefined || top.keys.has(key)) {
          const segments = segmentsOf(top)
          return { path: fieldPath(segments), key, field: fieldPath([...segments, key]) }
        }
        else top.keys.add(key)
        top.key = key
        expectingKey = false
      }
      i = end
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      top = { parent: top, at: top === undefined ? undefined : top.object ? top.key : top.index, object: c === OPEN_OBJECT, first: undefined, keys: undefined, key: undefined, index: 0 }
      expectingKey = c === OPEN_OBJECT
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      top = top?.parent
    } else if (c === COMMA) {
      if (top?.object) expectingKey = true
      else if (top) top.index++
    }
  }
  return undefined
}

const [QUOTE, BACKSLASH, OPEN_OBJECT, CLOSE_OBJECT, OPEN_ARRAY, CLOSE_ARRAY, COMMA] = ['"', '\\', '{', '}', '[', ']', ','].map((s) => s.charCodeAt(0)) as [
  number,
  number,
  number,
  number,
  number,
  number,
  number,
]

interface Frame {
  parent: Frame | undefined
  /** Where it sits in its parent: the parent's key, or its index. */
  at: string | number | undefined
  object: boolean
  /** An object's keys so far: the first alone, then a set from the second on. */
  first: string | undefined
  keys: Set<string> | undefined
  /** The object's latest key, or the array's current index. */
  key: string | undefined
  index: number
}

/** The keys and indexes from the root to this frame's value. */
function segmentsOf(frame: Frame): (string | number)[] {
  const frames: Frame[] = []
  for (let f: Frame | undefined = frame; f?.parent; f = f.parent) frames.unshift(f)
  return frames.map((f) => (f.parent!.object ? (f.at as string) : (f.at as number)))
}
