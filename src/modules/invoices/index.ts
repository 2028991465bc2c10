/**
 * The billing engine's ledger, a module of its own: invoices, credit notes, credits, test payments
 * and dunning, with their routes. Other modules use it through this face.
 */
export {
  creditsToApply,
  PAYMENT_RETRY_JOB,
  type InvoicesService,
  type Ledger,
  type RetryOutcome,
  type RetryPayload,
} from './invoices.service.ts'
export { CreditNoteBody, CreditNoteParams, InvoiceBody, InvoiceParams } from './invoices.schemas.ts'
export { creditNoteView, invoiceView } from './invoices.views.ts'
export { checkCreditNote, noteRefundAmount, refundAmount, type Credited } from './invoices.credit-rules.ts'
