import type { FastifyReply } from 'fastify'
import type { App } from '../../http/app-types.ts'
import { InvoiceParams } from '../invoices/index.ts'
import { CreditNoteParams } from '../invoice-documents/invoice-documents.schemas.ts'
import type { FatturapaFile, FatturapaService } from './fatturapa.service.ts'
import { ExportQuery, fileResponse, notItalian } from './fatturapa.schemas.ts'

const BASE = '/api/v1/subscription'

function send(reply: FastifyReply, file: FatturapaFile, type: string) {
  return reply
    .code(200)
    .header('content-type', type)
    .header('content-disposition', `attachment; filename="${file.filename}"`)
    .header('x-content-type-options', 'nosniff')
    .send(file.content)
}

const WHO = "Needs read:company (a company token on its own id, or a platform token); another company's id is 404."
const DOCUMENT =
  'A FatturaPA 1.2.2 document (FPR12), valid against the official schema: seller (the SELLER_* settings) and ' +
  'customer, lines with their VAT rate or nature (N6.9 reverse charge, N3.1 export), discounts, the summary per ' +
  "rate, totals equal to the ledger's. Named IT<seller VAT>_<progressive>.xml; the progressive, also its Numero, " +
  'is given the first time the document is made and never changes. 400 naming every field the company lacks ' +
  '(address, city, and for Italy zip, province, vat_number or tax_code, sdi_code or pec). docs/billing.md, "FatturaPA".'

/** FatturaPA documents of the ledger, one at a time or a month's as a ZIP (decisions §9.7). */
export async function fatturapaRoutes(app: App, { service }: { service: FatturapaService }) {
  const tags = ['Invoices']
  const config = { access: { area: 'company' } } as const

  app.get(
    `${BASE}/:company_id/invoices/:invoice_id/fatturapa`,
    {
      config,
      schema: {
        operationId: 'getInvoiceFatturapa',
        tags,
        summary: 'One invoice as a FatturaPA document (TD01)',
        description: `${DOCUMENT} ${WHO} 404 when the invoice is not the company's.`,
        params: InvoiceParams,
        response: {
          200: fileResponse('The XML document', 'application/xml', 'IT01234567890_0000A.xml') as never,
          409: notItalian,
        },
      },
    },
    async (request, reply) => {
      const { company_id: companyId, invoice_id: invoiceId } = request.params
      return send(reply, await service.invoiceDocument(companyId, invoiceId), 'application/xml')
    },
  )

  app.get(
    `${BASE}/:company_id/credit_notes/:credit_note_id/fatturapa`,
    {
      config,
      schema: {
        operationId: 'getCreditNoteFatturapa',
        tags,
        summary: 'One credit note as a FatturaPA document (TD04)',
        description:
          `${DOCUMENT} TD04, naming its invoice's number and date (DatiFattureCollegate). ${WHO} ` +
          "404 when the credit note is not the company's.",
        params: CreditNoteParams,
        response: {
          200: fileResponse('The XML document', 'application/xml', 'IT01234567890_0000B.xml') as never,
          409: notItalian,
        },
      },
    },
    async (request, reply) => {
      const { company_id: companyId, credit_note_id: creditNoteId } = request.params
      return send(reply, await service.creditNoteDocument(companyId, creditNoteId), 'application/xml')
    },
  )

  app.get(
    '/api/v1/fatturapa/export',
    {
      config: { access: 'platform' },
      schema: {
        operationId: 'exportFatturapa',
        tags,
        summary: "A month's FatturaPA documents as a ZIP",
        description:
          "Every company's invoices and credit notes dated in the month (Italian calendar), each as its " +
          'FatturaPA document named IT<seller VAT>_<progressive>.xml, the same file the document routes ' +
          'answer: an export again gives the same names. 400 naming each company and field missing, before ' +
          'any progressive is given. Platform tokens only.',
        querystring: ExportQuery,
        response: {
          200: fileResponse('The ZIP file', 'application/zip', 'IT01234567890_2027-04.zip') as never,
          409: notItalian,
        },
      },
    },
    async (request, reply) => send(reply, await service.exportMonth(request.query.month), 'application/zip'),
  )
}
