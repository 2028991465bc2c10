import type { Kysely, Selectable, Transaction } from 'kysely'
import type { DB, IdempotencyKeysTable } from '../db/tables.ts'

export type KeptKey = Selectable<IdempotencyKeysTable>

const LOCK_NOT_AVAILABLE = '55P03'

export function isLockNotAvailable(err: unknown): boolean {
  return (err as { code?: string }).code === LOCK_NOT_AVAILABLE
}

/**
 * A short lock_timeout while claiming, so a request whose key is held gives its connection back
 * instead of waiting; on PostgreSQL, a hung instance's idle transaction is ended.
 */
export function claimSettings(engine: 'postgres' | 'pglite', lockTimeoutMs: number, idleTimeoutMs: number): string[] {
  return [
    `SET LOCAL lock_timeout = '${lockTimeoutMs}ms'`,
    ...(engine === 'postgres' ? [`SET LOCAL idle_in_transaction_session_timeout = '${idleTimeoutMs}ms'`] : []),
  ]
}

/** Once claimed, the request's work waits on locks as without a key. */
export const AFTER_CLAIM = 'SET LOCAL lock_timeout TO DEFAULT'

export function idempotencyRepository(db: Kysely<DB>) {
  return {
    find(owner: string, key: string): Promise<KeptKey | undefined> {
      return db
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('owner', '=', owner)
        .where('key', '=', key)
        .executeTakeFirst()
    },

    /** Claims the key, or takes over an expired or abandoned one; false when another request holds it. */
    async claim(claim: {
      owner: string
      key: string
      hash: string
      now: Date
      expiredBefore: Date
      abandonedBefore: Date
    }): Promise<boolean> {
      const { owner, key, hash, now } = claim
      const row = await db
        .insertInto('idempotency_keys')
        .values({ owner, key, request_hash: hash, created_at: now })
        .onConflict((oc) =>
          oc
            .columns(['owner', 'key'])
            .doUpdateSet({
              request_hash: hash,
              status_code: null,
              response_headers: null,
              response_body: null,
              created_at: now,
            })
            .where((eb) =>
              eb.or([
                eb('idempotency_keys.created_at', '<', claim.expiredBefore),
                eb.and([
                  eb('idempotency_keys.status_code', 'is', null),
                  eb('idempotency_keys.created_at', '<', claim.abandonedBefore),
                ]),
              ]),
            ),
        )
        .returning('key')
        .executeTakeFirst()
      return row !== undefined
    },

    async keepAnswer(
      owner: string,
      key: string,
      answer: { status: number; headers: Record<string, string>; body: string | null },
    ) {
      await db
        .updateTable('idempotency_keys')
        .set({
          status_code: answer.status,
          response_headers: JSON.stringify(answer.headers),
          response_body: answer.body,
        })
        .where('owner', '=', owner)
        .where('key', '=', key)
        .execute()
    },

    async release(owner: string, key: string) {
      await db.deleteFrom('idempotency_keys').where('owner', '=', owner).where('key', '=', key).execute()
    },
  }
}

export async function purgeKeys(trx: Transaction<DB> | Kysely<DB>, before: Date) {
  await trx.deleteFrom('idempotency_keys').where('created_at', '<', before).execute()
}
