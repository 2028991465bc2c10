import type { InvoiceComment, RecordedPayment } from '../../db/tables.ts'
import type { Executor } from '../../jobs/scheduler.ts'
import { writeEvent } from '../events/outbox.ts'
import {
  creditNoteRowFrom,
  invoiceRowFrom,
  ledgerId,
  versionOf,
  type CbCreditNote,
  type CbInvoice,
} from './chargebee.ledger-mapping.ts'
import type { ProviderLedgerRepository } from './chargebee-ledger.repository.ts'

/** What applying one copy of an object did. */
export type CopyOutcome = 'applied' | 'unchanged' | 'stale'

/**
 * What our mirror keeps beside Chargebee's copy of an invoice: an offline payment (Chargebee's
 * transaction id, recorded once whichever answer brings it first) and the comment of a void or write-off.
 */
export interface InvoiceExtras {
  payment?: { transactionId: string; entry: RecordedPayment }
  comment?: InvoiceComment
}

/** The subscription (ours) that a Chargebee ledger object belongs to. */
export interface LedgerOwner {
  companyId: string
  subscriptionId: string
}

const comparable = (row: Record<string, unknown> | undefined) => {
  if (!row) return null
  const { seq: _s, created_at: _c, ...fields } = row
  return JSON.stringify(fields)
}

/**
 * Chargebee's ledger kept here: a copy of an invoice or credit note applies when its resource_version
 * is newer. Triggers write the rows' events; a deletion, which no trigger reports, writes its own.
 */
export function createProviderLedger(deps: { repo: ProviderLedgerRepository }) {
  const { repo } = deps

  async function fresh(
    trx: Executor,
    owner: LedgerOwner,
    type: 'invoice' | 'credit_note',
    object: { id: string; resource_version?: number; updated_at?: number },
  ) {
    return repo.advanceVersion(trx, {
      company_id: owner.companyId,
      object_id: ledgerId(type, object.id),
      object_type: type,
      provider_object_id: object.id,
      resource_version: versionOf(object).toString(),
    })
  }

  /** A deletion no trigger reports: its event carries the row as it was (without its bookkeeping seq). */
  async function deleted(
    trx: Executor,
    owner: LedgerOwner,
    type: 'invoice.deleted' | 'credit_note.deleted',
    gone: { seq: unknown } | undefined,
  ): Promise<CopyOutcome> {
    if (!gone) return 'unchanged'
    const { seq: _s, ...object } = gone
    await writeEvent(trx, { type, companyId: owner.companyId, object })
    return 'applied'
  }

  return {
    /**
     * Records a copy's version when it is newer than the last one applied (or as new, with `orEqual`);
     * false when it is not.
     */
    advanceVersion: repo.advanceVersion,

    /** Chargebee's id of a mirrored invoice or credit note (ours is derived from it); null when not mirrored. */
    providerIdOf: repo.providerIdOf,
    lockInvoice: repo.lockInvoice,
    lockCreditNote: repo.lockCreditNote,
    creditedOn: repo.creditedOn,

    /**
     * One copy of an invoice. `paymentFailed`: it comes with a failed payment (payment_failed),
     * which counts as an attempt even when Chargebee's copy does not list it among its dunning attempts.
     */
    async applyInvoice(
      trx: Executor,
      owner: LedgerOwner,
      invoice: CbInvoice,
      at: Date,
      options: { paymentFailed?: boolean; deleted?: boolean } & InvoiceExtras = {},
    ): Promise<CopyOutcome> {
      const id = ledgerId('invoice', invoice.id)
      const newPayment =
        options.payment &&
        (await repo.advanceVersion(trx, {
          company_id: owner.companyId,
          object_id: ledgerId('transaction', options.payment.transactionId),
          object_type: 'transaction',
          provider_object_id: options.payment.transactionId,
          resource_version: '0',
        }))
      const extras = async (before: { recorded_payments: RecordedPayment[]; comments: InvoiceComment[] }) => ({
        ...(newPayment
          ? { recorded_payments: JSON.stringify([...before.recorded_payments, options.payment!.entry]) }
          : {}),
        ...(options.comment ? { comments: JSON.stringify([...before.comments, options.comment]) } : {}),
      })
      if (!(await fresh(trx, owner, 'invoice', invoice))) {
        // A newer copy came first (Chargebee's webhook): what only we know is still added.
        const before = await repo.findInvoice(trx, owner.companyId, id)
        if (!before || (!newPayment && !options.comment)) return 'stale'
        await repo.updateInvoiceExtras(trx, owner.companyId, id, await extras(before))
        return 'applied'
      }
      if (options.deleted || invoice.deleted)
        return deleted(trx, owner, 'invoice.deleted', await repo.deleteInvoice(trx, owner.companyId, id))
      const before = await repo.findInvoice(trx, owner.companyId, id)
      const row = invoiceRowFrom(invoice, owner, at, (before?.attempt_count ?? 0) + (options.paymentFailed ? 1 : 0))
      if (!row) return 'unchanged'
      await repo.upsertInvoice(trx, { ...row, ...(await extras(before ?? { recorded_payments: [], comments: [] })) })
      const after = await repo.findInvoice(trx, owner.companyId, id)
      return comparable(before) === comparable(after) ? 'unchanged' : 'applied'
    },

    async applyCreditNote(
      trx: Executor,
      owner: LedgerOwner,
      note: CbCreditNote,
      at: Date,
      options: { deleted?: boolean } = {},
    ): Promise<CopyOutcome> {
      if (!(await fresh(trx, owner, 'credit_note', note))) return 'stale'
      const id = ledgerId('credit_note', note.id)
      if (options.deleted || note.deleted)
        return deleted(trx, owner, 'credit_note.deleted', await repo.deleteCreditNote(trx, owner.companyId, id))
      const reference = note.reference_invoice_id
        ? await repo.findInvoice(trx, owner.companyId, ledgerId('invoice', note.reference_invoice_id))
        : undefined
      const row = creditNoteRowFrom(note, { ...owner, referenceInvoiceId: reference?.id ?? null }, at)
      if (!row) return 'unchanged'
      const before = await repo.findCreditNote(trx, owner.companyId, id)
      await repo.upsertCreditNote(trx, row)
      if (reference) await repo.refreshRefunded(trx, owner.companyId, reference.id)
      const after = await repo.findCreditNote(trx, owner.companyId, id)
      return comparable(before) === comparable(after) ? 'unchanged' : 'applied'
    },
  }
}

export type ProviderLedger = ReturnType<typeof createProviderLedger>
