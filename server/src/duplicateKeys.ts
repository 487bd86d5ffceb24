/**
 * The first key an object of a JSON text names twice. JSON.parse keeps the last silently, so a catalog entry with
 * two `vaultAddress` lines would list the second vault without a word. The text must already parse as JSON: this
 * only follows its strings and brackets.
 */
export function firstDuplicateKey(text: string): { path: string; key: string } | undefined {
  type Frame = { keys: Set<string> | null; path: string; index: number; key: string | undefined }
  const stack: Frame[] = []
  let expectingKey = false
  const here = () => stack[stack.length - 1]
  const childPath = (f: Frame | undefined) => (f === undefined ? '' : f.keys ? join(f.path, f.key ?? '') : `${f.path}[${f.index}]`)
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === '"') {
      let end = i + 1
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1
      const frame = here()
      if (expectingKey && frame?.keys) {
        const key = JSON.parse(text.slice(i, end + 1)) as string
        if (frame.keys.has(key)) return { path: frame.path, key }
        frame.keys.add(key)
        frame.key = key
        expectingKey = false
      }
      i = end
    } else if (c === '{' || c === '[') {
      stack.push({ keys: c === '{' ? new Set() : null, path: childPath(here()), index: 0, key: undefined })
      expectingKey = c === '{'
    } else if (c === '}' || c === ']') {
      stack.pop()
    } else if (c === ',') {
      const frame = here()
      if (frame?.keys) expectingKey = true
      else if (frame) frame.index++
    }
  }
  return undefined
}

const join = (path: string, key: string) => (/^[A-Za-z_$][\w$]*$/.test(key) ? (path ? `${path}.${key}` : key) : `${path}[${JSON.stringify(key)}]`)
