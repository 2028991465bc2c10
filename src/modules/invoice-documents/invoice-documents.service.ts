import { NotFound } from '../../core/errors.ts'
import type { CompaniesService } from '../companies/companies.service.ts'
import type { Company } from '../companies/companies.schemas.ts'
import type { Seller } from '../hosted/hosted.invoice-content.ts'
import { translator, type Locale } from '../hosted/hosted.i18n.ts'
import type { InvoicesService } from '../invoices/index.ts'
import { creditNotePdf, invoicePdf, type DocumentContext } from './invoice-documents.render.ts'

/** A rendered document: its file name is its number. */
export interface PdfFile {
  filename: string
  content: Buffer
  language: Locale
}

// Where Italian is an official language; every other company reads English.
const ITALIAN = new Set(['IT', 'SM', 'VA'])

/** The customer's language, from the company's country: whoever fetches the document reads the same file. */
export const documentLocale = (company: Pick<Company, 'country'>): Locale =>
  ITALIAN.has(company.country) ? 'it' : 'en'

/** Invoices and credit notes as PDF files, read through the ledger's and the companies' services. */
export function createInvoiceDocumentsService(deps: {
  invoices: Pick<InvoicesService, 'invoice' | 'findCreditNote' | 'creditNotesFor'>
  companies: Pick<CompaniesService, 'getCompany'>
  seller: Seller
}) {
  const { invoices, companies } = deps

  function contextFor(company: Company): DocumentContext {
    const locale = documentLocale(company)
    return { locale, t: translator(locale), seller: deps.seller }
  }

  return {
    /** 404 when the invoice is not the company's. */
    async invoicePdf(companyId: string, invoiceId: string): Promise<PdfFile> {
      const invoice = await invoices.invoice(companyId, invoiceId)
      const [company, issued] = await Promise.all([
        companies.getCompany(companyId),
        invoices.creditNotesFor(companyId, invoice.id),
      ])
      const ctx = contextFor(company)
      const content = await invoicePdf(ctx, invoice, company, issued)
      return { filename: `${invoice.id}.pdf`, content, language: ctx.locale }
    },

    /** 404 when the credit note is not the company's. */
    async creditNotePdf(companyId: string, creditNoteId: string): Promise<PdfFile> {
      const note = await invoices.findCreditNote(companyId, creditNoteId)
      const [company, reference] = await Promise.all([
        companies.getCompany(companyId),
        note.reference_invoice_id
          ? invoices.invoice(companyId, note.reference_invoice_id).catch((err: unknown) => {
              if (err instanceof NotFound) return null
              throw err
            })
          : null,
      ])
      const ctx = contextFor(company)
      const content = await creditNotePdf(ctx, note, company, reference)
      return { filename: `${note.id}.pdf`, content, language: ctx.locale }
    },
  }
}

export type InvoiceDocumentsService = ReturnType<typeof createInvoiceDocumentsService>
