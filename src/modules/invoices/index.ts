/**
 * The billing engine's ledger, a module of its own: invoices, credit notes, credits, test payments
 * and dunning, with their routes. Other modules use it through this face.
 */
export {
  PAYMENT_RETRY_JOB, type InvoicesService, type Ledger, type RetryOutcome, type RetryPayload,
} from './invoices.service.ts'
export { CreditNoteBody, InvoiceBody } from './invoices.schemas.ts'
