import { strToU8, zipSync } from 'fflate'
import { Conflict, ValidationError } from '../../core/errors.ts'
import { todayIn } from '../../core/days.ts'
import type { CompaniesService } from '../companies/companies.service.ts'
import type { Company } from '../companies/companies.schemas.ts'
import type { InvoicesService } from '../invoices/index.ts'
import { fatturapaXml, missingBuyerFields, type DocumentInput, type FatturapaSeller } from './fatturapa.document.ts'
import { progressiveKey, type DocumentKey, type FatturapaRepository } from './fatturapa.repository.ts'

type Invoice = Awaited<ReturnType<InvoicesService['invoice']>>
type CreditNote = Awaited<ReturnType<InvoicesService['creditNote']>>

/** An XML document or the month's ZIP, with the file name the exchange system expects. */
export interface FatturapaFile {
  filename: string
  content: Buffer
}

const DAY_MS = 86_400_000
const fromUnix = (seconds: number) => new Date(seconds * 1000)

/** The progressive as the file name and ProgressivoInvio write it: 5 letters or digits. */
export const progressiveCode = (n: number) => n.toString(36).toUpperCase().padStart(5, '0')

function refuseIncomplete(companies: Company[]) {
  const details = companies.flatMap((c) =>
    missingBuyerFields(c).map((field) => ({
      field,
      message: `company ${c.id} has no ${field}`,
    })),
  )
  if (details.length === 0) return
  const fields = [...new Set(details.map((d) => d.field))].join(', ')
  throw new ValidationError(
    `A FatturaPA document needs the company's ${fields}: ${details.map((d) => d.message).join('; ')}`,
    details,
  )
}

/**
 * FatturaPA documents (decisions §9.7) of the ledger's invoices and credit notes, local or
 * Chargebee's: one per request, or a month's as a ZIP. `seller` is null when SELLER_COUNTRY is not
 * IT or the seller's data is incomplete; `unavailable` then says why.
 */
export function createFatturapaService(deps: {
  invoices: Pick<InvoicesService, 'invoice' | 'creditNote' | 'documentsDated'>
  companies: Pick<CompaniesService, 'getCompany'>
  repo: FatturapaRepository
  seller: FatturapaSeller | null
  unavailable: string
}) {
  const { invoices, companies, repo } = deps

  function requireSeller(): FatturapaSeller {
    if (!deps.seller) throw new Conflict(deps.unavailable)
    return deps.seller
  }

  const fileName = (seller: FatturapaSeller, progressive: number) =>
    `${seller.vatNumber}_${progressiveCode(progressive)}.xml`

  function invoiceInput(invoice: Invoice, progressive: number): DocumentInput {
    const last = invoice.recorded_payments.at(-1)
    const toPay = invoice.total - invoice.credits_applied
    return {
      kind: 'invoice',
      id: invoice.id,
      number: String(progressive),
      transmission: progressiveCode(progressive),
      date: fromUnix(invoice.date),
      figures: invoice,
      period: { start: fromUnix(invoice.period_start), end: fromUnix(invoice.period_end) },
      payment:
        toPay > 0
          ? { method: last ? last.payment_method : 'card', due: fromUnix(invoice.due_date), amount: toPay }
          : undefined,
    }
  }

  function creditNoteInput(
    note: CreditNote,
    progressive: number,
    ref: { invoice: Invoice; progressive: number } | null,
  ) {
    return {
      kind: 'credit_note',
      id: note.id,
      number: String(progressive),
      transmission: progressiveCode(progressive),
      date: fromUnix(note.date),
      figures: note,
      reference: ref && { number: String(ref.progressive), date: fromUnix(ref.invoice.date), id: ref.invoice.id },
    } satisfies DocumentInput
  }

  const invoiceKey = (companyId: string, id: string): DocumentKey => ({
    company_id: companyId,
    document_type: 'invoice',
    document_id: id,
  })
  const noteKey = (companyId: string, id: string): DocumentKey => ({
    company_id: companyId,
    document_type: 'credit_note',
    document_id: id,
  })

  async function progressiveOf(key: DocumentKey): Promise<number> {
    return (await repo.progressives([key])).get(progressiveKey(key))!
  }

  return {
    /** 404 when the invoice is not the company's; 400 naming what the company lacks. */
    async invoiceDocument(companyId: string, invoiceId: string): Promise<FatturapaFile> {
      const invoice = await invoices.invoice(companyId, invoiceId)
      const seller = requireSeller()
      const company = await companies.getCompany(companyId)
      refuseIncomplete([company])
      const progressive = await progressiveOf(invoiceKey(companyId, invoice.id))
      const xml = fatturapaXml(seller, company, invoiceInput(invoice, progressive))
      return { filename: fileName(seller, progressive), content: Buffer.from(xml) }
    },

    /** TD04, referring to its invoice; 404 when the credit note is not the company's. */
    async creditNoteDocument(companyId: string, creditNoteId: string): Promise<FatturapaFile> {
      const note = await invoices.creditNote(companyId, creditNoteId)
      const seller = requireSeller()
      const company = await companies.getCompany(companyId)
      refuseIncomplete([company])
      const ref = note.reference_invoice_id ? await invoices.invoice(companyId, note.reference_invoice_id) : null
      const numbers = await repo.progressives([
        ...(ref ? [invoiceKey(companyId, ref.id)] : []),
        noteKey(companyId, note.id),
      ])
      const progressive = numbers.get(progressiveKey(noteKey(companyId, note.id)))!
      const reference = ref && {
        invoice: ref,
        progressive: numbers.get(progressiveKey(invoiceKey(companyId, ref.id)))!,
      }
      const xml = fatturapaXml(seller, company, creditNoteInput(note, progressive, reference))
      return { filename: fileName(seller, progressive), content: Buffer.from(xml) }
    },

    /**
     * Every document dated in `month` (YYYY-MM, Italian calendar), as a ZIP named after the seller
     * and the month; 400 naming each company that lacks what the format needs, before any
     * progressive is given.
     */
    async exportMonth(month: string): Promise<FatturapaFile> {
      const seller = requireSeller()
      const start = new Date(`${month}-01T00:00:00.000Z`)
      const end = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1))
      const dated = await invoices.documentsDated(new Date(start.getTime() - DAY_MS), new Date(end.getTime() + DAY_MS))
      const inMonth = (seconds: number) => todayIn('Europe/Rome', fromUnix(seconds)).startsWith(month)
      const docs = [
        // A voided invoice was never owed: it is not filed.
        ...dated.invoices
          .filter((d) => inMonth(d.invoice.date) && d.invoice.status !== 'voided')
          .map((d) => ({ ...d, date: d.invoice.date })),
        ...dated.credit_notes
          .filter((d) => inMonth(d.credit_note.date))
          .map((d) => ({ ...d, date: d.credit_note.date })),
      ].sort((a, b) => a.date - b.date)
      const byId = new Map<string, Company>()
      for (const id of new Set(docs.map((d) => d.company_id))) byId.set(id, await companies.getCompany(id))
      refuseIncomplete([...byId.values()])
      const refs = new Map<string, Invoice>()
      for (const d of docs) {
        const refId = 'credit_note' in d ? d.credit_note.reference_invoice_id : null
        if (refId && !refs.has(refId)) refs.set(refId, await invoices.invoice(d.company_id, refId))
      }
      const keys = docs.map((d) =>
        'invoice' in d ? invoiceKey(d.company_id, d.invoice.id) : noteKey(d.company_id, d.credit_note.id),
      )
      const refKeys = docs.flatMap((d) =>
        'credit_note' in d && d.credit_note.reference_invoice_id
          ? [invoiceKey(d.company_id, d.credit_note.reference_invoice_id)]
          : [],
      )
      const numbers = await repo.progressives([...keys, ...refKeys])
      const files: Record<string, [Uint8Array, { mtime: Date }]> = {}
      for (const [i, d] of docs.entries()) {
        const progressive = numbers.get(progressiveKey(keys[i]!))!
        const company = byId.get(d.company_id)!
        let input: DocumentInput
        if ('invoice' in d) input = invoiceInput(d.invoice, progressive)
        else {
          const refId = d.credit_note.reference_invoice_id
          const ref = refId ? refs.get(refId)! : null
          const refNumber = ref && numbers.get(progressiveKey(invoiceKey(d.company_id, ref.id)))!
          input = creditNoteInput(d.credit_note, progressive, ref && { invoice: ref, progressive: refNumber! })
        }
        files[fileName(seller, progressive)] = [
          strToU8(fatturapaXml(seller, company, input)),
          { mtime: fromUnix(d.date) },
        ]
      }
      const content = Buffer.from(zipSync(files, { level: 6, mtime: start }))
      return { filename: `${seller.vatNumber}_${month}.zip`, content }
    },
  }
}

export type FatturapaService = ReturnType<typeof createFatturapaService>
