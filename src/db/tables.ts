import type { Insertable, Selectable, Updateable } from 'kysely'
import type {
  ClientSecretGuessesTable,
  IdempotencyKeysTable,
  JobsTable,
  OauthClientsTable,
  SigningKeysTable,
} from './tables/access.ts'
import type {
  CompaniesTable,
  ContractsTable,
  HolidaysTable,
  SubsidiariesTable,
  TeamMembersTable,
  TeamsTable,
} from './tables/companies.ts'
import type {
  AddonsTable,
  CouponRedemptionsTable,
  CouponsTable,
  PlansTable,
  ProductsTable,
} from './tables/catalogue.ts'
import type {
  HostedPagesTable,
  ProviderObjectVersionsTable,
  ProviderSubscriptionVersionsTable,
  SubscriptionEventsTable,
  SubscriptionsTable,
  WebhookEventsTable,
} from './tables/subscriptions.ts'
import type {
  CreditAllocationsTable,
  CreditNotesTable,
  ExcessPaymentAllocationsTable,
  ExcessPaymentsTable,
  FatturapaProgressivesTable,
  InvoicesTable,
  ChargesTable,
  PromotionalCreditsTable,
} from './tables/invoices.ts'
import type {
  CommunicationAttachmentsTable,
  CommunicationMessagesTable,
  CommunicationOccurrencesTable,
  CommunicationsTable,
} from './tables/communications.ts'
import type {
  EventsTable,
  WebhookAttemptsTable,
  WebhookDeliveredBatchesTable,
  WebhookDeliveriesTable,
  WebhookEndpointsTable,
  WebhookFanoutsTable,
} from './tables/events.ts'
import type { AnalyticsMrrDaysTable } from './tables/analytics.ts'

/** Row types of the tables the migrations create, by area in tables/, gathered into the database Kysely sees. */

export type * from './tables/access.ts'
export type * from './tables/companies.ts'
export type * from './tables/catalogue.ts'
export type * from './tables/subscriptions.ts'
export type * from './tables/invoices.ts'
export type * from './tables/communications.ts'
export type * from './tables/events.ts'
export type * from './tables/analytics.ts'

export interface DB {
  invoices: InvoicesTable
  credit_notes: CreditNotesTable
  credit_allocations: CreditAllocationsTable
  excess_payments: ExcessPaymentsTable
  excess_payment_allocations: ExcessPaymentAllocationsTable
  promotional_credits: PromotionalCreditsTable
  charges: ChargesTable
  fatturapa_progressives: FatturapaProgressivesTable
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
  analytics_mrr_days: AnalyticsMrrDaysTable
}

export type CompanyRow = Selectable<CompaniesTable>
export type PlanRow = Selectable<PlansTable>
export type ProductRow = Selectable<ProductsTable>
export type SubscriptionRow = Selectable<SubscriptionsTable>
export type NewSubscription = Insertable<SubscriptionsTable>
export type SubscriptionUpdate = Updateable<SubscriptionsTable>
export type HostedPageRow = Selectable<HostedPagesTable>
export type InvoiceRow = Selectable<InvoicesTable>
export type CreditNoteRow = Selectable<CreditNotesTable>
export type ChargeRow = Selectable<ChargesTable>
