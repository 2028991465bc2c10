import type { Kysely } from 'kysely'
import type { DB } from '../../db/tables.ts'

export interface DocumentKey {
  company_id: string
  document_type: 'invoice' | 'credit_note'
  document_id: string
}

const keyOf = (k: DocumentKey) => `${k.document_type}/${k.company_id}/${k.document_id}`
const CHUNK = 1000

/** The documents' progressives: given once, in the order asked, and read back. */
export function createFatturapaRepository(db: Kysely<DB>) {
  return {
    /** Each document's progressive, giving one to those that have none yet (in the order of `keys`). */
    async progressives(keys: DocumentKey[]): Promise<Map<string, number>> {
      const found = new Map<string, number>()
      for (let i = 0; i < keys.length; i += CHUNK) {
        const chunk = keys.slice(i, i + CHUNK)
        await db
          .insertInto('fatturapa_progressives')
          .values(chunk)
          .onConflict((oc) => oc.columns(['company_id', 'document_type', 'document_id']).doNothing())
          .execute()
        const rows = await db
          .selectFrom('fatturapa_progressives')
          .select(['company_id', 'document_type', 'document_id', 'progressive'])
          .where(
            'company_id',
            'in',
            chunk.map((k) => k.company_id),
          )
          .where(
            'document_id',
            'in',
            chunk.map((k) => k.document_id),
          )
          .execute()
        for (const row of rows) found.set(keyOf(row), Number(row.progressive))
      }
      return new Map(keys.map((k) => [keyOf(k), found.get(keyOf(k))!]))
    },
  }
}

export { keyOf as progressiveKey }
export type FatturapaRepository = ReturnType<typeof createFatturapaRepository>
