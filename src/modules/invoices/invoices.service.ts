import { storedTime, type StoredObject } from '../events/event-objects.ts'
import { randomUUID } from 'node:crypto'
import type { Kysely } from 'kysely'
import type { CreditNoteRow, DB, InvoiceKind, InvoiceRow, SubscriptionRow } from '../../db/tables.ts'
import { NotFound } from '../../core/errors.ts'
import type { Executor, Scheduler } from '../../jobs/scheduler.ts'
import {
  creditFor,
  type ChargedInvoice,
  type InvoiceEstimate,
  type LineItem,
  type UnusedCredit,
  chargeSucceeds,
  transitions,
} from '../billing/index.ts'
import type { InvoicesRepository } from './invoices.repository.ts'
import { cutPage, type Paged } from '../../core/paging.ts'
import type { KeysetPage } from '../../db/keyset.ts'
import { creditNoteView, invoiceView } from './invoices.views.ts'
import { createSettlements } from './invoices.settlements.ts'
import { createCreditNoteOperations } from './invoices.credit-notes.ts'
import { createCustomerCredits } from './invoices.customer-credits.ts'

export const PAYMENT_RETRY_JOB = 'invoice.payment_retry'

const DAY_MS = 86_400_000

export interface RetryPayload {
  company_id: string
  invoice_id: string
  retry: number
  retry_at: string
}

/** The subscription service cancels on `exhausted`. */
export type RetryOutcome = 'paid' | 'failed' | 'exhausted' | 'nothing'

/**
 * The local engine's ledger: invoices, credit notes, customer credits and test-mode payments with
 * dunning. Called inside the billing change's transaction, so a subscription and its ledger commit
 * together. Invariant: total = credits_applied + amount_paid + amount_due (a CHECK).
 */
export function createInvoicesService(deps: {
  db: Kysely<DB>
  repo: InvoicesRepository
  scheduler: Pick<Scheduler, 'schedule'>
  /** Days after a failed first charge on which it is retried. */
  retryDays: number[]
}) {
  const { db, repo } = deps
  const customerCredits = createCustomerCredits({ repo })

  /**
   * Uses the customer's refundable credits, then excess payments, each oldest first, in the invoice's
   * currency (decisions §9.2); its promotional credits were taken first, as a discount.
   */
  async function applyCredits(
    trx: Executor,
    invoice: Pick<InvoiceRow, 'company_id' | 'id' | 'currency_code' | 'credits_applied'>,
  ) {
    const { company_id: companyId, id: invoiceId, currency_code: currency } = invoice
    let left = invoice.credits_applied
    for (const note of await repo.availableCredits(trx, companyId, currency)) {
      if (left === 0) break
      const take = Math.min(left, note.total - note.amount_allocated)
      await repo.allocate(trx, companyId, note.id, invoiceId, take)
      left -= take
    }
    for (const excess of left > 0 ? await repo.availableExcessPayments(trx, companyId, currency) : []) {
      if (left === 0) break
      const take = Math.min(left, excess.total - excess.amount_allocated)
      await repo.allocateExcess(trx, companyId, excess.id, invoiceId, take)
      left -= take
    }
    // The estimate counted credits this ledger holds: anything else is a bug, and rolls the change back.
    if (left !== 0) throw new Error(`invoice ${invoiceId}: ${left} of the credits applied are not available`)
  }

  async function scheduleRetry(
    trx: Executor,
    invoice: Pick<InvoiceRow, 'company_id' | 'id' | 'date'>,
    retry: number,
  ): Promise<Date | null> {
    const days = deps.retryDays[retry - 1]
    if (days === undefined) return null
    const at = new Date(invoice.date.getTime() + days * DAY_MS)
    const payload: RetryPayload = {
      company_id: invoice.company_id,
      invoice_id: invoice.id,
      retry,
      retry_at: at.toISOString(),
    }
    await deps.scheduler.schedule(trx, {
      kind: PAYMENT_RETRY_JOB,
      key: `${invoice.id}#${retry}`,
      runAt: at,
      companyId: invoice.company_id,
      payload: { ...payload },
    })
    return at
  }

  function charge(s: SubscriptionRow, at: Date): boolean {
    return transitions.usableCard(s.payment_source, at) && chargeSucceeds(s.payment_source)
  }

  async function issueCredit(
    trx: Executor,
    s: SubscriptionRow,
    credit: UnusedCredit,
    reason: 'subscription_change' | 'subscription_cancellation',
    date: Date,
  ) {
    const { figures } = credit
    if (figures.total <= 0) return
    await repo.insertCreditNote(trx, {
      company_id: s.company_id,
      id: randomUUID(),
      subscription_id: s.id,
      reference_invoice_id: credit.referenceInvoiceId,
      type: 'refundable',
      reason_code: reason,
      line_items: JSON.stringify(figures.line_items),
      discounts: JSON.stringify(figures.discounts),
      sub_total: figures.sub_total,
      taxes: JSON.stringify(figures.taxes),
      total: figures.total,
      amount_allocated: 0,
      currency_code: figures.currency_code,
      date,
    })
  }

  /** Money never received is never credited: only a paid invoice counts. */
  async function paidTermInvoice(
    executor: Executor,
    s: Pick<SubscriptionRow, 'company_id' | 'id'>,
  ): Promise<ChargedInvoice | undefined> {
    const row = await repo.latestInvoice(executor, s.company_id, s.id)
    if (row?.status !== 'paid') return undefined
    return {
      id: row.id,
      line_items: row.line_items as LineItem[],
      discounts: row.discounts as ChargedInvoice['discounts'],
      taxes: row.taxes as ChargedInvoice['taxes'],
      currency_code: row.currency_code,
      period_start: row.period_start,
      period_end: row.period_end,
    }
  }

  async function markPaid(trx: Executor, invoice: InvoiceRow, at: Date) {
    await repo.updateInvoice(trx, invoice.company_id, invoice.id, {
      status: 'paid',
      amount_paid: invoice.amount_paid + invoice.amount_due,
      amount_due: 0,
      paid_at: at,
      attempt_count: invoice.attempt_count + 1,
      dunning_status: invoice.dunning_status ? 'success' : null,
      next_retry_at: null,
    })
  }

  return {
    ...createSettlements({ repo, promotional: customerCredits }),
    ...customerCredits,
    ...createCreditNoteOperations({ repo }),

    /**
     * Records an invoice the engine computed and collects it: credits first, the rest charged to the
     * card. A failed charge leaves it payment_due with its first retry scheduled.
     */
    async bill(
      trx: Executor,
      input: {
        subscription: SubscriptionRow
        kind: InvoiceKind
        invoice: InvoiceEstimate
        date: Date
        periodStart: Date
        periodEnd: Date
        unusedCredit?: UnusedCredit
      },
    ): Promise<InvoiceRow> {
      const { subscription: s, invoice: inv, date } = input
      if (input.unusedCredit) await issueCredit(trx, s, input.unusedCredit, 'subscription_change', date)
      const id = randomUUID()
      const row = await repo.insertInvoice(trx, {
        company_id: s.company_id,
        id,
        subscription_id: s.id,
        kind: input.kind,
        status: 'payment_due',
        date,
        due_date: date,
        period_start: input.periodStart,
        period_end: input.periodEnd,
        line_items: JSON.stringify(inv.line_items),
        discounts: JSON.stringify(inv.discounts),
        taxes: JSON.stringify(inv.taxes),
        sub_total: inv.sub_total,
        total: inv.total,
        credits_applied: inv.credits_applied,
        amount_paid: 0,
        amount_due: inv.amount_due,
        currency_code: inv.currency_code,
        paid_at: null,
        dunning_status: null,
        attempt_count: 0,
        next_retry_at: null,
      })
      await customerCredits.takePromotionalCredits(trx, row, inv.discounts, date)
      if (inv.credits_applied > 0) await applyCredits(trx, row)
      const charges = inv.line_items.filter((l) => l.entity_type === 'adhoc').map((l) => l.entity_id)
      await repo.markCharges(trx, s.company_id, charges, id)
      if (row.amount_due === 0) {
        await repo.updateInvoice(trx, s.company_id, id, { status: 'paid', paid_at: date })
      } else if (charge(s, date)) {
        await markPaid(trx, row, date)
      } else {
        const next = await scheduleRetry(trx, row, 1)
        await repo.updateInvoice(
          trx,
          s.company_id,
          id,
          next
            ? { attempt_count: 1, dunning_status: 'in_progress', next_retry_at: next }
            : { attempt_count: 1, status: 'not_paid', dunning_status: 'exhausted' },
        )
      }
      return (await repo.findInvoice(trx, s.company_id, id))!
    },

    /** Acts only if the invoice still waits for this very retry, so a second run is harmless. */
    async retry(trx: Executor, s: SubscriptionRow, payload: RetryPayload, at: Date): Promise<RetryOutcome> {
      const invoice = await repo.lockInvoice(trx, payload.company_id, payload.invoice_id)
      if (invoice?.status !== 'payment_due' || invoice.next_retry_at?.toISOString() !== payload.retry_at)
        return 'nothing'
      if (charge(s, at)) {
        await markPaid(trx, invoice, at)
        return 'paid'
      }
      const next = await scheduleRetry(trx, invoice, payload.retry + 1)
      if (next) {
        await repo.updateInvoice(trx, invoice.company_id, invoice.id, {
          attempt_count: invoice.attempt_count + 1,
          next_retry_at: next,
        })
        return 'failed'
      }
      await repo.updateInvoice(trx, invoice.company_id, invoice.id, {
        attempt_count: invoice.attempt_count + 1,
        status: 'not_paid',
        dunning_status: 'exhausted',
        next_retry_at: null,
      })
      return 'exhausted'
    },

    /** A new card: every payment_due invoice is charged at once; a failure leaves the retry schedule as it was. */
    async collectNow(trx: Executor, s: SubscriptionRow, at: Date): Promise<void> {
      for (const invoice of await repo.dueInvoices(trx, s.company_id, s.id)) {
        if (charge(s, at)) await markPaid(trx, invoice, at)
        else await repo.updateInvoice(trx, invoice.company_id, invoice.id, { attempt_count: invoice.attempt_count + 1 })
      }
    },

    /** The current term's latest paid invoice, a change's credit base; undefined: nothing to credit. */
    termInvoice: paidTermInvoice,

    /**
     * An immediate cancellation's credit: the unused share of the term's paid invoice, tax included,
     * as one refundable credit note (docs/adr/0006-credit-never-exceeds-payment.md).
     */
    async creditUnused(trx: Executor, s: SubscriptionRow, at: Date): Promise<void> {
      const invoice = await paidTermInvoice(trx, s)
      if (!invoice || invoice.period_end.getTime() <= at.getTime()) return
      await issueCredit(
        trx,
        s,
        { figures: creditFor(invoice, at), referenceInvoiceId: invoice.id },
        'subscription_cancellation',
        at,
      )
    },

    /** Locked, so a payment cannot slip in meanwhile. */
    async hasUnpaid(trx: Executor, s: Pick<SubscriptionRow, 'company_id' | 'id'>): Promise<boolean> {
      return (await repo.dueInvoices(trx, s.company_id, s.id)).length > 0
    },

    async listInvoices(companyId: string, page: KeysetPage): Promise<Paged<ReturnType<typeof invoiceView>>> {
      const paged = cutPage(await repo.listInvoices(db, companyId, page), page, listKey)
      return { ...paged, items: paged.items.map(invoiceView) }
    },

    async invoice(companyId: string, id: string) {
      const row = await repo.findInvoice(db, companyId, id)
      if (!row) throw new NotFound('Invoice')
      return invoiceView(row)
    },

    async creditNote(companyId: string, id: string) {
      const row = await repo.findCreditNote(db, companyId, id)
      if (!row) throw new NotFound('Credit note')
      return creditNoteView(row)
    },

    /** Every company's invoices and credit notes issued in [from, to), oldest first, with their company. */
    async documentsDated(from: Date, to: Date) {
      const [invoices, notes] = await Promise.all([
        repo.invoicesDated(db, from, to),
        repo.creditNotesDated(db, from, to),
      ])
      return {
        invoices: invoices.map((row) => ({ company_id: row.company_id, invoice: invoiceView(row) })),
        credit_notes: notes.map((row) => ({ company_id: row.company_id, credit_note: creditNoteView(row) })),
      }
    },

    invoiceEventObject: (stored: StoredObject) =>
      invoiceView({
        ...(stored as InvoiceRow),
        date: storedTime(stored.date)!,
        due_date: storedTime(stored.due_date)!,
        period_start: storedTime(stored.period_start)!,
        period_end: storedTime(stored.period_end)!,
        paid_at: storedTime(stored.paid_at),
        next_retry_at: storedTime(stored.next_retry_at),
        voided_at: storedTime(stored.voided_at),
        void_reason_code: stored.void_reason_code ?? null,
        recorded_payments: stored.recorded_payments ?? [],
        comments: stored.comments ?? [],
        amount_refunded: stored.amount_refunded ?? 0,
      }),

    creditNoteEventObject: (stored: StoredObject) =>
      creditNoteView({
        ...(stored as CreditNoteRow),
        date: storedTime(stored.date)!,
        amount_refunded: stored.amount_refunded ?? 0,
        refunds: stored.refunds ?? [],
        description: stored.description ?? null,
      }),

    /** 404 when the credit note is not the company's. */
    async findCreditNote(companyId: string, id: string) {
      const row = await repo.findCreditNote(db, companyId, id)
      if (!row) throw new NotFound('Credit note')
      return creditNoteView(row)
    },

    /** The credit notes issued on one invoice, oldest first. */
    async creditNotesFor(companyId: string, invoiceId: string) {
      return (await repo.creditNotesFor(db, companyId, invoiceId)).map(creditNoteView)
    },

    async listCreditNotes(companyId: string, page: KeysetPage): Promise<Paged<ReturnType<typeof creditNoteView>>> {
      const paged = cutPage<CreditNoteRow>(await repo.listCreditNotes(db, companyId, page), page, listKey)
      return { ...paged, items: paged.items.map(creditNoteView) }
    },
  }
}

/** A ledger row's cursor key: its date, then its insertion order. */
const listKey = (row: { date: Date; seq: number | string }) => [row.date.toISOString(), Number(row.seq)]

/** What `credits_applied` of the next invoice may take: promotional credits are a discount instead. */
export const creditsToApply = (c: { refundable_credits: number; excess_payments: number }) =>
  c.refundable_credits + c.excess_payments

export type InvoicesService = ReturnType<typeof createInvoicesService>
export type Ledger = Pick<
  InvoicesService,
  | 'credits'
  | 'bill'
  | 'retry'
  | 'collectNow'
  | 'hasUnpaid'
  | 'termInvoice'
  | 'creditUnused'
  | 'unbilledCharges'
  | 'addCharge'
  | 'changePromotionalCredits'
>
