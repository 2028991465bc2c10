import { type Kysely } from 'kysely'
import type { DB } from '../../db/tables.ts'

const MESSAGE_COLUMNS = ['m.id', 'm.communication_id', 'm.contract_id', 'm.send_at', 'm.delivered_at', 'm.opened_at', 'm.action_done_at'] as const

interface Paging { limit: number; offset: number }

/** Delivered messages: per occurrence (endpoint 32), per recipient (the inbox), and their first opening and acknowledgement. */
export function createMessagesRepository(db: Kysely<DB>) {
  function occurrenceQuery(companyId: string, communicationId: string, sendAt: Date, filter: { opened?: boolean; actions?: boolean }) {
    let query = db.selectFrom('communication_messages as m')
      .where('m.company_id', '=', companyId).where('m.communication_id', '=', communicationId).where('m.send_at', '=', sendAt)
    if (filter.opened !== undefined) query = query.where('m.opened_at', filter.opened ? 'is not' : 'is', null)
    if (filter.actions !== undefined) query = query.where('m.action_done_at', filter.actions ? 'is not' : 'is', null)
    return query
  }

  function inboxQuery(companyId: string, contractId: string, filter: { opened?: boolean }) {
    let query = db.selectFrom('communication_messages as m')
      .innerJoin('communications as c', (join) => join.onRef('c.company_id', '=', 'm.company_id').onRef('c.id', '=', 'm.communication_id'))
      .where('m.company_id', '=', companyId).where('m.contract_id', '=', contractId)
    if (filter.opened !== undefined) query = query.where('m.opened_at', filter.opened ? 'is not' : 'is', null)
    return query
  }

  return {
    /** One page of an occurrence's messages, in the order of the unique index (by contract). */
    async byOccurrence(companyId: string, communicationId: string, sendAt: Date, filter: { opened?: boolean; actions?: boolean }, paging: Paging) {
      const base = occurrenceQuery(companyId, communicationId, sendAt, filter)
      const [rows, count] = await Promise.all([
        base.select(MESSAGE_COLUMNS).orderBy('m.contract_id').limit(paging.limit).offset(paging.offset).execute(),
        base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
      ])
      return { rows, total: Number(count.total) }
    },

    /** One page of a contract's inbox, newest first, with what each communication says. */
    async inbox(companyId: string, contractId: string, filter: { opened?: boolean }, paging: Paging) {
      const base = inboxQuery(companyId, contractId, filter)
      const [rows, count] = await Promise.all([
        base.select(MESSAGE_COLUMNS)
          .select(['c.subject', 'c.message', 'c.sender_id', 'c.action_required', 'c.attachments'])
          .orderBy('m.send_at', 'desc').orderBy('m.id').limit(paging.limit).offset(paging.offset).execute(),
        base.select((eb) => eb.fn.countAll<number>().as('total')).executeTakeFirstOrThrow(),
      ])
      return { rows, total: Number(count.total) }
    },

    /** The message with what its communication asks of the recipient. */
    find: (companyId: string, messageId: string) =>
      db.selectFrom('communication_messages as m')
        .innerJoin('communications as c', (join) => join.onRef('c.company_id', '=', 'm.company_id').onRef('c.id', '=', 'm.communication_id'))
        .select(['m.id', 'c.action_required'])
        .where('m.company_id', '=', companyId).where('m.id', '=', messageId)
        .executeTakeFirst(),

    /** Records the first opening only: a later call changes nothing. */
    markOpened: (companyId: string, messageId: string, at: Date) =>
      db.updateTable('communication_messages').set({ opened_at: at })
        .where('company_id', '=', companyId).where('id', '=', messageId).where('opened_at', 'is', null).execute(),

    /** Records the first acknowledgement only; acknowledging implies having opened it. */
    markActionDone: (companyId: string, messageId: string, at: Date) =>
      db.updateTable('communication_messages')
        .set((eb) => ({ action_done_at: at, opened_at: eb.fn.coalesce('opened_at', eb.val(at)) }))
        .where('company_id', '=', companyId).where('id', '=', messageId).where('action_done_at', 'is', null).execute(),
  }
}

export type MessagesRepository = ReturnType<typeof createMessagesRepository>
