/**
 * The PDF renderer on one realistic Italian invoice (two lines, a discount, VAT, a credit note):
 * bytes of the file, the first document (which loads pdfkit) and the time per document after it.
 * `node --import tsx bench/pdf-documents.ts [count] [file.pdf]` (the file: to keep the document);
 * bench/README.md ("PDF documents") has figures.
 */
import fs from 'node:fs'
import os from 'node:os'
import { invoicePdf } from '../src/modules/invoice-documents/invoice-documents.render.ts'
import { translator } from '../src/modules/hosted/hosted.i18n.ts'
import type { CreditNoteBody, InvoiceBody } from '../src/modules/invoices/index.ts'
import type { Company } from '../src/modules/companies/companies.schemas.ts'

const count = Number(process.argv[2] ?? 300)
const start = Date.UTC(2027, 3, 1) / 1000
const seller = {
  name: 'Rossi S.r.l.',
  address: 'Via Roma 1|20121 Milano MI',
  country: 'IT',
  vatNumber: 'IT01234567890',
}
const ctx = { locale: 'it' as const, t: translator('it'), seller }
const invoice: InvoiceBody = {
  id: '6f1c2f0e-7a51-4d55-9b1e-0c2a3e4b5d6f',
  subscription_id: '0b8f6c1a-3d2e-4f5a-8b9c-1d2e3f4a5b6c',
  status: 'paid',
  date: start,
  due_date: start,
  period_start: start,
  period_end: Date.UTC(2027, 4, 1) / 1000,
  line_items: [
    { entity_type: 'plan', entity_id: 'gold', description: 'Gold', unit_amount: 3000, quantity: 25, amount: 75000 },
    {
      entity_type: 'addon',
      entity_id: 'stamping',
      description: 'Timbrature',
      unit_amount: 200,
      quantity: 25,
      amount: 5000,
    },
  ],
  discounts: [{ description: 'BENVENUTO 10%', amount: 8000 }],
  sub_total: 80000,
  taxes: [{ name: 'IT VAT', rate: 22, amount: 15840 }],
  total: 87840,
  credits_applied: 3172,
  amount_paid: 84668,
  amount_adjusted: 0,
  write_off_amount: 0,
  amount_due: 0,
  currency_code: 'EUR',
  paid_at: start,
  dunning_status: null,
  attempt_count: 1,
  next_retry_at: null,
  recorded_payments: [],
  voided_at: null,
  void_reason_code: null,
  comments: [],
  amount_refunded: 0,
}
const buyer = {
  name: 'Ristorante Città Alta S.p.A.',
  address: 'Piazza Vecchia 3',
  zip: '24129',
  city: 'Bergamo',
  province: 'BG',
  country: 'IT',
  vat_number: 'IT09876543210',
  vat: null,
  fiscal_code: null,
} as unknown as Company
const note = {
  id: '2a4c6e80-1b3d-4f5a-9c7e-8d6b4a2c0e1f',
  reference_invoice_id: invoice.id,
  reason_code: 'subscription_change',
  total: 12688,
  date: Date.UTC(2027, 3, 5) / 1000,
} as CreditNoteBody

let at = performance.now()
const first = await invoicePdf(ctx, invoice, buyer, [note])
const firstMs = performance.now() - at
if (process.argv[3]) fs.writeFileSync(process.argv[3], first)
for (let i = 0; i < 20; i++) await invoicePdf(ctx, invoice, buyer, [note])
at = performance.now()
for (let i = 0; i < count; i++) await invoicePdf(ctx, invoice, buyer, [note])
const each = (performance.now() - at) / count
console.log(
  `${first.length} bytes; first document ${firstMs.toFixed(0)} ms; then ${each.toFixed(2)} ms per document ` +
    `over ${count} (load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores, Node ${process.version})`,
)
