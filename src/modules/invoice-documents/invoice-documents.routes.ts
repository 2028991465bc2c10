import type { FastifyReply } from 'fastify'
import type { App } from '../../http/app-types.ts'
import { InvoiceParams } from '../invoices/index.ts'
import type { InvoiceDocumentsService, PdfFile } from './invoice-documents.service.ts'
import { CreditNoteParams, pdfResponse } from './invoice-documents.schemas.ts'

const BASE = '/api/v1/subscription'

/** Sent as the JSON invoice is (no caching header of its own), to be shown in the browser. */
export function sendPdf(reply: FastifyReply, file: PdfFile) {
  return reply
    .code(200)
    .header('content-type', 'application/pdf')
    .header('content-disposition', `inline; filename="${file.filename}"`)
    .header('content-language', file.language)
    .header('x-content-type-options', 'nosniff')
    .send(file.content)
}

const WHO =
  "Needs read:company (a company token on its own id, or a platform token); another company's id is 404. " +
  'Changes nothing.'
const LANGUAGE =
  "In the company's language: Italian for a company in Italy, San Marino or the Vatican, English " +
  'otherwise (Content-Language says which).'
const INVOICE =
  'The invoice as a PDF document: seller, customer with address and VAT number, number and dates, ' +
  'lines with their period, discounts, VAT per rate (or the reverse-charge note), total, credits applied, ' +
  'payments, amount due, and the credit notes issued against it.'
const CREDIT_NOTE =
  'The credit note as a PDF document: seller, customer, its reference invoice, reason, lines, VAT, ' +
  'total, what was applied to invoices and what is still available.'

/** The ledger's documents as PDF files, in the company's language (Italian or English). */
export async function invoiceDocumentsRoutes(app: App, { service }: { service: InvoiceDocumentsService }) {
  const tags = ['Invoices']
  const config = { access: { area: 'company' } } as const

  app.get(
    `${BASE}/:company_id/invoices/:invoice_id/pdf`,
    {
      config,
      schema: {
        operationId: 'getInvoicePdf',
        tags,
        summary: 'One invoice as a PDF file',
        description: `${INVOICE} ${LANGUAGE} ${WHO} 404 when the invoice is not the company's.`,
        params: InvoiceParams,
        response: { 200: pdfResponse('The PDF document, shown inline, named after the invoice') as never },
      },
    },
    async (request, reply) => {
      const { company_id: companyId, invoice_id: invoiceId } = request.params
      return sendPdf(reply, await service.invoicePdf(companyId, invoiceId))
    },
  )

  app.get(
    `${BASE}/:company_id/credit_notes/:credit_note_id/pdf`,
    {
      config,
      schema: {
        operationId: 'getCreditNotePdf',
        tags,
        summary: 'One credit note as a PDF file',
        description: `${CREDIT_NOTE} ${LANGUAGE} ${WHO} 404 when the credit note is not the company's.`,
        params: CreditNoteParams,
        response: { 200: pdfResponse('The PDF document, shown inline, named after the credit note') as never },
      },
    },
    async (request, reply) => {
      const { company_id: companyId, credit_note_id: creditNoteId } = request.params
      return sendPdf(reply, await service.creditNotePdf(companyId, creditNoteId))
    },
  )
}
