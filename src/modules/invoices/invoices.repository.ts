import { keyset, type KeysetPage, type SortColumn } from '../../db/keyset.ts'
import { sql, type Insertable, type Updateable } from 'kysely'
import type { Executor } from '../../jobs/scheduler.ts'
import type {
  ChargesTable,
  CreditNotesTable,
  ExcessPaymentsTable,
  InvoicesTable,
  PromotionalCreditsTable,
} from '../../db/tables.ts'

/** What a credit note still holds for the customer. */
const AVAILABLE = sql<number>`total - amount_allocated - amount_refunded`

/** Newest first: by date, then insertion order (seq), as their index. */
const NEWEST_FIRST: SortColumn[] = [
  { column: 'date', desc: true, cast: 'timestamptz' },
  { column: 'seq', desc: true },
]

// The ledger's SQL. Every function takes the executor, so billing writes join the change's transaction.
export function createInvoicesRepository() {
  return {
    insertInvoice: (executor: Executor, invoice: Insertable<InvoicesTable>) =>
      executor.insertInto('invoices').values(invoice).returningAll().executeTakeFirstOrThrow(),
    async updateInvoice(executor: Executor, companyId: string, id: string, values: Updateable<InvoicesTable>) {
      await executor
        .updateTable('invoices')
        .set(values)
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .execute()
    },
    findInvoice: (executor: Executor, companyId: string, id: string) =>
      executor
        .selectFrom('invoices')
        .selectAll()
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .executeTakeFirst(),
    lockInvoice: (executor: Executor, companyId: string, id: string) =>
      executor
        .selectFrom('invoices')
        .selectAll()
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .forUpdate()
        .executeTakeFirst(),
    /** The one a change's credit note refers to. */
    latestInvoice: (executor: Executor, companyId: string, subscriptionId: string) =>
      executor
        .selectFrom('invoices')
        .select(['id', 'status', 'line_items', 'discounts', 'taxes', 'currency_code', 'period_start', 'period_end'])
        .where('company_id', '=', companyId)
        .where('subscription_id', '=', subscriptionId)
        .orderBy('date', 'desc')
        .orderBy('seq', 'desc')
        .limit(1)
        .executeTakeFirst(),
    /** Oldest first, locked. */
    dueInvoices: (executor: Executor, companyId: string, subscriptionId: string) =>
      executor
        .selectFrom('invoices')
        .selectAll()
        .where('company_id', '=', companyId)
        .where('subscription_id', '=', subscriptionId)
        .where('status', '=', 'payment_due')
        .orderBy('date')
        .orderBy('seq')
        .forUpdate()
        .execute(),
    listInvoices: (executor: Executor, companyId: string, page: KeysetPage) =>
      keyset(
        executor.selectFrom('invoices').selectAll().where('company_id', '=', companyId),
        NEWEST_FIRST,
        page,
      ).execute(),

    insertCreditNote: (executor: Executor, note: Insertable<CreditNotesTable>) =>
      executor.insertInto('credit_notes').values(note).returningAll().executeTakeFirstOrThrow(),
    listCreditNotes: (executor: Executor, companyId: string, page: KeysetPage) =>
      keyset(
        executor.selectFrom('credit_notes').selectAll().where('company_id', '=', companyId),
        NEWEST_FIRST,
        page,
      ).execute(),
    /** Every company's, oldest first: a month's filing (FatturaPA export). */
    invoicesDated: (executor: Executor, from: Date, to: Date) =>
      executor
        .selectFrom('invoices')
        .selectAll()
        .where('date', '>=', from)
        .where('date', '<', to)
        .orderBy('date')
        .orderBy('seq')
        .execute(),
    creditNotesDated: (executor: Executor, from: Date, to: Date) =>
      executor
        .selectFrom('credit_notes')
        .selectAll()
        .where('date', '>=', from)
        .where('date', '<', to)
        .orderBy('date')
        .orderBy('seq')
        .execute(),
    findCreditNote: (executor: Executor, companyId: string, id: string) =>
      executor
        .selectFrom('credit_notes')
        .selectAll()
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .executeTakeFirst(),
    lockCreditNote: (executor: Executor, companyId: string, id: string) =>
      executor
        .selectFrom('credit_notes')
        .selectAll()
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .forUpdate()
        .executeTakeFirst(),
    /** The credit notes issued on one invoice, oldest first. */
    creditNotesFor: (executor: Executor, companyId: string, invoiceId: string) =>
      executor
        .selectFrom('credit_notes')
        .selectAll()
        .where('company_id', '=', companyId)
        .where('reference_invoice_id', '=', invoiceId)
        .orderBy('date')
        .orderBy('seq')
        .execute(),
    async updateCreditNote(executor: Executor, companyId: string, id: string, values: Updateable<CreditNotesTable>) {
      await executor
        .updateTable('credit_notes')
        .set(values)
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .execute()
    },
    /**
     * Oldest first (the order credits are used in), locked. `total` is what the note can still give
     * besides what it gave before: a refund's part is not there to allocate. Only notes in the
     * invoice's currency.
     */
    availableCredits: (executor: Executor, companyId: string, currency: string) =>
      executor
        .selectFrom('credit_notes')
        .select(['id', 'amount_allocated', sql<number>`total - amount_refunded`.as('total')])
        .where('company_id', '=', companyId)
        .where('type', '=', 'refundable')
        .where('currency_code', '=', currency)
        .where(AVAILABLE, '>', 0)
        .orderBy('date')
        .orderBy('seq')
        .forUpdate()
        .execute(),
    async refundableBalance(executor: Executor, companyId: string, currency: string): Promise<number> {
      const row = await executor
        .selectFrom('credit_notes')
        .select((eb) => eb.fn.coalesce(eb.fn.sum<number>(AVAILABLE), eb.lit(0)).as('balance'))
        .where('company_id', '=', companyId)
        .where('type', '=', 'refundable')
        .where('currency_code', '=', currency)
        .executeTakeFirstOrThrow()
      return Number(row.balance)
    },
    async allocate(executor: Executor, companyId: string, creditNoteId: string, invoiceId: string, amount: number) {
      await executor
        .insertInto('credit_allocations')
        .values({ company_id: companyId, credit_note_id: creditNoteId, invoice_id: invoiceId, amount })
        .execute()
      await executor
        .updateTable('credit_notes')
        .set((eb) => ({ amount_allocated: eb('amount_allocated', '+', amount) }))
        .where('company_id', '=', companyId)
        .where('id', '=', creditNoteId)
        .execute()
    },

    insertExcessPayment: (executor: Executor, row: Insertable<ExcessPaymentsTable>) =>
      executor.insertInto('excess_payments').values(row).execute(),
    /** Oldest first (the order they are used in), locked. */
    availableExcessPayments: (executor: Executor, companyId: string, currency: string) =>
      executor
        .selectFrom('excess_payments')
        .select(['id', 'total', 'amount_allocated'])
        .where('company_id', '=', companyId)
        .where('currency_code', '=', currency)
        .whereRef('amount_allocated', '<', 'total')
        .orderBy('date')
        .orderBy('seq')
        .forUpdate()
        .execute(),
    async excessBalance(executor: Executor, companyId: string, currency: string): Promise<number> {
      const row = await executor
        .selectFrom('excess_payments')
        .select((eb) =>
          eb.fn.coalesce(eb.fn.sum<number>(eb('total', '-', eb.ref('amount_allocated'))), eb.lit(0)).as('balance'),
        )
        .where('company_id', '=', companyId)
        .where('currency_code', '=', currency)
        .executeTakeFirstOrThrow()
      return Number(row.balance)
    },
    async allocateExcess(executor: Executor, companyId: string, excessId: string, invoiceId: string, amount: number) {
      await executor
        .insertInto('excess_payment_allocations')
        .values({ company_id: companyId, excess_payment_id: excessId, invoice_id: invoiceId, amount })
        .execute()
      await executor
        .updateTable('excess_payments')
        .set((eb) => ({ amount_allocated: eb('amount_allocated', '+', amount) }))
        .where('company_id', '=', companyId)
        .where('id', '=', excessId)
        .execute()
    },
    /** Undoes every credit applied to the invoice: the credit notes and excess payments get it back. */
    async releaseCredits(executor: Executor, companyId: string, invoiceId: string) {
      const notes = await executor
        .deleteFrom('credit_allocations')
        .where('company_id', '=', companyId)
        .where('invoice_id', '=', invoiceId)
        .returning(['credit_note_id', 'amount'])
        .execute()
      for (const n of notes) {
        await executor
          .updateTable('credit_notes')
          .set((eb) => ({ amount_allocated: eb('amount_allocated', '-', n.amount) }))
          .where('company_id', '=', companyId)
          .where('id', '=', n.credit_note_id)
          .execute()
      }
      const excess = await executor
        .deleteFrom('excess_payment_allocations')
        .where('company_id', '=', companyId)
        .where('invoice_id', '=', invoiceId)
        .returning(['excess_payment_id', 'amount'])
        .execute()
      for (const e of excess) {
        await executor
          .updateTable('excess_payments')
          .set((eb) => ({ amount_allocated: eb('amount_allocated', '-', e.amount) }))
          .where('company_id', '=', companyId)
          .where('id', '=', e.excess_payment_id)
          .execute()
      }
    },

    insertPromotionalCredit: (executor: Executor, row: Insertable<PromotionalCreditsTable>) =>
      executor.insertInto('promotional_credits').values(row).execute(),
    async promotionalBalance(executor: Executor, companyId: string, currency: string): Promise<number> {
      const row = await executor
        .selectFrom('promotional_credits')
        .select(sql<string>`coalesce(sum(CASE type WHEN 'increment' THEN amount ELSE -amount END), 0)`.as('balance'))
        .where('company_id', '=', companyId)
        .where('currency_code', '=', currency)
        .executeTakeFirstOrThrow()
      return Number(row.balance)
    },
    /** What an invoice took of the promotional credits and has not given back. */
    async promotionalTakenBy(executor: Executor, companyId: string, invoiceId: string) {
      const row = await executor
        .selectFrom('promotional_credits')
        .select(sql<string>`coalesce(sum(CASE type WHEN 'decrement' THEN amount ELSE -amount END), 0)`.as('taken'))
        .where('company_id', '=', companyId)
        .where('invoice_id', '=', invoiceId)
        .executeTakeFirstOrThrow()
      return Number(row.taken)
    },

    insertCharge: (executor: Executor, row: Insertable<ChargesTable>) =>
      executor.insertInto('charges').values(row).returningAll().executeTakeFirstOrThrow(),
    /** Oldest first: the charges the subscription's next renewal invoice bills. */
    unbilledCharges: (executor: Executor, companyId: string, subscriptionId: string, currency: string) =>
      executor
        .selectFrom('charges')
        .select(['id', 'description', 'amount'])
        .where('company_id', '=', companyId)
        .where('subscription_id', '=', subscriptionId)
        .where('currency_code', '=', currency)
        .where('invoice_id', 'is', null)
        .orderBy('seq')
        .execute(),
    async markCharges(executor: Executor, companyId: string, ids: string[], invoiceId: string) {
      if (ids.length === 0) return
      await executor
        .updateTable('charges')
        .set({ invoice_id: invoiceId })
        .where('company_id', '=', companyId)
        .where('id', 'in', ids)
        .where('invoice_id', 'is', null)
        .execute()
    },
  }
}

export type InvoicesRepository = ReturnType<typeof createInvoicesRepository>
