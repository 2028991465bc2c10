import type { Insertable, Kysely } from 'kysely'
import type { CommunicationAttachmentsTable, DB } from '../../db/tables.ts'

/** Uploaded files, stored in the database (bytea) so that every instance can serve them. */
export function createAttachmentsRepository(db: Kysely<DB>) {
  return {
    insert: (row: Insertable<CommunicationAttachmentsTable>) =>
      db.insertInto('communication_attachments').values(row).execute(),
    find: (companyId: string, id: string) =>
      db
        .selectFrom('communication_attachments')
        .select(['id', 'name', 'mime', 'size', 'content'])
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .executeTakeFirst(),
  }
}

export type AttachmentsRepository = ReturnType<typeof createAttachmentsRepository>
