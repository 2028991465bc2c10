import type { Generated } from 'kysely'
import type { Timestamp, CreatedAt, Json, UpdatedAt } from './columns.ts'

/** The event log: written by the tables' triggers through write_event(), never by the service's code. */
export interface EventsTable {
  seq: Generated<number>
  id: string
  type: string
  company_id: string | null
  data: Json<Record<string, unknown>>
  created_at: CreatedAt
}

/** Where events are sent; a null company_id is a platform endpoint. */
export interface WebhookEndpointsTable {
  id: string
  company_id: string | null
  url: string
  event_types: string[]
  description: string | null
  secret: string
  /** The secret the last rotation replaced, still signing until previous_secret_expires_at. */
  previous_secret: string | null
  previous_secret_expires_at: Date | null
  /** The event resources its creator could read; null: every resource. */
  resources: string[] | null
  /** The client whose token made it or last re-enabled it; null: made before creators were recorded. */
  created_by: string | null
  /** Stopped with its client or company: the last event (events.seq) it is still sent. */
  last_event_seq: number | null
  enabled: Generated<boolean>
  disabled_reason: string | null
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed'
export interface WebhookDeliveriesTable {
  id: string
  endpoint_id: string
  event_id: string
  company_id: string | null
  status: Generated<DeliveryStatus>
  attempts: Generated<number>
  /** Bumped by every claim: an outcome carrying an older one decides nothing. */
  seq: Generated<number>
  /** When a pending delivery is due: its next attempt, or the end of its current attempt's lease. */
  next_attempt_at: Timestamp | null
  created_at: CreatedAt
  delivered_at: Timestamp | null
}

/** An event owed to the endpoints that want it, until fanned out and its direct calls have outcomes. */
export interface WebhookFanoutsTable {
  event_id: string
  company_id: string | null
  lease_until: Generated<Timestamp>
  fanned_at: Timestamp | null
  /** The endpoints called at once by the fan-out whose outcome is not written yet (null: not fanned out yet). */
  direct: string[] | null
}

/** Direct calls that succeeded, one row per endpoint and outcome batch; item i of each array is one delivery. */
export interface WebhookDeliveredBatchesTable {
  id: number
  endpoint_id: string
  company_id: string | null
  recorded_at: Generated<Timestamp>
  attempt_ids: number[]
  delivery_ids: string[]
  event_ids: string[]
  started_ats: Timestamp[]
  status_codes: number[]
  durations_ms: number[]
}

export type AttemptOutcome = 'pending' | 'succeeded' | 'failed' | 'timeout' | 'error' | 'refused' | 'lost'
export interface WebhookAttemptsTable {
  id: Generated<number>
  delivery_id: string
  endpoint_id: string
  event_id: string
  attempt: number
  started_at: Timestamp
  outcome: Generated<AttemptOutcome>
  status_code: number | null
  duration_ms: number | null
  error: string | null
  next_retry_at: Timestamp | null
}
