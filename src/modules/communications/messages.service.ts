import { storedTime, type StoredObject } from '../events/event-objects.ts'
import type { Clock } from '../../core/clock.ts'
import { Conflict, NotFound, ValidationError } from '../../core/errors.ts'
import type { CommunicationsRepository } from './communications.repository.ts'
import type { MessagesRepository, Paging } from './messages.repository.ts'
import type { Page } from '../../core/paging.ts'
import type { InboxMessage, Message } from './messages.schemas.ts'

interface PageQuery {
  page?: number
  page_size?: number
}

const DEFAULT_PAGE_SIZE = 20
const iso = (d: Date | null) => (d ? d.toISOString() : null)

function messageView(row: {
  id: string
  communication_id: string
  contract_id: string
  send_at: Date
  delivered_at: Date
  opened_at: Date | null
  action_done_at: Date | null
}): Message {
  return {
    id: row.id,
    communication_id: row.communication_id,
    contract_id: row.contract_id,
    send_at: row.send_at.toISOString(),
    delivered_at: row.delivered_at.toISOString(),
    opened_at: iso(row.opened_at),
    action_done_at: iso(row.action_done_at),
  }
}

export function createMessagesService(deps: {
  repo: MessagesRepository
  communications: Pick<CommunicationsRepository, 'exists' | 'contractExists'>
  clock: Clock
}) {
  const { repo, clock } = deps

  // page/page_size (offset) or limit/cursor (keyset), never both; with a cursor, `page` counts pages walked.
  function paging(query: PageQuery, cursorPage: Page | undefined): { page: number; page_size: number; paging: Paging } {
    if (cursorPage?.limit !== undefined) {
      const mixed = query.page !== undefined ? 'page' : query.page_size !== undefined ? 'page_size' : undefined
      if (mixed)
        throw new ValidationError(
          `querystring/${mixed} pages by number and limit/cursor by cursor: send one or the other`,
        )
      return {
        page: cursorPage.number,
        page_size: cursorPage.limit,
        paging: { limit: cursorPage.limit, after: cursorPage.after },
      }
    }
    const page = query.page ?? 1
    const pageSize = query.page_size ?? DEFAULT_PAGE_SIZE
    return { page, page_size: pageSize, paging: { limit: pageSize, offset: (page - 1) * pageSize } }
  }

  return {
    messageEventObject: (stored: StoredObject): Message =>
      messageView({
        ...(stored as Message),
        send_at: storedTime(stored.send_at)!,
        delivered_at: storedTime(stored.delivered_at)!,
        opened_at: storedTime(stored.opened_at),
        action_done_at: storedTime(stored.action_done_at),
      }),

    async byOccurrence(
      companyId: string,
      communicationId: string,
      query: PageQuery & { send_at: string; opened?: boolean; actions?: boolean },
      cursorPage?: Page,
    ) {
      if (!(await deps.communications.exists(companyId, communicationId))) throw new NotFound('Communication')
      const sendAt = new Date(query.send_at)
      if (Number.isNaN(sendAt.getTime())) throw new ValidationError('querystring/send_at must be a valid date-time')
      const p = paging(query, cursorPage)
      const { items, next, total } = await repo.byOccurrence(
        companyId,
        communicationId,
        sendAt,
        { opened: query.opened, actions: query.actions },
        p.paging,
      )
      return { body: { messages: items.map(messageView), page: p.page, page_size: p.page_size, total }, next }
    },

    async inbox(companyId: string, contractId: string, query: PageQuery & { opened?: boolean }, cursorPage?: Page) {
      if (!(await deps.communications.contractExists(companyId, contractId))) throw new NotFound('Contract')
      const p = paging(query, cursorPage)
      const { items, next, total } = await repo.inbox(companyId, contractId, { opened: query.opened }, p.paging)
      const messages: InboxMessage[] = items.map((r) => ({
        ...messageView(r),
        subject: r.subject,
        message: r.message,
        sender_id: r.sender_id,
        action_required: r.action_required,
        attachments: r.attachments,
      }))
      return { body: { messages, page: p.page, page_size: p.page_size, total }, next }
    },

    async open(companyId: string, messageId: string) {
      if (!(await repo.find(companyId, messageId))) throw new NotFound('Message')
      await repo.markOpened(companyId, messageId, clock.now())
    },

    async acknowledge(companyId: string, messageId: string) {
      const message = await repo.find(companyId, messageId)
      if (!message) throw new NotFound('Message')
      if (message.action_required !== 'acknowledge')
        throw new Conflict("This message asks for no action (its communication's action_required is none)")
      await repo.markActionDone(companyId, messageId, clock.now())
    },
  }
}

export type MessagesService = ReturnType<typeof createMessagesService>
