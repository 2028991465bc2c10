import type { App } from '../../http/app-types.ts'
import { CompanyParams } from '../../http/schemas.ts'
import type { InvoicesService } from './invoices.service.ts'
import {
  CreditNoteBody,
  CreditNoteList,
  CreditNoteParams,
  InvoiceBody,
  InvoiceList,
  InvoiceParams,
  ListQuery,
} from './invoices.schemas.ts'
import { answerPage, listResponse, readPage } from '../../http/pagination.ts'

const BASE = '/api/v1/subscription'

// The ledger of a company's subscription, read-only: the local engine writes it when it bills;
// a Chargebee-managed subscription's is copied from Chargebee (chargebee/chargebee-ledger.service.ts).
export async function invoicesRoutes(
  app: App,
  { service, subscriptionOf }: { service: InvoicesService; subscriptionOf: (companyId: string) => Promise<unknown> },
) {
  const tags = ['Invoices']
  const company = { access: { area: 'company' } } as const
  const who = "Needs read:company (a company token on its own id, or a platform token); another company's id is 404."
  const paging =
    'Newest first. Without limit, the whole list; with limit (1–500), one page and, when more ' +
    'remain, a Link: <url>; rel="next" header carrying the cursor of the next page. A cursor this ' +
    'list did not give is 400.'
  const chargebee =
    "The local billing engine writes these; a Chargebee-managed subscription's are Chargebee's, " +
    "copied from its webhooks and the reconciliation (ids derived from Chargebee's)."

  app.get(
    `${BASE}/:company_id/invoices`,
    {
      config: company,
      schema: {
        operationId: 'listInvoices',
        tags,
        summary: "The company's invoices",
        description:
          `Each trial conversion, renewal and immediate charge of a change, with what credits paid, ` +
          `what the card paid and what is still due (amounts in minor units, times in Unix seconds). ` +
          `${paging} ${chargebee} ${who} Changes nothing. 404 when the company has no subscription.`,
        params: CompanyParams,
        querystring: ListQuery,
        response: { 200: listResponse(InvoiceList) },
      },
    },
    async (request, reply) => {
      await subscriptionOf(request.params.company_id)
      const page = readPage(request, ['time', 'int'])
      return answerPage(request, reply, page, await service.listInvoices(request.params.company_id, page))
    },
  )

  app.get(
    `${BASE}/:company_id/invoices/:invoice_id`,
    {
      config: company,
      schema: {
        operationId: 'getInvoice',
        tags,
        summary: 'One invoice of the company',
        description:
          `The invoice with its lines, discounts, taxes, credits applied, payments, ` +
          `and dunning state (next_retry_at). ` +
          `${who} Changes nothing. 404 when the invoice is not the company's.`,
        params: InvoiceParams,
        response: { 200: InvoiceBody },
      },
    },
    async (request) => service.invoice(request.params.company_id, request.params.invoice_id),
  )

  app.get(
    `${BASE}/:company_id/credit_notes`,
    {
      config: company,
      schema: {
        operationId: 'listCreditNotes',
        tags,
        summary: "The company's credit notes",
        description:
          `Credits issued to the customer: the unused share of what a term's invoice charged, ` +
          `when the term is changed mid-way (refundable, reason subscription_change) ` +
          `or cancelled now (reason subscription_cancellation), with its lines, discounts and tax ` +
          `as invoices carry them, never more than the reference invoice charged; ` +
          `applied to the next invoices; amount_available is what is left. ` +
          `${paging} ${chargebee} ${who} Changes nothing. 404 when the company has no subscription.`,
        params: CompanyParams,
        querystring: ListQuery,
        response: { 200: listResponse(CreditNoteList) },
      },
    },
    async (request, reply) => {
      await subscriptionOf(request.params.company_id)
      const page = readPage(request, ['time', 'int'])
      return answerPage(request, reply, page, await service.listCreditNotes(request.params.company_id, page))
    },
  )

  app.get(
    `${BASE}/:company_id/credit_notes/:credit_note_id`,
    {
      config: company,
      schema: {
        operationId: 'getCreditNote',
        tags,
        summary: 'One credit note of the company',
        description:
          `The credit note with its lines, tax, what was applied to invoices, refunded, and is left ` +
          `(amount_available). ${who} Changes nothing. 404 when the credit note is not the company's.`,
        params: CreditNoteParams,
        response: { 200: CreditNoteBody },
      },
    },
    async (request) => service.findCreditNote(request.params.company_id, request.params.credit_note_id),
  )
}
