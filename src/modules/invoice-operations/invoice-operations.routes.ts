import type { FastifyRequest } from 'fastify'
import type { App } from '../../http/app-types.ts'
import { InvoiceBody, InvoiceParams } from '../invoices/index.ts'
import type { InvoiceOperationsService } from './invoice-operations.service.ts'
import { RecordPaymentBody, VoidBody, WriteOffBody } from './invoice-operations.schemas.ts'

const BASE = '/api/v1/subscription/:company_id/invoices/:invoice_id'

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

/** Record a payment, void, write off: platform clients only (decisions §9.2). */
export async function invoiceOperationsRoutes(app: App, { service }: { service: InvoiceOperationsService }) {
  const tags = ['Invoices']
  const config = { access: 'platform' } as const

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
}
