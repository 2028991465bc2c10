import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely'

/** Row types of the tables the migrations create; the one place that names columns for TypeScript. */

type Timestamp = ColumnType<Date, Date | string, Date | string>
type CreatedAt = ColumnType<Date, Date | string | undefined, Date | string>
type Json<T> = ColumnType<T, string, string>
type JsonWithDefault<T> = ColumnType<T, string | undefined, string>
type UpdatedAt = ColumnType<Date, Date | string | undefined, Date | string>

export interface SigningKeysTable {
  kid: string
  private_jwk: Json<Record<string, unknown>>
  public_jwk: Json<Record<string, unknown>>
  created_at: CreatedAt
  /** Its place in the sequence of keys (unique). */
  generation: number
  /** When it starts signing; it is published from its creation. */
  active_from: Date
  /** When it stops verifying (null until a next key exists). */
  retire_at: Date | null
}

/** What a platform client found of a company's VAT number (it sets it; a new number starts not_validated). */
export type VatNumberStatus = 'valid' | 'invalid' | 'not_validated'

export interface CompaniesTable {
  id: string
  name: string
  address: string | null
  city: string | null
  province: string | null
  zip: string | null
  country: string
  phone: string | null
  vat: string | null
  /** The VAT identification number with its country prefix (migration 0016): reverse charge. */
  vat_number: ColumnType<string | null, string | null | undefined, string | null>
  /**
   * Whether a platform client checked vat_number (migration 0041): reverse charge only while `valid`; null without a
   * number.
   */
  vat_number_status: ColumnType<VatNumberStatus | null, VatNumberStatus | null | undefined, VatNumberStatus | null>
  fiscal_code: string | null
  pec: string | null
  codice_destinatario: string | null
  billing_email: string | null
  admin_user_id: string | null
  admin_user_email: string | null
  timezone: string
  number_of_employees: number | null
  location_info: Json<{ long: string; lat: string } | null> | null
  preferences: JsonWithDefault<Record<string, unknown>>
  disabled_at: Timestamp | null
  /** Each PATCH, as communications record their changes (migration 0018); not shown in the Company. */
  change_log: JsonWithDefault<ChangeLogEntry[]>
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface OauthClientsTable {
  client_id: string
  secret_hash: string
  name: string
  company_id: string | null
  scopes: string[]
  created_at: CreatedAt
  revoked_at: Timestamp | null
}

export interface PlansTable {
  id: string
  sku: string
  name: string
  price_cents: ColumnType<number, number, number>
  plan_family: string
  period_unit: 'month' | 'year'
  features: string[]
  /** The ISO 4217 code price_cents counts minor units of. */
  currency_code: string
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface ProductsTable {
  id: string
  sku: string
  name: string
  visible: boolean
  subscription_manager: 'local' | 'chargebee'
  allowed_plans: string[]
  category: string | null
  brand: string | null
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface AddonsTable {
  id: string
  name: string
  price_cents: number
  period_unit: 'month' | 'year'
  /** The ISO 4217 code price_cents counts minor units of. */
  currency_code: string
  created_at: CreatedAt
}

export interface CouponsTable {
  id: string
  code: string
  name: string
  discount_type: 'percentage' | 'fixed_amount'
  discount_value_minor: number
  /** A fixed amount's ISO 4217 code; null for a percentage. */
  currency_code: string | null
  valid_till: string | null
  max_redemptions: number | null
  redemptions: Generated<number>
  /** Chargebee's coupon fields: how long and on what the discount applies. */
  duration_type: Generated<'one_time' | 'forever' | 'limited_period'>
  duration_month: number | null
  apply_on: Generated<'invoice_amount' | 'each_specified_item'>
  plan_ids: Generated<string[]>
  addon_ids: Generated<string[]>
  created_at: CreatedAt
}

/** A company that applied a coupon (once, however often it re-applies it). */
export interface CouponRedemptionsTable {
  coupon_id: string
  company_id: string
  redeemed_at: CreatedAt
  /** What it had discounted when the company took it off (billing/coupons.ts `usageToJson`). */
  usage: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>
}

export interface SubsidiariesTable {
  company_id: string
  id: string
  name: string
  city: string | null
  country: string | null
  created_at: CreatedAt
}

export interface ContractsTable {
  company_id: string
  id: string
  first_name: string
  last_name: string
  email: string | null
  subsidiary_id: string | null
  active: Generated<boolean>
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface TeamsTable {
  company_id: string
  id: string
  name: string
  code: string
  subsidiary_id: string | null
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface TeamMembersTable {
  company_id: string
  team_id: string
  contract_id: string
  is_leader: Generated<boolean>
  created_at: CreatedAt
}

export interface HolidaysTable {
  company_id: string
  id: string
  subsidiary_id: string | null
  name: string
  day: string
  is_worker_holiday: boolean
  recurrent: 'none' | 'yearly'
  recurrent_until: string | null
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export type SubscriptionStatus = 'future' | 'in_trial' | 'active' | 'non_renewing' | 'paused' | 'cancelled'

export interface SubscriptionAddon {
  id: string
  quantity: number
}
/** A card as kept: never its number. `test_behaviour` is what test mode derived from the number. */
export interface PaymentSource {
  brand: string
  last4: string
  expiry_month: number
  expiry_year: number
  test_behaviour?: CardTestBehaviour
}
/**
 * `succeeds`: every charge goes through; `charge_fails`: the card is accepted but every charge fails (4000 0000 0000
 * 0341).
 */
export type CardTestBehaviour = 'succeeds' | 'charge_fails'

export interface SubscriptionsTable {
  company_id: string
  id: string
  customer_id: string
  provider: 'local' | 'chargebee'
  product_sku: string
  plan_sku: string
  plan_quantity: number
  addons: JsonWithDefault<SubscriptionAddon[]>
  coupon_code: string | null
  status: SubscriptionStatus
  trial_start: Timestamp | null
  trial_end: Timestamp | null
  current_term_start: Timestamp | null
  current_term_end: Timestamp | null
  cancelled_at: Timestamp | null
  cancel_scheduled_at: Timestamp | null
  payment_source: Json<PaymentSource | null> | null
  billing_anchor_day: number | null
  cancellation_reason: string | null
  cancellation_message: string | null
  /** What the coupon has discounted (billing/coupons.ts `CouponUsage`). */
  coupon_applied_at: Timestamp | null
  coupon_applied_count: Generated<number>
  coupon_apply_till: Timestamp | null
  coupon_period_start: Timestamp | null
  coupon_period_discounts: JsonWithDefault<Record<string, number>>
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface SubscriptionEventsTable {
  company_id: string
  id: Generated<number>
  subscription_id: string
  event_type: string
  from_status: string | null
  to_status: string | null
  details: JsonWithDefault<Record<string, unknown>>
  actor: string
  occurred_at: Timestamp
}

/** Hosted pages and portal sessions of the local billing provider (src/modules/hosted). */
export type HostedPageKind = 'manager' | 'portal' | 'payment'
export type HostedPageState = 'created' | 'requested' | 'succeeded' | 'cancelled' | 'logged_in' | 'logged_out'
export interface HostedPagesTable {
  id: string
  company_id: string
  subscription_id: string
  kind: HostedPageKind
  token_hash: string
  state: HostedPageState
  redirect_url: string
  /** The client whose token asked for the page; null on older pages. */
  client_id: string | null
  created_at: Timestamp
  updated_at: Timestamp
  expires_at: Timestamp
}

/** Wrong secrets sent for one client_id, known or not, counted for every instance (oauth.guesses.ts). */
export interface ClientSecretGuessesTable {
  client_id: string
  /** The wrong secrets within the last minute, oldest first; emptied when they lock the id. */
  wrong_at: Date[]
  locked_until: Date | null
  /** When neither the window nor the lock holds anything more. */
  stale_at: Date
}

export interface IdempotencyKeysTable {
  owner: string
  key: string
  request_hash: string
  status_code: number | null
  response_headers: Json<Record<string, string>> | null
  response_body: string | null
  created_at: CreatedAt
}

export interface JobsTable {
  id: Generated<number>
  kind: string
  key: string
  /** Whose work it is (NULL: the platform's); the scheduler serves companies in turn. */
  company_id: string | null
  run_at: Timestamp
  payload: JsonWithDefault<Record<string, unknown>>
  attempts: Generated<number>
  last_error: string | null
  done_at: Timestamp | null
  created_at: CreatedAt
}

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

export type InvoiceStatus = 'paid' | 'payment_due' | 'not_paid' | 'voided'
export type InvoiceKind = 'activation' | 'renewal' | 'change'
export type DunningStatus = 'in_progress' | 'exhausted' | 'success'

/** The local engine's invoices (migration 0014); money in minor units. */
export interface InvoicesTable {
  company_id: string
  id: string
  seq: Generated<number>
  subscription_id: string
  kind: InvoiceKind
  status: InvoiceStatus
  date: Timestamp
  due_date: Timestamp
  period_start: Timestamp
  period_end: Timestamp
  line_items: Json<unknown[]>
  discounts: Json<unknown[]>
  taxes: Json<unknown[]>
  sub_total: number
  total: number
  credits_applied: number
  amount_paid: number
  /** Settled by adjustment credit notes and written off (a provider's; 0 for the local engine's). */
  amount_adjusted: ColumnType<number, number | undefined, number>
  write_off_amount: ColumnType<number, number | undefined, number>
  amount_due: number
  currency_code: string
  paid_at: Timestamp | null
  dunning_status: DunningStatus | null
  attempt_count: ColumnType<number, number | undefined, number>
  next_retry_at: Timestamp | null
  created_at: CreatedAt
}

export interface CreditNotesTable {
  company_id: string
  id: string
  seq: Generated<number>
  subscription_id: string
  reference_invoice_id: string | null
  type: 'adjustment' | 'refundable'
  reason_code: string
  /** What it credits, line by line, and its tax (older rows: none, sub_total = total). */
  line_items: JsonWithDefault<unknown[]>
  discounts: JsonWithDefault<unknown[]>
  taxes: JsonWithDefault<unknown[]>
  sub_total: number
  total: number
  amount_allocated: number
  currency_code: string
  date: Timestamp
  created_at: CreatedAt
}

export interface CreditAllocationsTable {
  company_id: string
  credit_note_id: string
  invoice_id: string
  amount: number
}

export interface DB {
  invoices: InvoicesTable
  credit_notes: CreditNotesTable
  credit_allocations: CreditAllocationsTable
  signing_keys: SigningKeysTable
  companies: CompaniesTable
  oauth_clients: OauthClientsTable
  plans: PlansTable
  products: ProductsTable
  addons: AddonsTable
  coupons: CouponsTable
  coupon_redemptions: CouponRedemptionsTable
  subsidiaries: SubsidiariesTable
  contracts: ContractsTable
  teams: TeamsTable
  team_members: TeamMembersTable
  holidays: HolidaysTable
  subscriptions: SubscriptionsTable
  subscription_events: SubscriptionEventsTable
  hosted_pages: HostedPagesTable
  idempotency_keys: IdempotencyKeysTable
  client_secret_guesses: ClientSecretGuessesTable
  jobs: JobsTable
  communications: CommunicationsTable
  communication_occurrences: CommunicationOccurrencesTable
  communication_messages: CommunicationMessagesTable
  communication_attachments: CommunicationAttachmentsTable
  webhook_events: WebhookEventsTable
  provider_subscription_versions: ProviderSubscriptionVersionsTable
  provider_object_versions: ProviderObjectVersionsTable
  events: EventsTable
  webhook_endpoints: WebhookEndpointsTable
  webhook_deliveries: WebhookDeliveriesTable
  webhook_attempts: WebhookAttemptsTable
  webhook_fanouts: WebhookFanoutsTable
  webhook_delivered_batches: WebhookDeliveredBatchesTable
}

export type CompanyRow = Selectable<CompaniesTable>
export type PlanRow = Selectable<PlansTable>
export type ProductRow = Selectable<ProductsTable>
export type SubscriptionRow = Selectable<SubscriptionsTable>
export type NewSubscription = Insertable<SubscriptionsTable>
export type SubscriptionUpdate = Updateable<SubscriptionsTable>
export type HostedPageRow = Selectable<HostedPagesTable>

export type WebhookOutcome = 'applied' | 'unchanged' | 'stale' | 'ignored'
export interface WebhookEventsTable {
  provider: 'chargebee'
  event_id: string
  event_type: string
  occurred_at: Timestamp
  received_at: Timestamp
  outcome: WebhookOutcome
  subscription_id: string | null
}

/** The newest provider state (Chargebee's resource_version) applied to a subscription from a webhook. */
export interface ProviderSubscriptionVersionsTable {
  subscription_id: string
  resource_version: ColumnType<string, string | number | bigint, string | number | bigint>
  occurred_at: Timestamp
}

/** The newest Chargebee resource_version applied to an invoice, credit note or card (migration 0022). */
export interface ProviderObjectVersionsTable {
  company_id: string
  object_id: string
  object_type: 'invoice' | 'credit_note' | 'payment_source'
  provider_object_id: string
  resource_version: ColumnType<string, string | number | bigint, string | number | bigint>
}

export type InvoiceRow = Selectable<InvoicesTable>
export type CreditNoteRow = Selectable<CreditNotesTable>
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
