import { termAmount } from '../billing/index.ts'
import type { Company } from '../companies/companies.schemas.ts'
import type { CreditNoteBody, InvoiceBody } from '../invoices/index.ts'
import { dateOf, periodOf, type PageContext } from '../hosted/hosted.html.ts'
import type { MessageKey } from '../hosted/hosted.i18n.ts'
import {
  buyerParty,
  exported,
  figureRows,
  invoiceStatusText,
  invoiceTotalRows,
  moneyOf,
  reverseCharged,
  sellerParty,
  vatCell,
  type Figures,
  type Seller,
  type TotalRow,
} from '../hosted/hosted.invoice-content.ts'
import { createSheet, type Cell, type Column, type Sheet } from './invoice-documents.sheet.ts'

/**
 * The invoice and the credit note as PDF files, with the printable invoice's texts and figures
 * (hosted.invoice-content.ts), in the language the caller chose.
 */

export interface DocumentContext extends PageContext {
  seller: Seller
}

const LANGUAGE = { it: 'it-IT', en: 'en-GB' } as const

const REASONS: Record<string, MessageKey> = {
  subscription_change: 'reason.subscription_change',
  subscription_cancellation: 'reason.subscription_cancellation',
  order_change: 'reason.order_change',
  order_cancellation: 'reason.order_cancellation',
  product_unsatisfactory: 'reason.product_unsatisfactory',
  service_unsatisfactory: 'reason.service_unsatisfactory',
  waiver: 'reason.waiver',
}

/** A reason without its own text reads "Credit: <code>". */
export function reasonText(ctx: PageContext, reasonCode: string): string {
  const key = REASONS[reasonCode]
  return key ? ctx.t(key) : `${ctx.t('reason.other')}: ${reasonCode}`
}

/** Each line under its period: a line bills the document's period, or the prorated part of it. */
function linesTable(ctx: PageContext, sheet: Sheet, doc: Figures, period: string) {
  const { t } = ctx
  const money = moneyOf(ctx, doc.currency_code)
  const columns: Column[] = [
    { header: t('invoice.description'), width: 215 },
    { header: t('invoice.quantity'), width: 50, align: 'right' },
    { header: t('document.unitPrice'), width: 85, align: 'right' },
    { header: t('document.vat'), width: 76, align: 'right' },
    { header: t('invoice.amount'), width: 85.28, align: 'right' },
  ]
  const rows: Cell[][] = doc.line_items.map((l) => {
    const prorated = l.amount !== termAmount(l)
    return [
      { text: l.description, note: [period, prorated ? t('document.prorated') : ''].filter(Boolean).join(' · ') },
      { text: String(l.quantity) },
      { text: money(l.unit_amount) },
      { text: vatCell(ctx, doc, l.tax_exempt_reason) },
      { text: money(l.amount) },
    ]
  })
  sheet.table(columns, rows)
}

function totals(ctx: PageContext, sheet: Sheet, currency: string, rows: TotalRow[]) {
  const money = moneyOf(ctx, currency)
  sheet.totals(rows.map((r) => ({ label: r.label, amount: money(r.amount), strong: r.kind !== undefined })))
}

function mentions(ctx: PageContext, sheet: Sheet, doc: Figures) {
  if (reverseCharged(doc)) sheet.paragraph(ctx.t('invoice.reverseCharge'), { bold: true })
  if (exported(doc)) sheet.paragraph(ctx.t('document.export'))
  sheet.paragraph(ctx.t('document.currency', { currency: doc.currency_code }), { grey: true })
}

function parties(ctx: DocumentContext, sheet: Sheet, buyer: Company) {
  sheet.parties(
    { heading: ctx.t('document.seller'), ...sellerParty(ctx, ctx.seller) },
    { heading: ctx.t('document.buyer'), ...buyerParty(ctx, buyer) },
  )
}

function sheetFor(ctx: DocumentContext, title: string, buyer: Company, created: number) {
  return createSheet({
    title,
    subject: buyer.name,
    author: ctx.seller.name,
    created: new Date(created * 1000),
    language: LANGUAGE[ctx.locale],
  })
}

const pageLabel = (ctx: PageContext) => (page: number, pages: number) => ctx.t('document.page', { page, pages })

/** Offline payments (record_payment): when, how, its reference, how much. */
function recordedPayments(ctx: PageContext, sheet: Sheet, invoice: InvoiceBody) {
  if (invoice.recorded_payments.length === 0) return
  const { t } = ctx
  const money = moneyOf(ctx, invoice.currency_code)
  sheet.section(t('document.recordedPayments'))
  sheet.table(
    [
      { header: t('billing.date'), width: 95 },
      { header: t('document.method'), width: 120 },
      { header: t('document.reference'), width: 216.28 },
      { header: t('document.amount'), width: 80, align: 'right' },
    ],
    invoice.recorded_payments.map((p) => [
      { text: dateOf(ctx, p.date) },
      { text: t(`paymentMethod.${p.payment_method}`) },
      { text: p.reference ?? '' },
      { text: money(p.amount) },
    ]),
  )
}

/** What the invoice's credit notes paid back, oldest first. */
function refunds(ctx: PageContext, sheet: Sheet, invoice: InvoiceBody, creditNotes: CreditNoteBody[]) {
  const paidBack = creditNotes.flatMap((n) => n.refunds.map((r) => ({ ...r, note: n }))).sort((a, b) => a.date - b.date)
  if (paidBack.length === 0) return
  const { t } = ctx
  const money = moneyOf(ctx, invoice.currency_code)
  sheet.section(t('document.refunds'))
  sheet.table(
    [
      { header: t('billing.date'), width: 95 },
      { header: t('creditNote.number'), width: 200 },
      { header: t('billing.reason'), width: 136.28 },
      { header: t('document.amount'), width: 80, align: 'right' },
    ],
    paidBack.map((r) => [
      { text: dateOf(ctx, r.date) },
      { text: r.note.id },
      { text: reasonText(ctx, r.note.reason_code) },
      { text: money(r.amount) },
    ]),
  )
}

/** Everything the invoice says: payments recorded, credit notes issued against it, refunds, a void. */
export async function invoicePdf(
  ctx: DocumentContext,
  invoice: InvoiceBody,
  buyer: Company,
  creditNotes: CreditNoteBody[],
): Promise<Buffer> {
  const { t } = ctx
  const period = periodOf(ctx, invoice.period_start, invoice.period_end)
  const sheet = await sheetFor(ctx, `${t('document.title')} ${invoice.id}`, buyer, invoice.date)
  sheet.heading(t('document.title'), [
    [t('document.number'), invoice.id],
    [t('document.date'), dateOf(ctx, invoice.date)],
    [t('document.dueDate'), dateOf(ctx, invoice.due_date)],
    [t('document.period'), period],
    [t('document.status'), invoiceStatusText(ctx, invoice)],
  ])
  parties(ctx, sheet, buyer)
  linesTable(ctx, sheet, invoice, period)
  totals(ctx, sheet, invoice.currency_code, invoiceTotalRows(ctx, invoice))
  mentions(ctx, sheet, invoice)
  if (invoice.status === 'voided' && invoice.voided_at !== null) {
    const voided = t('document.voidedOn', { date: dateOf(ctx, invoice.voided_at) })
    const reason = invoice.void_reason_code ? `: ${reasonText(ctx, invoice.void_reason_code)}` : ''
    sheet.paragraph(`${voided}${reason}`, { bold: true })
  }
  recordedPayments(ctx, sheet, invoice)
  if (creditNotes.length > 0) {
    const money = moneyOf(ctx, invoice.currency_code)
    sheet.section(t('document.creditNotes'))
    sheet.table(
      [
        { header: t('billing.number'), width: 200 },
        { header: t('billing.date'), width: 95 },
        { header: t('billing.reason'), width: 136.28 },
        { header: t('billing.total'), width: 80, align: 'right' },
      ],
      creditNotes.map((n) => [
        { text: n.id },
        { text: dateOf(ctx, n.date) },
        { text: reasonText(ctx, n.reason_code) },
        { text: money(n.total) },
      ]),
    )
  }
  refunds(ctx, sheet, invoice, creditNotes)
  return sheet.finish(pageLabel(ctx))
}

/** The credit note: its reference invoice, reason, lines, tax, total and what is left of it. */
export async function creditNotePdf(
  ctx: DocumentContext,
  note: CreditNoteBody,
  buyer: Company,
  reference: InvoiceBody | null,
): Promise<Buffer> {
  const { t } = ctx
  const period = reference ? periodOf(ctx, reference.period_start, reference.period_end) : ''
  const sheet = await sheetFor(ctx, `${t('creditNote.title')} ${note.id}`, buyer, note.date)
  const facts: Array<[string, string]> = [
    [t('creditNote.number'), note.id],
    [t('document.date'), dateOf(ctx, note.date)],
  ]
  if (note.reference_invoice_id) facts.push([t('creditNote.reference'), note.reference_invoice_id])
  facts.push([t('billing.reason'), reasonText(ctx, note.reason_code)])
  sheet.heading(t('creditNote.title'), facts)
  parties(ctx, sheet, buyer)
  linesTable(ctx, sheet, note, period)
  totals(ctx, sheet, note.currency_code, [
    ...figureRows(ctx, note),
    ...(note.amount_allocated > 0 ? [{ label: t('creditNote.allocated'), amount: -note.amount_allocated }] : []),
    ...(note.amount_refunded > 0 ? [{ label: t('creditNote.refunded'), amount: -note.amount_refunded }] : []),
    { label: t('creditNote.available'), amount: note.amount_available, kind: 'due' as const },
  ])
  if (note.description) sheet.paragraph(note.description)
  mentions(ctx, sheet, note)
  return sheet.finish(pageLabel(ctx))
}
