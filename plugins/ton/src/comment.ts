/**
 * Text comments, the TON convention every wallet and explorer shows: op 0 (32 zero bits), then the
 * UTF-8 text in "snake" form (continuing into a ref when it outgrows a cell). Earn's attribution
 * tag travels as one, so a user sees it in the wallet's confirmation screen before signing.
 */
import { beginCell, Cell, type Slice } from '@ton/core'

export const COMMENT_OP = 0

export function commentCell(text: string): Cell {
  return beginCell().storeUint(COMMENT_OP, 32).storeStringTail(text).endCell()
}

/**
 * The text of a comment, or null for anything else (another op, too short, broken snake, bytes that
 * are not UTF-8). Reads a copy: the caller's slice is left where it was. Never throws.
 */
export function readComment(body: Cell | Slice): string | null {
  try {
    const s = body instanceof Cell ? body.beginParse() : body.clone()
    if (s.remainingBits < 32 || s.loadUint(32) !== COMMENT_OP) return null
    const bytes: Buffer[] = []
    let part: Slice | null = s
    // Snake data: each cell holds whole bytes and at most one ref, the continuation.
    for (let depth = 0; part; depth++) {
      if (part.remainingBits % 8 !== 0 || part.remainingRefs > 1 || depth > 16) return null
      bytes.push(part.loadBuffer(part.remainingBits / 8))
      part = part.remainingRefs === 1 ? part.loadRef().beginParse() : null
    }
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(bytes))
  } catch {
    return null
  }
}
