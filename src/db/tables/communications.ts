import type { Generated } from 'kysely'
import type { Timestamp, CreatedAt, Json, UpdatedAt } from './columns.ts'

export type CommunicationStatus = 'draft' | 'scheduled' | 'active' | 'submitted' | 'discontinued'
export type Recurrence = 'none' | 'daily' | 'weekly' | 'monthly' | 'yearly'
export interface AttachmentRef {
  id: string
  name: string
  mime: string
}
export interface ChangeLogEntry {
  at: string
  by: string
  action: 'created' | 'updated' | 'discontinued' | 'delivered'
  changes: Record<string, [unknown, unknown]>
  occurrence?: string
}

export interface CommunicationsTable {
  company_id: string
  id: string
  subject: string
  message: string
  status: CommunicationStatus
  sender_id: string
  send_at: Timestamp
  recurrent: Recurrence
  recurrent_until: string | null
  action_required: 'none' | 'acknowledge'
  destination_team_ids: string[]
  destination_subsidiary_ids: string[]
  attachments: Json<AttachmentRef[]>
  change_log: Json<ChangeLogEntry[]>
  next_send_at: Timestamp | null
  next_index: number | null
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface CommunicationOccurrencesTable {
  company_id: string
  communication_id: string
  send_at: Timestamp
  delivered_at: Timestamp
  /** Counters of the report, kept by the statements that write the messages. */
  recipients: Generated<number>
  opened: Generated<number>
  actions_done: Generated<number>
}

export interface CommunicationMessagesTable {
  company_id: string
  id: string
  communication_id: string
  contract_id: string
  send_at: Timestamp
  delivered_at: Timestamp
  opened_at: Timestamp | null
  action_done_at: Timestamp | null
}

export interface CommunicationAttachmentsTable {
  company_id: string
  id: string
  name: string
  mime: string
  size: number
  content: Buffer
  created_by: string
  created_at: CreatedAt
}
