import { storedTime, type StoredObject } from '../events/event-objects.ts'
import { createHash, randomUUID } from 'node:crypto'
import type { Kysely } from 'kysely'
import type { KeysetPage } from '../../db/keyset.ts'
import { pageInMemory, type Paged } from '../../core/paging.ts'
import type { Clock } from '../../core/clock.ts'
import type { AttachmentRef, ChangeLogEntry, CommunicationStatus, DB, Recurrence } from '../../db/tables.ts'
import { Conflict, NotFound, ValidationError } from '../../core/errors.ts'
import { isRealDay } from '../../core/days.ts'
import type { CommunicationRecord, CommunicationsRepository } from './communications.repository.ts'
import type { CommunicationDelivery } from './communications.delivery.ts'
import { firstToDeliver, instantOf, localDay, yearRange } from './communications.recurrence.ts'
import type { Communication, CommunicationInput, CommunicationUpdate, ReportRow } from './communications.schemas.ts'

/** What a client decides; status after delivery and change_log are the server's. */
interface Fields {
  subject: string
  message: string
  status: CommunicationStatus
  sender_id: string
  send_at: Date
  recurrent: Recurrence
  recurrent_until: string | null
  action_required: 'none' | 'acknowledge'
  destination_team_ids: string[]
  destination_subsidiary_ids: string[]
  attachments: AttachmentRef[]
}

const FIELD_NAMES: (keyof Fields)[] = [
  'subject',
  'message',
  'status',
  'sender_id',
  'send_at',
  'recurrent',
  'recurrent_until',
  'action_required',
  'destination_team_ids',
  'destination_subsidiary_ids',
  'attachments',
]

const LOGGED_TEXT_MAX = 200

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function createCommunicationsService(deps: {
  db: Kysely<DB>
  repo: CommunicationsRepository
  delivery: Pick<CommunicationDelivery, 'schedule' | 'cancel'>
  clock: Clock
}) {
  const { repo, clock } = deps

  async function timezoneOf(companyId: string): Promise<string> {
    const timeZone = await repo.companyTimezone(companyId)
    if (!timeZone) throw new NotFound('Company')
    return timeZone
  }

  const communicationEventObject = (stored: StoredObject): Communication =>
    view({ ...(stored as CommunicationRecord), send_at: storedTime(stored.send_at)! })

  async function resolveReferences(
    companyId: string,
    input: CommunicationUpdate,
    allowedSenders: string[],
  ): Promise<Partial<Fields>> {
    const out: Partial<Fields> = {}
    if (input.destination_team_ids) {
      const ids = [...new Set(input.destination_team_ids)]
      const known = await repo.teamIds(companyId, ids)
      const unknown = ids.find((id) => !known.has(id))
      if (unknown) throw new ValidationError(`body/destination_team_ids: ${unknown} is not a team of this company`)
      out.destination_team_ids = ids
    }
    if (input.destination_subsidiary_ids) {
      const ids = [...new Set(input.destination_subsidiary_ids)]
      const known = await repo.subsidiaryIds(companyId, ids)
      const unknown = ids.find((id) => !known.has(id))
      if (unknown)
        throw new ValidationError(`body/destination_subsidiary_ids: ${unknown} is not a subsidiary of this company`)
      out.destination_subsidiary_ids = ids
    }
    if (input.attachments) {
      const ids = [...new Set(input.attachments.map((a) => a.id))]
      const refs = new Map((await repo.attachmentRefs(companyId, ids)).map((r) => [r.id, r]))
      const unknown = ids.find((id) => !refs.has(id))
      if (unknown)
        throw new ValidationError(`body/attachments: ${unknown} is not an attachment uploaded by this company`)
      out.attachments = ids.map((id) => refs.get(id)!)
    }
    if (input.sender_id !== undefined) {
      const ok =
        allowedSenders.includes(input.sender_id) ||
        (UUID.test(input.sender_id) && (await repo.contractExists(companyId, input.sender_id)))
      if (!ok)
        throw new ValidationError(
          'body/sender_id must be the id of the calling client or of a contract of this company',
        )
      out.sender_id = input.sender_id
    }
    for (const key of ['subject', 'message', 'status', 'recurrent', 'recurrent_until', 'action_required'] as const) {
      if (input[key] !== undefined) (out as Record<string, unknown>)[key] = input[key]
    }
    if (input.send_at !== undefined) out.send_at = new Date(input.send_at)
    return out
  }

  function checkConsistency(f: Fields, timeZone: string) {
    if (Number.isNaN(f.send_at.getTime())) throw new ValidationError('body/send_at must be a valid date-time')
    if (f.recurrent === 'none' && f.recurrent_until !== null)
      throw new ValidationError('body/recurrent_until must be null when recurrent is none')
    if (f.recurrent !== 'none') {
      if (f.recurrent_until === null)
        throw new ValidationError('body/recurrent_until is required when recurrent is not none')
      if (!isRealDay(f.recurrent_until))
        throw new ValidationError('body/recurrent_until must be a real day (YYYY-MM-DD)')
      if (f.recurrent_until < localDay(f.send_at, timeZone))
        throw new ValidationError('body/recurrent_until must not be before the day of send_at')
    }
    if (f.status === 'scheduled' && f.destination_team_ids.length === 0 && f.destination_subsidiary_ids.length === 0) {
      throw new ValidationError(
        'A scheduled communication needs a destination: body/destination_team_ids or ' +
          'body/destination_subsidiary_ids must not be empty',
      )
    }
  }

  // From a year before now (older occurrences would only collapse into the latest) to the end of
  // 2199, the last year the list's `year` reads.
  function checkSendAtBounds(sendAt: Date, timeZone: string) {
    const earliest = clock.now()
    earliest.setUTCFullYear(earliest.getUTCFullYear() - 1)
    const end = instantOf({ year: 2200, month: 1, day: 1, hour: 0, minute: 0, second: 0, ms: 0 }, timeZone)
    if (sendAt < earliest || sendAt >= end) {
      throw new ValidationError(
        `body/send_at must be no earlier than one year ago (${earliest.toISOString()}) ` +
          `and before 2200-01-01 on the company's calendar (${end.toISOString()})`,
      )
    }
  }

  return {
    async create(companyId: string, input: CommunicationInput, actor: string): Promise<string> {
      const timeZone = await timezoneOf(companyId)
      const status = input.status ?? 'scheduled'
      if (status !== 'draft' && status !== 'scheduled')
        throw new ValidationError('body/status must be draft or scheduled when a communication is created')
      const resolved = await resolveReferences(companyId, input, [actor])
      const fields: Fields = {
        recurrent: 'none',
        recurrent_until: null,
        action_required: 'none',
        sender_id: actor,
        destination_team_ids: [],
        destination_subsidiary_ids: [],
        attachments: [],
        ...resolved,
        subject: input.subject,
        message: input.message,
        send_at: new Date(input.send_at),
        status,
      }
      checkConsistency(fields, timeZone)
      checkSendAtBounds(fields.send_at, timeZone)
      const now = clock.now()
      const id = randomUUID()
      const entry: ChangeLogEntry = {
        at: now.toISOString(),
        by: actor,
        action: 'created',
        changes: diff(undefined, fields),
      }
      // Occurrences already past collapse into the most recent one, delivered at once.
      const first = status === 'scheduled' ? firstToDeliver(fields, now, timeZone) : null
      await deps.db.transaction().execute(async (trx) => {
        await repo.insert(trx, {
          company_id: companyId,
          id,
          ...columns(fields),
          change_log: JSON.stringify([entry]),
          next_send_at: first?.at ?? null,
          next_index: first?.index ?? null,
          created_at: now,
          updated_at: now,
        })
        if (first) await deps.delivery.schedule(trx, companyId, id, first.at)
      })
      return id
    },

    /** Once delivered, only `status: discontinued` is accepted; submitted and discontinued are final. */
    async update(companyId: string, id: string, input: CommunicationUpdate, actor: string): Promise<void> {
      const timeZone = await timezoneOf(companyId)
      const found = await repo.find(companyId, id)
      if (!found) throw new NotFound('Communication')
      // Before the transaction: on PGlite (one session) a query beside it would wait for it.
      const resolved = await resolveReferences(companyId, input, [actor, found.sender_id])
      await deps.db.transaction().execute(async (trx) => {
        const current = await repo.findForUpdate(trx, companyId, id)
        if (!current) throw new NotFound('Communication')
        const old = fieldsOf(current)
        const next: Fields = { ...old, ...resolved }
        const changes = diff(old, next)
        if (Object.keys(changes).length === 0) return
        if (current.status === 'submitted' || current.status === 'discontinued') {
          throw new Conflict(`The communication is ${current.status}; it can no longer be changed`)
        }
        if (changes.status && (next.status === 'active' || next.status === 'submitted')) {
          throw new ValidationError(
            'body/status: a client may set draft, scheduled or discontinued; active and submitted are set ' +
              'by the server',
          )
        }
        const delivered = current.status === 'active' || (await repo.hasDeliveredOccurrence(trx, companyId, id))
        if (delivered && !(next.status === 'discontinued' && Object.keys(changes).length === 1)) {
          throw new Conflict(
            'An occurrence of this communication has been delivered: the only change allowed is status discontinued',
          )
        }
        checkConsistency(next, timeZone)
        // Only a new send_at is bounded: an old one can be sent back as read.
        if (changes.send_at) checkSendAtBounds(next.send_at, timeZone)
        const now = clock.now()
        const entry: ChangeLogEntry = {
          at: now.toISOString(),
          by: actor,
          action: next.status === 'discontinued' ? 'discontinued' : 'updated',
          changes,
        }
        const first = next.status === 'scheduled' ? firstToDeliver(next, now, timeZone) : null
        const after = first?.at ?? null
        await repo.update(trx, companyId, id, {
          ...columns(next),
          change_log: JSON.stringify([...current.change_log, entry]),
          next_send_at: after,
          next_index: first?.index ?? null,
          updated_at: now,
        })
        // An unmoved pending occurrence keeps its job: rewriting it would wait on a run in progress.
        const pending = current.next_send_at
        if (after?.getTime() !== pending?.getTime()) {
          if (pending) await deps.delivery.cancel(trx, id, pending)
          if (after) await deps.delivery.schedule(trx, companyId, id, after)
        }
      })
    },

    async get(companyId: string, id: string): Promise<Communication> {
      const row = await repo.find(companyId, id)
      if (!row) throw new NotFound('Communication')
      return view(row)
    },

    communicationEventObject,

    /**
     * An occurrence has no GET of its own: its event's object is the communication as the delivery
     * left it (read now if not stored); without it (gone), the occurrence's own fields.
     */
    async occurrenceEventObject(stored: StoredObject): Promise<Communication | OccurrenceFields> {
      if (stored.communication) return communicationEventObject(stored.communication)
      const row = 'communication' in stored ? undefined : await repo.find(stored.company_id, stored.communication_id)
      if (row) return view(row)
      const sendAt = storedTime(stored.send_at)!.toISOString()
      return { id: stored.communication_id, company_id: stored.company_id, send_at: sendAt }
    },

    async list(
      companyId: string,
      query: { year?: number; status?: CommunicationStatus },
      page: KeysetPage = {},
    ): Promise<Paged<Communication>> {
      const timeZone = await timezoneOf(companyId)
      const [from, to] = query.year !== undefined ? yearRange(query.year, timeZone) : [undefined, undefined]
      const paged = await repo.list(companyId, { from, to, status: query.status }, page)
      return { ...paged, items: paged.items.map(view) }
    },

    /** Oldest occurrence first. */
    async report(companyId: string, id: string, page: KeysetPage = {}): Promise<Paged<ReportRow>> {
      const rows = await repo.report(companyId, id)
      if (!rows) throw new NotFound('Communication')
      return pageInMemory(
        rows.map((r) => ({
          send_at: r.send_at.toISOString(),
          recipients: Number(r.recipients),
          delivered: Number(r.delivered),
          opened: Number(r.opened),
          actions_done: Number(r.actions_done),
        })),
        page,
        (r) => [r.send_at],
      )
    },
  }
}

export type CommunicationsService = ReturnType<typeof createCommunicationsService>

type OccurrenceFields = Pick<Communication, 'id' | 'company_id' | 'send_at'>

function fieldsOf(row: CommunicationRecord): Fields {
  return {
    subject: row.subject,
    message: row.message,
    status: row.status,
    sender_id: row.sender_id,
    send_at: row.send_at,
    recurrent: row.recurrent,
    recurrent_until: row.recurrent_until,
    action_required: row.action_required,
    destination_team_ids: row.destination_team_ids,
    destination_subsidiary_ids: row.destination_subsidiary_ids,
    attachments: row.attachments,
  }
}

function columns(f: Fields) {
  return { ...f, attachments: JSON.stringify(f.attachments) }
}

/**
 * `{field: [old, new]}` for every field that differs. Long text is recorded as `{length, sha256}`:
 * copying it at each update bloats the log, and the hash still tells versions apart.
 */
function diff(old: Fields | undefined, next: Fields): Record<string, [unknown, unknown]> {
  // jsonb reorders object keys: attachments are compared as {id, name, mime}.
  const plain = (v: unknown) =>
    v instanceof Date
      ? v.toISOString()
      : Array.isArray(v)
        ? v.map((x) => (typeof x === 'object' && x !== null ? { id: x.id, name: x.name, mime: x.mime } : x))
        : v
  const changes: Record<string, [unknown, unknown]> = {}
  for (const key of FIELD_NAMES) {
    const a = old ? plain(old[key]) : null
    const b = plain(next[key])
    if (JSON.stringify(a) !== JSON.stringify(b)) changes[key] = [loggedValue(a), loggedValue(b)]
  }
  return changes
}

/** Also the companies' change_log. */
export function loggedValue(value: unknown): unknown {
  if (typeof value !== 'string') return value
  const length = [...value].length
  return length > LOGGED_TEXT_MAX ? { length, sha256: createHash('sha256').update(value, 'utf8').digest('hex') } : value
}

export function view(row: CommunicationRecord): Communication {
  return {
    id: row.id,
    company_id: row.company_id,
    subject: row.subject,
    message: row.message,
    status: row.status,
    sender_id: row.sender_id,
    send_at: row.send_at.toISOString(),
    recurrent: row.recurrent,
    recurrent_until: row.recurrent_until,
    action_required: row.action_required,
    destination_team_ids: row.destination_team_ids,
    destination_subsidiary_ids: row.destination_subsidiary_ids,
    attachments: row.attachments,
    change_log: row.change_log,
  }
}
