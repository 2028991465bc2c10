import type { FastifyRequest } from 'fastify'
import { accepted, type App } from '../../http/app-types.ts'
import { Accepted, CompanyParams } from '../../http/schemas.ts'
import { CreditNoteBody, CreditNoteParams, InvoiceBody, InvoiceParams } from '../invoices/index.ts'
import type { InvoiceOperationsService } from './invoice-operations.service.ts'
import {
  CreateCreditNoteBody,
  RecordPaymentBody,
  RefundBody,
  RefundCreditNoteBody,
  VoidBody,
  WriteOffBody,
} from './invoice-operations.schemas.ts'

const SUBSCRIPTION = '/api/v1/subscription'
const BASE = `${SUBSCRIPTION}/:company_id/invoices/:invoice_id`

/** A body optional as a whole: none reads as `{}`. */
async function emptyBodyAsObject(request: FastifyRequest) {
  if (request.body === undefined || request.body === null) request.body = {}
}

const WHO = [
  'Platform tokens only (a company token is 403). 404 when the company has no subscription or the invoice is not',
  "the company's. On a Chargebee subscription Chargebee applies it, checked here first, and its answer updates",
  "the invoice; Chargebee's refusal is a provider_error (its 400 a 400, its 409 a 409; 502 when it cannot be",
  'reached). Takes Idempotency-Key. Answers the invoice as it now is.',
].join(' ')

const NOTE_WHO = [
  'Platform tokens only (a company token is 403). 404 when the company has no subscription. On a Chargebee',
  'subscription Chargebee applies it, checked here first, and its answer updates the credit note and its invoice;',
  "Chargebee's refusal is a provider_error (its 400 a 400, its 409 a 409; 502 when it cannot be reached). Takes",
  'Idempotency-Key.',
].join(' ')

const REFUND = [
  'Pays back what was paid of a paid invoice: a refundable credit note of amount (default: all that was paid and',
  'is not yet refunded or credited), refunded at once (status refunded, amount_refunded its total), its tax the',
  "invoice's prorated. The invoice's amount_refunded grows; a comment is kept in its comments. The local engine",
  'refunds to the card. Events credit_note.created and invoice.refunded. 400 naming body/amount when it is more',
  "than is refundable, or the reason_code is not among Chargebee's. 409 when the invoice is not paid or nothing",
  'of it is left to refund.',
].join(' ')

const CREATE_NOTE = [
  "A manual credit note on an invoice of the company, tax included (its tax the invoice's, prorated). adjustment:",
  "lowers a payment_due or not_paid invoice's amount_due (amount_adjusted grows); one that settles it makes it",
  'paid and ends dunning. refundable: credits what was paid of the invoice (payments and credits applied, less',
  "earlier refundable notes) to the customer's refundable_credits, which the next invoices take or a refund pays",
  'out; an unpaid part takes an adjustment note instead (400). The credit notes of one invoice never sum beyond its',
  'total (400 naming body/total). 400 when reference_invoice_id is not an invoice of the company. 409 when the',
  'invoice is voided, or paid for an adjustment. Event credit_note.created (and invoice.paid when it settles the',
  'invoice). Answers 202 with Location of the new credit note.',
].join(' ')

const REFUND_NOTE = [
  "Pays out a refundable credit note's amount_available, all of it by default: amount_refunded grows (status",
  "refunded once nothing is left), and so does its invoice's amount_refunded. The local engine refunds to the",
  'card. Events credit_note.refunded and invoice.refunded. 400 naming body/amount when it is more than',
  "amount_available. 404 when the credit note is not the company's. 409 for an adjustment note or one with",
  'nothing left. Answers the credit note as it now is.',
].join(' ')

const RECORD_PAYMENT = [
  'A payment made outside the card (bank transfer, cash, check) on a payment_due or not_paid invoice:',
  'amount_paid grows and amount_due falls by what it settles; once nothing is due the invoice is paid',
  "(paid_at the payment's date) and dunning stops. A payment beyond amount_due settles it and the rest",
  "becomes the customer's excess_payments, which the next invoices take (after refundable credits) in",
  'credits_applied. A not_paid invoice can be paid late: its subscription stays cancelled. Events',
  'invoice.payment_recorded, then invoice.paid when it settles the invoice. 400 naming the field for an amount',
  'that is not a whole number of minor units above 0, an unknown payment_method, or a date before the',
  "invoice's or in the future. 409 when the invoice is paid or voided.",
].join(' ')

const VOID = [
  'A payment_due or not_paid invoice with nothing paid becomes voided: it owes nothing (amount_due 0), dunning',
  "stops, and the credits applied to it (credits_applied) go back to the customer's refundable credits and",
  'excess payments. The subscription is not changed. Event invoice.voided. 400 naming the field for a',
  "reason_code not among Chargebee's. 409 when the invoice is paid or voided, or something of it was paid.",
  'The body is optional as a whole.',
].join(' ')

const WRITE_OFF = [
  'A payment_due or not_paid invoice becomes paid with write_off_amount what was due (amount_due 0); dunning',
  'stops; the subscription is not changed. Event invoice.written_off. 409 when the invoice is paid or voided.',
  'The body is optional as a whole.',
].join(' ')

/** Record a payment, void, write off, refund; credit notes and their refunds: platform clients only (§9.2). */
export async function invoiceOperationsRoutes(app: App, { service }: { service: InvoiceOperationsService }) {
  const tags = ['Invoices']
  // On a Chargebee subscription each calls Chargebee, which may fail on its own (502, 503).
  const config = { access: 'platform', billingProvider: true } as const

  app.post(
    `${BASE}/record_payment`,
    {
      config,
      schema: {
        operationId: 'recordInvoicePayment',
        tags,
        summary: 'Record an offline payment of an invoice',
        description: `${RECORD_PAYMENT} ${WHO}`,
        params: InvoiceParams,
        body: RecordPaymentBody,
        response: { 200: InvoiceBody },
      },
    },
    async (request) => service.recordPayment(request.params.company_id, request.params.invoice_id, request.body),
  )

  app.post(
    `${BASE}/void`,
    {
      config,
      preValidation: emptyBodyAsObject,
      schema: {
        operationId: 'voidInvoice',
        tags,
        summary: 'Void an unpaid invoice',
        description: `${VOID} ${WHO}`,
        params: InvoiceParams,
        body: VoidBody,
        response: { 200: InvoiceBody },
      },
    },
    async (request) => service.voidInvoice(request.params.company_id, request.params.invoice_id, request.body),
  )

  app.post(
    `${BASE}/write_off`,
    {
      config,
      preValidation: emptyBodyAsObject,
      schema: {
        operationId: 'writeOffInvoice',
        tags,
        summary: 'Write off what an invoice still owes',
        description: `${WRITE_OFF} ${WHO}`,
        params: InvoiceParams,
        body: WriteOffBody,
        response: { 200: InvoiceBody },
      },
    },
    async (request) => service.writeOff(request.params.company_id, request.params.invoice_id, request.body),
  )

  app.post(
    `${BASE}/refund`,
    {
      config,
      schema: {
        operationId: 'refundInvoice',
        tags,
        summary: 'Refund a paid invoice, in part or whole',
        description: `${REFUND} ${WHO}`,
        params: InvoiceParams,
        body: RefundBody,
        response: { 200: InvoiceBody },
      },
    },
    async (request) => service.refund(request.params.company_id, request.params.invoice_id, request.body),
  )

  app.post(
    `${SUBSCRIPTION}/:company_id/credit_notes`,
    {
      config,
      schema: {
        operationId: 'createCreditNote',
        tags,
        summary: 'Issue a credit note on an invoice',
        description: `${CREATE_NOTE} ${NOTE_WHO}`,
        params: CompanyParams,
        body: CreateCreditNoteBody,
        response: { 202: Accepted },
      },
    },
    async (request, reply) => {
      const { company_id } = request.params
      const note = await service.createCreditNote(company_id, request.body)
      return accepted(reply, `${SUBSCRIPTION}/${company_id}/credit_notes/${note.id}`)
    },
  )

  app.post(
    `${SUBSCRIPTION}/:company_id/credit_notes/:credit_note_id/refund`,
    {
      config,
      preValidation: emptyBodyAsObject,
      schema: {
        operationId: 'refundCreditNote',
        tags,
        summary: 'Refund a refundable credit note',
        description: `${REFUND_NOTE} ${NOTE_WHO}`,
        params: CreditNoteParams,
        body: RefundCreditNoteBody,
        response: { 200: CreditNoteBody },
      },
    },
    async (request) => service.refundCreditNote(request.params.company_id, request.params.credit_note_id, request.body),
  )
}
