import type { ColumnType, Generated } from 'kysely'
import type { Timestamp, CreatedAt, Json, JsonWithDefault, UpdatedAt } from './columns.ts'

export type SubscriptionStatus = 'future' | 'in_trial' | 'active' | 'non_renewing' | 'paused' | 'cancelled'

export interface SubscriptionAddon {
  id: string
  quantity: number
}
/** A change the renewal applies: the choice it bills. */
export interface ScheduledChange {
  plan_sku: string
  plan_quantity: number
  addons: SubscriptionAddon[]
  coupon_code: string | null
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
  /** What the coupon has discounted (billing/billing.coupons.ts `CouponUsage`). */
  coupon_applied_at: Timestamp | null
  coupon_applied_count: Generated<number>
  coupon_apply_till: Timestamp | null
  coupon_period_start: Timestamp | null
  coupon_period_discounts: JsonWithDefault<Record<string, number>>
  scheduled_change: ColumnType<ScheduledChange | null, string | null | undefined, string | null>
  /** When a pause starts (or started); with status active, one set for the term's end. */
  pause_date: Timestamp | null
  /** When a pause ends by itself. */
  resume_date: Timestamp | null
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
  object_type: 'invoice' | 'credit_note' | 'payment_source' | 'transaction'
  provider_object_id: string
  resource_version: ColumnType<string, string | number | bigint, string | number | bigint>
}
