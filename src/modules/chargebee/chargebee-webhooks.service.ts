import type { Kysely } from 'kysely'
import type { Clock } from '../../core/clock.ts'
import type { DB, PaymentSource, SubscriptionRow, WebhookOutcome } from '../../db/tables.ts'
import { ValidationError } from '../../core/errors.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import {
  cardOf,
  isCbSubscription,
  type CbCard,
  type CbPaymentSource,
  type CbSubscription,
} from './chargebee.mapping.ts'
import {
  isCbCreditNote,
  isCbInvoice,
  ledgerId,
  versionOf as objectVersion,
  type CbCreditNote,
  type CbInvoice,
} from './chargebee.ledger-mapping.ts'
import type { SubscriptionsService } from '../subscriptions/index.ts'
import type { ChargebeeWebhooksRepository } from './chargebee-webhooks.repository.ts'
import type { ChargebeeProvider } from './chargebee.provider.ts'
import type { ProviderLedger, CopyOutcome } from './chargebee-ledger.service.ts'
import { LEDGER_EVENTS, PAYMENT_SOURCE_EVENTS, SUBSCRIPTION_EVENTS, isFollowed } from './chargebee.event-types.ts'
import { CHARGEBEE_ACTOR, chargebeeState, saveChargebeeState } from './chargebee.state.ts'

export { CHARGEBEE_ACTOR }

export interface ChargebeeEvent {
  id: string
  event_type: string
  occurred_at: number
  content: Record<string, unknown>
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** A malformed object is the sender's error (400). */
interface EventParts {
  subscription?: CbSubscription
  card?: PaymentSource | null
  sourceId?: string
  sourceVersion?: bigint
  /** Orders the subscription's card across all card events (exact: Chargebee's resource_version). */
  cardVersion?: { version: bigint; exact: boolean }
  invoices: CbInvoice[]
  creditNotes: CbCreditNote[]
}

type Versioned = { resource_version?: number; updated_at?: number }

function cardVersionOf(copy: Versioned | undefined, event: ChargebeeEvent): { version: bigint; exact: boolean } {
  if (Number.isSafeInteger(copy?.resource_version)) return { version: BigInt(copy!.resource_version!), exact: true }
  return { version: BigInt(Math.trunc((copy?.updated_at ?? event.occurred_at) * 1000)), exact: false }
}

const listOf = (value: unknown): unknown[] =>
  value === undefined || value === null ? [] : Array.isArray(value) ? value : [value]

function partsOf(event: ChargebeeEvent): EventParts {
  const type = event.event_type
  const c = event.content
  const parts: EventParts = { invoices: [], creditNotes: [] }
  if (type in SUBSCRIPTION_EVENTS || (LEDGER_EVENTS.has(type) && c.subscription !== undefined)) {
    if (!isCbSubscription(c.subscription))
      throw new ValidationError(
        'body/content/subscription must be a Chargebee subscription with id, customer_id, status and ' +
          'subscription_items (or plan_id)',
      )
    parts.subscription = c.subscription
  }
  if (type in PAYMENT_SOURCE_EVENTS) {
    const source = c.payment_source as (CbPaymentSource & Versioned & { id?: string }) | undefined
    const card = c.card as (CbCard & Versioned) | undefined
    parts.card = cardOf(source?.card ?? card)
    if (!parts.card)
      throw new ValidationError(
        'body/content/payment_source must carry a card with last4, expiry_month and expiry_year',
      )
    if (typeof source?.id === 'string') {
      parts.sourceId = source.id
      parts.sourceVersion = objectVersion(source)
    }
    parts.cardVersion = cardVersionOf(source ?? card, event)
  }
  if (LEDGER_EVENTS.has(type)) {
    for (const [i, invoice] of listOf(c.invoice).entries()) {
      if (!isCbInvoice(invoice))
        throw new ValidationError(
          `body/content/invoice${Array.isArray(c.invoice) ? `/${i}` : ''} must be ` +
            `a Chargebee invoice with id, customer_id and status`,
        )
      parts.invoices.push(invoice)
    }
  }
  // A subscription event may carry its invoice and credit notes too.
  if (LEDGER_EVENTS.has(type) || type in SUBSCRIPTION_EVENTS) {
    if (!LEDGER_EVENTS.has(type)) parts.invoices.push(...listOf(c.invoice).filter(isCbInvoice))
    for (const [i, note] of listOf(c.credit_note).entries()) {
      if (!isCbCreditNote(note)) {
        if (!LEDGER_EVENTS.has(type)) continue
        throw new ValidationError(
          `body/content/credit_note${Array.isArray(c.credit_note) ? `/${i}` : ''} must be ` +
            `a Chargebee credit note with id, customer_id and type`,
        )
      }
      parts.creditNotes.push(note)
    }
  }
  if (LEDGER_EVENTS.has(type) && parts.invoices.length + parts.creditNotes.length === 0 && !parts.subscription) {
    throw new ValidationError("body/content must carry the event's invoice or credit_note")
  }
  return parts
}

function combined(outcomes: CopyOutcome[]): WebhookOutcome {
  if (outcomes.includes('applied')) return 'applied'
  if (outcomes.includes('unchanged')) return 'unchanged'
  return outcomes.length ? 'stale' : 'ignored'
}

/** Chargebee's payment source ids are not kept: brand, last 4 and expiry are. */
const sameCard = (a: PaymentSource | null, b: PaymentSource | null) =>
  !!a && !!b && a.last4 === b.last4 && a.expiry_month === b.expiry_month && a.expiry_year === b.expiry_year

/**
 * Chargebee's webhooks: each event applies once, and a copy only when its `resource_version` is newer.
 * A copy older than this API's last change of the row is not trusted: Chargebee is read instead.
 */
export function createChargebeeWebhooksService(deps: {
  db: Kysely<DB>
  repo: ChargebeeWebhooksRepository
  clock: Clock
  subscriptions: Pick<
    SubscriptionsService,
    'lockForProvider' | 'findForProvider' | 'planExists' | 'recordProviderChange'
  >
  ledger: ProviderLedger
  chargebee?: Pick<ChargebeeProvider, 'fetchSubscription'>
}) {
  const { db, repo, clock } = deps

  /** Chargebee's resource_version, else its updated_at or the event's time, in ms. */
  function versionOf(s: CbSubscription, event: ChargebeeEvent): bigint {
    if (Number.isSafeInteger(s.resource_version)) return BigInt(s.resource_version!)
    return BigInt(Math.trunc((s.updated_at ?? event.occurred_at) * 1000))
  }

  /** A deletion always applies: it is final. */
  async function applySubscription(
    trx: Executor,
    before: SubscriptionRow,
    copy: CbSubscription,
    event: ChargebeeEvent,
    occurredAt: Date,
  ): Promise<CopyOutcome> {
    const verb = SUBSCRIPTION_EVENTS[event.event_type] ?? 'changed'
    const deleted = verb === 'deleted'
    if (!(await repo.advanceVersion(trx, before.id, versionOf(copy, event), occurredAt)) && !deleted) return 'stale'
    let current: { subscription: CbSubscription; card?: PaymentSource | null } = { subscription: copy }
    if (!deleted && deps.chargebee && occurredAt.getTime() < before.updated_at.getTime()) {
      current = await deps.chargebee.fetchSubscription(before.id)
      await repo.advanceVersion(trx, before.id, versionOf(current.subscription, event), occurredAt)
    }
    const after = chargebeeState(before, current.subscription, current.card, deleted ? { deletedAt: occurredAt } : {})
    const changed = await saveChargebeeState(trx, deps.subscriptions, before, after, {
      event: verb,
      at: occurredAt,
      now: clock.now(),
      details: { provider_event: { id: event.id, type: event.event_type } },
    })
    return changed ? 'applied' : 'unchanged'
  }

  /**
   * Ordered twice: by the payment source's own version, and across every card event for the
   * subscription's one card (`card_*` events carry no source id, and a late event of an older source
   * must not put its card back).
   */
  async function applyCard(
    trx: Executor,
    before: SubscriptionRow,
    parts: EventParts,
    event: ChargebeeEvent,
    occurredAt: Date,
  ): Promise<CopyOutcome> {
    const verb = PAYMENT_SOURCE_EVENTS[event.event_type]!
    if (
      parts.sourceId &&
      !(await deps.ledger.advanceVersion(trx, {
        company_id: before.company_id,
        object_id: ledgerId('payment_source', parts.sourceId),
        object_type: 'payment_source',
        provider_object_id: parts.sourceId,
        resource_version: parts.sourceVersion!.toString(),
      }))
    )
      return 'stale'
    const removed = verb === 'payment_source_deleted'
    if (removed && !sameCard(before.payment_source, parts.card!)) return 'unchanged'
    if (
      !(await deps.ledger.advanceVersion(
        trx,
        {
          company_id: before.company_id,
          object_id: ledgerId('payment_source', `card-of/${before.company_id}`),
          object_type: 'payment_source',
          provider_object_id: before.company_id,
          resource_version: parts.cardVersion!.version.toString(),
        },
        { orEqual: !parts.cardVersion!.exact },
      ))
    )
      return 'stale'
    const after = { ...before, payment_source: removed ? null : parts.card! }
    const changed = await deps.subscriptions.recordProviderChange(trx, before, after, {
      event: verb,
      actor: CHARGEBEE_ACTOR,
      at: occurredAt,
      now: clock.now(),
      details: { provider_event: { id: event.id, type: event.event_type } },
    })
    return changed ? 'applied' : 'unchanged'
  }

  /** By its subscription's id (our UUID), else its customer (our company). */
  function referenceOf(event: ChargebeeEvent, parts: EventParts): { id: string } | { customerId: string } | null {
    const ledgerObject = parts.invoices[0] ?? parts.creditNotes[0]
    const subscriptionId = parts.subscription?.id ?? ledgerObject?.subscription_id
    if (subscriptionId !== undefined) return UUID.test(subscriptionId) ? { id: subscriptionId } : null
    const customerId = ledgerObject?.customer_id ?? (event.content.customer as { id?: unknown } | undefined)?.id
    return typeof customerId === 'string' ? { customerId } : null
  }

  return {
    /** A repeated event answers `duplicate` and changes nothing. */
    async chargebee(event: ChargebeeEvent): Promise<{ event_id: string; outcome: WebhookOutcome | 'duplicate' }> {
      const parts = isFollowed(event.event_type) ? partsOf(event) : undefined
      const occurredAt = new Date(event.occurred_at * 1000)

      return db.transaction().execute(async (trx) => {
        const fresh = await repo.recordEvent(trx, {
          provider: 'chargebee',
          event_id: event.id,
          event_type: event.event_type,
          occurred_at: occurredAt,
          received_at: clock.now(),
        })
        if (!fresh) return { event_id: event.id, outcome: 'duplicate' as const }
        const finish = async (outcome: WebhookOutcome, subscriptionId: string | null = null) => {
          await repo.setOutcome(trx, 'chargebee', event.id, outcome, subscriptionId)
          return { event_id: event.id, outcome }
        }
        if (!parts) return finish('ignored')

        // Only a subscription this service made on Chargebee.
        const ref = referenceOf(event, parts)
        const found = ref && (await deps.subscriptions.findForProvider(trx, ref))
        if (found?.provider !== 'chargebee') return finish('ignored')
        const before = await deps.subscriptions.lockForProvider(trx, found.company_id)
        if (!before || before.id !== found.id) return finish('ignored')

        const outcomes: CopyOutcome[] = []
        let row: SubscriptionRow = before
        const reread = async () => {
          row = (await deps.subscriptions.lockForProvider(trx, found.company_id))!
        }
        if (parts.subscription) {
          outcomes.push(await applySubscription(trx, row, parts.subscription, event, occurredAt))
          await reread()
        }
        if (parts.card !== undefined) {
          outcomes.push(await applyCard(trx, row, parts, event, occurredAt))
          await reread()
        }
        const owner = { companyId: row.company_id, subscriptionId: row.id }
        for (const invoice of parts.invoices) {
          outcomes.push(
            await deps.ledger.applyInvoice(trx, owner, invoice, occurredAt, {
              paymentFailed: event.event_type === 'payment_failed',
              deleted: event.event_type === 'invoice_deleted',
            }),
          )
        }
        for (const note of parts.creditNotes) {
          outcomes.push(
            await deps.ledger.applyCreditNote(trx, owner, note, occurredAt, {
              deleted: event.event_type === 'credit_note_deleted',
            }),
          )
        }
        return finish(combined(outcomes), before.id)
      })
    },
  }
}

export type ChargebeeWebhooksService = ReturnType<typeof createChargebeeWebhooksService>
