/**
 * The attribution tag rides in a Memo instruction: UTF-8 text the Memo program logs and checks, and
 * that any node returns with the transaction. No vault program needs to know about it.
 */
import { InvalidArgumentError } from '@earn/core'
import type { Address, Instruction, ReadonlyUint8Array } from '@solana/kit'
import { getAddMemoInstruction, LEGACY_MEMO_PROGRAM_ADDRESS_V3, SUPPORTED_MEMO_PROGRAM_ADDRESSES } from '@solana-program/memo'

export const TAG_PREFIX = 'earn:v1:'
/**
 * Tags are ~110 characters (`earn:v1:<uuid>:<uuid>:<mac>`). The bound keeps a malformed one from
 * pushing the transaction past Solana's 1232-byte packet limit, which would fail only at signing.
 */
const MAX_TAG_BYTES = 256
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/

/**
 * Memo v3 (`MemoSq4g…`, SPL Memo 2), not the v4 @solana-program/memo builds for by default: the memo goes just before
 * the transfer, where a recipient account that requires memos (Token-2022's MemoTransfer) looks for one, and the
 * token program knows the Memo ids of v1 and v3 (v4's memo before a transfer was refused as no memo). The same
 * instruction. No signer accounts: the fee payer's signature already covers the whole transaction, memo included.
 */

export function tagInstruction(tag: string): Instruction {
  if (!tag.startsWith(TAG_PREFIX) || !PRINTABLE_ASCII.test(tag) || tag.length > MAX_TAG_BYTES)
    throw new InvalidArgumentError(`tag must be a printable ${TAG_PREFIX}... attribution tag of at most ${MAX_TAG_BYTES} bytes`, {
      tag: 'not an attribution tag',
    })
  return getAddMemoInstruction({ memo: tag }, { programAddress: LEGACY_MEMO_PROGRAM_ADDRESS_V3 })
}

export interface CompiledInstructionLike {
  programAddress: Address
  data?: ReadonlyUint8Array
}

/**
 * The first memo that is an attribution tag, under any Memo program version ever deployed: a
 * transaction built by another tool (or before v4) may carry it under v1 or v3. Other memos are
 * ignored rather than refused: wallets and apps add their own.
 */
export function findTag(instructions: readonly CompiledInstructionLike[]): string | null {
  return findTags(instructions)[0] ?? null
}

/** Every memo that is an attribution tag, in order (a transaction funding several streams carries several). */
export function findTags(instructions: readonly CompiledInstructionLike[]): string[] {
  const decoder = new TextDecoder()
  const tags: string[] = []
  for (const ix of instructions) {
    if (!(SUPPORTED_MEMO_PROGRAM_ADDRESSES as readonly string[]).includes(ix.programAddress) || !ix.data) continue
    const text = decoder.decode(ix.data as Uint8Array)
    if (text.startsWith(TAG_PREFIX)) tags.push(text)
  }
  return tags
}
