/**
 * The idempotency-key queries, kept beside store.ts (which spreads them into the one Store). A key is claimed by one
 * attempt at a time (its `token`, for a lease); the attempt's answer is written by the same transaction that writes
 * the row it created, and only while the attempt still holds the key: so an answer is kept exactly when its row is,
 * and an attempt whose lease another took over writes neither.
 */
import type { Kysely, Transaction } from 'kysely'
import type { Engine } from './migrations.ts'
import type { Database } from './schema.ts'

/** One attempt's hold on a key. */
export interface IdempotencyClaim {
  /** The row's id: a hash of the organization and the client's key. */
  id: string
  token: string
}

/** The JSON body to answer the key with from now on, written with the row its attempt created. */
export interface IdempotentAnswer {
  claim: IdempotencyClaim
  answer: string
}

export interface ClaimRequest {
  id: string
  fingerprint: string
  token: string
  now: number
  /** How long the attempt holds the key before another may take it over. */
  leaseMs: number
  /** How long a key is kept: older, it is claimed as new (and old rows are deleted, a few at a claim). */
  keptMs: number
}

export type ClaimOutcome =
  | { kind: 'claimed'; claim: IdempotencyClaim }
  | { kind: 'answered'; answer: string }
  /** The key was used for another operation or body. */
  | { kind: 'mismatch' }
  /** Another attempt holds the key until `leaseUntil`. */
  | { kind: 'running'; leaseUntil: number }

/** The attempt no longer holds its key (its lease ran out and another attempt took it): its row must not be written. */
export class IdempotencyClaimLost extends Error {
  constructor() {
    super('the idempotency key was taken over by another attempt')
    this.name = 'IdempotencyClaimLost'
  }
}

export interface IdempotencyStore {
  claimIdempotencyKey(request: ClaimRequest): Promise<ClaimOutcome>
  /** Gives the key up where the attempt created nothing (its answer was not written), so the key may be sent again. */
  releaseIdempotencyKey(claim: IdempotencyClaim): Promise<void>
}

// Old keys deleted at each claim: bounded, so one claim never pays for a day's backlog at once.
const PRUNED_PER_CLAIM = 20
// A row changed between this claim's reads (by a concurrent claim or the pruning) is read again, at most this often.
const CLAIM_TRIES = 4

/** Writes the answer inside the transaction `trx` that writes its row; throws IdempotencyClaimLost where the attempt lost its key. */
export async function writeAnswer(trx: Transaction<Database>, a: IdempotentAnswer): Promise<void> {
  const written = await trx
    .updateTable('idempotencyKeys')
    .set({ answer: a.answer, token: null })
    .where('id', '=', a.claim.id)
    .where('token', '=', a.claim.token)
    .where('answer', 'is', null)
    .executeTakeFirst()
  if (written.numUpdatedRows === 0n) throw new IdempotencyClaimLost()
}

export function idempotencyQueries(db: Kysely<Database>, engine: Engine): IdempotencyStore {
  const prune = async (before: number) => {
    const oldest = db.selectFrom('idempotencyKeys').select('id').where('createdAt', '<', before).limit(PRUNED_PER_CLAIM)
    // Concurrent claims on PostgreSQL take different rows rather than wait on each other's; SQLite has one writer.
    await db.deleteFrom('idempotencyKeys').where('id', 'in', engine === 'postgres' ? oldest.forUpdate().skipLocked() : oldest).execute()
  }
  const take = (r: ClaimRequest) => ({ fingerprint: r.fingerprint, token: r.token, leaseUntil: r.now + r.leaseMs })

  return {
    async claimIdempotencyKey(r) {
      const claim = { id: r.id, token: r.token }
      await prune(r.now - r.keptMs)
      for (let tries = 0; tries < CLAIM_TRIES; tries++) {
        const inserted = await db
          .insertInto('idempotencyKeys')
          .values({ id: r.id, ...take(r), answer: null, createdAt: r.now })
          .onConflict((oc) => oc.column('id').doNothing())
          .returning('id')
          .execute()
        if (inserted.length) return { kind: 'claimed', claim }
        const row = await db.selectFrom('idempotencyKeys').selectAll().where('id', '=', r.id).executeTakeFirst()
        if (!row) continue
        // Past its keeping (not yet pruned): a new key, whatever it answered.
        if (row.createdAt < r.now - r.keptMs) {
          const renewed = await db
            .updateTable('idempotencyKeys')
            .set({ ...take(r), answer: null, createdAt: r.now })
            .where('id', '=', r.id)
            .where('createdAt', '=', row.createdAt)
            .executeTakeFirst()
          if (renewed.numUpdatedRows > 0n) return { kind: 'claimed', claim }
          continue
        }
        const same = row.fingerprint === r.fingerprint
        if (row.answer !== null) return same ? { kind: 'answered', answer: row.answer } : { kind: 'mismatch' }
        if (row.leaseUntil > r.now) return same ? { kind: 'running', leaseUntil: row.leaseUntil } : { kind: 'mismatch' }
        // The holder's lease ran out (its process stopped, or it is slow past the lease): taken over, by this request
        // whatever its body, as nothing was created under the key (a re-audit: a process killed mid-request had left the
        // key refusing a corrected body for the day). Should the holder still finish, its answer and its row are refused
        // together (writeAnswer), so only one attempt's row is kept.
        const taken = await db
          .updateTable('idempotencyKeys')
          .set(take(r))
          .where('id', '=', r.id)
          .where('token', '=', row.token!)
          .where('answer', 'is', null)
          .executeTakeFirst()
        if (taken.numUpdatedRows > 0n) return { kind: 'claimed', claim }
      }
      // Changed under every read: as good as another attempt holding it now.
      return { kind: 'running', leaseUntil: r.now + 1000 }
    },
    async releaseIdempotencyKey(claim) {
      await db.deleteFrom('idempotencyKeys').where('id', '=', claim.id).where('token', '=', claim.token).where('answer', 'is', null).execute()
    },
  }
}
