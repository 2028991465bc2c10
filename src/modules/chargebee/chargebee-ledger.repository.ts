import { sql, type Insertable } from 'kysely'
import type { CreditNotesTable, InvoicesTable, ProviderObjectVersionsTable } from '../../db/tables.ts'
import type { Executor } from '../../jobs/scheduler.ts'

/**
 * The SQL of a provider's ledger copies (Chargebee's invoices and credit notes, migration 0022):
 * upserts by our derived id, the newest version applied per object, deletions. Every query
 * filters by company_id. The rows' events come from the tables' triggers (0020).
 */
export function createProviderLedgerRepository() {
  return {
    /**
     * Keeps `version` when newer than the one kept; false when stale. `orEqual` for versions of second
     * resolution, where the copy delivered later is taken as the later one.
     */
    async advanceVersion(
      executor: Executor,
      row: Insertable<ProviderObjectVersionsTable>,
      options: { orEqual?: boolean } = {},
    ): Promise<boolean> {
      const newer = options.orEqual
        ? sql<boolean>`provider_object_versions.resource_version <= excluded.resource_version`
        : sql<boolean>`provider_object_versions.resource_version < excluded.resource_version`
      const kept = await executor
        .insertInto('provider_object_versions')
        .values(row)
        .onConflict((oc) =>
          oc
            .columns(['company_id', 'object_id'])
            .doUpdateSet({ resource_version: (eb) => eb.ref('excluded.resource_version') })
            .where(newer),
        )
        .returning('object_id')
        .executeTakeFirst()
      return kept !== undefined
    },

    async providerIdOf(executor: Executor, companyId: string, objectId: string): Promise<string | null> {
      const found = await executor
        .selectFrom('provider_object_versions')
        .select('provider_object_id')
        .where('company_id', '=', companyId)
        .where('object_id', '=', objectId)
        .executeTakeFirst()
      return found?.provider_object_id ?? null
    },

    /** Our own fields of a mirrored invoice (offline payments, comments), beside Chargebee's copy. */
    async updateInvoiceExtras(
      executor: Executor,
      companyId: string,
      id: string,
      fields: { recorded_payments?: string; comments?: string },
    ) {
      await executor
        .updateTable('invoices')
        .set(fields)
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
    lockCreditNote: (executor: Executor, companyId: string, id: string) =>
      executor
        .selectFrom('credit_notes')
        .selectAll()
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .forUpdate()
        .executeTakeFirst(),
    /** The notes issued on one invoice: what they sum to, and the refundable ones' part. */
    async creditedOn(executor: Executor, companyId: string, invoiceId: string) {
      const row = await executor
        .selectFrom('credit_notes')
        .select((eb) => [
          eb.fn.coalesce(eb.fn.sum<number>('total'), sql<number>`0`).as('total'),
          eb.fn
            .coalesce(eb.fn.sum<number>(sql`CASE WHEN type = 'refundable' THEN total ELSE 0 END`), sql<number>`0`)
            .as('refundable'),
        ])
        .where('company_id', '=', companyId)
        .where('reference_invoice_id', '=', invoiceId)
        .executeTakeFirstOrThrow()
      return { total: Number(row.total), refundable: Number(row.refundable) }
    },
    /** An invoice's amount_refunded: what its refundable notes paid out (Chargebee's invoice does not say). */
    async refreshRefunded(executor: Executor, companyId: string, invoiceId: string) {
      const refunded = executor
        .selectFrom('credit_notes')
        .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('amount_refunded'), sql<number>`0`).as('refunded'))
        .where('company_id', '=', companyId)
        .where('reference_invoice_id', '=', invoiceId)
        .where('type', '=', 'refundable')
      await executor
        .updateTable('invoices')
        .set({ amount_refunded: sql`(${refunded})` })
        .where('company_id', '=', companyId)
        .where('id', '=', invoiceId)
        .where(sql<boolean>`amount_refunded IS DISTINCT FROM (${refunded})`)
        .execute()
    },
    findCreditNote: (executor: Executor, companyId: string, id: string) =>
      executor
        .selectFrom('credit_notes')
        .selectAll()
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .executeTakeFirst(),

    /** Inserts the invoice or replaces every field of its stored copy (the triggers emit what moved). */
    async upsertInvoice(executor: Executor, row: Insertable<InvoicesTable>) {
      const { company_id: _c, id: _i, ...fields } = row
      await executor
        .insertInto('invoices')
        .values(row)
        .onConflict((oc) => oc.columns(['company_id', 'id']).doUpdateSet(fields))
        .execute()
    },

    async upsertCreditNote(executor: Executor, row: Insertable<CreditNotesTable>) {
      const { company_id: _c, id: _i, ...fields } = row
      await executor
        .insertInto('credit_notes')
        .values(row)
        .onConflict((oc) => oc.columns(['company_id', 'id']).doUpdateSet(fields))
        .execute()
    },

    /**
     * Deletes an invoice (Chargebee deleted it); credit notes referring to it keep their amounts, without the
     * reference. True when it was here.
     */
    async deleteInvoice(executor: Executor, companyId: string, id: string) {
      await executor
        .updateTable('credit_notes')
        .set({ reference_invoice_id: null })
        .where('company_id', '=', companyId)
        .where('reference_invoice_id', '=', id)
        .execute()
      await executor
        .deleteFrom('credit_allocations')
        .where('company_id', '=', companyId)
        .where('invoice_id', '=', id)
        .execute()
      return executor
        .deleteFrom('invoices')
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst()
    },

    async deleteCreditNote(executor: Executor, companyId: string, id: string) {
      await executor
        .deleteFrom('credit_allocations')
        .where('company_id', '=', companyId)
        .where('credit_note_id', '=', id)
        .execute()
      return executor
        .deleteFrom('credit_notes')
        .where('company_id', '=', companyId)
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst()
    },
  }
}

export type ProviderLedgerRepository = ReturnType<typeof createProviderLedgerRepository>
