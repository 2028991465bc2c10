import type { Clock } from '../../core/clock.ts'
import type { HostedPageKind, HostedPageRow, HostedPageState } from '../../db/tables.ts'
import { AppError, Conflict, Forbidden, Gone, NotFound, ValidationError } from '../../core/errors.ts'
import type { CatalogueService } from '../catalogue/catalogue.service.ts'
import type { CompaniesService } from '../companies/companies.service.ts'
import type { InvoicesService } from '../invoices/index.ts'
import type { KeysetPage } from '../../db/keyset.ts'
import type { SubscriptionsService } from '../subscriptions/index.ts'
import { readCard, type CardProblem } from './hosted.card.ts'
import { hashToken } from './hosted.csrf.ts'
import { finishedRedirect } from './hosted.redirect.ts'
import type { HostedRepository, OpenedPage } from './hosted.repository.ts'

/** 404 unknown, 410 expired or withdrawn (its client revoked), 403 disabled company, 409 already finished. */
export type RefusalReason = 'not_found' | 'expired' | 'withdrawn' | 'disabled' | 'used'

const REFUSALS: Record<RefusalReason, { as: 'not_found' | 'gone' | 'forbidden' | 'conflict'; message: string }> = {
  not_found: { as: 'not_found', message: 'The hosted page is unknown' },
  expired: { as: 'gone', message: 'The hosted page is expired' },
  withdrawn: { as: 'gone', message: 'The hosted page was withdrawn: the client that made it is revoked' },
  disabled: { as: 'forbidden', message: 'The hosted page is not available: its company is disabled' },
  used: { as: 'conflict', message: 'The hosted page is used' },
}

/** A hosted page that cannot be used, and why: the pages answer it in the visitor's language. */
export type PageRefused = AppError & { readonly reason: RefusalReason }

export function pageRefused(reason: RefusalReason): PageRefused {
  const { as, message } = REFUSALS[reason]
  const err =
    as === 'gone'
      ? new Gone(message)
      : as === 'forbidden'
        ? new Forbidden(message)
        : as === 'conflict'
          ? new Conflict(message)
          : new AppError('not_found', message)
  return Object.assign(err, { reason })
}

export const isPageRefused = (err: unknown): err is PageRefused => err instanceof AppError && 'reason' in err

/** An invoice id that is not one of the portal's company (or no invoice id at all): a 404 page of its own. */
export class InvoiceUnknown extends NotFound {
  constructor() {
    super('Invoice')
  }
}

export const PORTAL_LIST_LIMIT = 36

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const OPEN: Record<HostedPageKind, HostedPageState[]> = {
  manager: ['created', 'requested'],
  payment: ['created', 'requested'],
  portal: ['created', 'logged_in'],
}

/**
 * The local provider's hosted pages. Every action opens the page by its token first; finishing
 * moves it in one conditional statement, so a double submit finishes it once.
 */
export function createHostedService(deps: {
  repo: HostedRepository
  subscriptions: Pick<
    SubscriptionsService,
    | 'details'
    | 'estimate'
    | 'update'
    | 'cancel'
    | 'removeScheduledCancellation'
    | 'setPaymentSource'
    | 'detailsWithNextCharge'
  >
  catalogue: Pick<CatalogueService, 'getPlanBySku'>
  invoices: Pick<InvoicesService, 'listInvoices' | 'listCreditNotes' | 'invoice'>
  companies: Pick<CompaniesService, 'getCompany'>
  /** The API's invoice PDF; a port, since the documents module reads the hosted pages' texts. */
  documents: {
    invoicePdf(companyId: string, invoiceId: string): Promise<{ filename: string; content: Buffer; language: string }>
  }
  clock: Clock
}) {
  const { repo, subscriptions, clock } = deps

  async function open(kind: HostedPageKind, token: string): Promise<OpenedPage> {
    const page = /^[A-Za-z0-9_-]{43}$/.test(token) ? await repo.findByTokenHash(hashToken(token)) : undefined
    if (!page || page.kind !== kind) throw pageRefused('not_found')
    if (clock.now() >= page.expires_at) throw pageRefused('expired')
    // At every request: a link is worth no more than the client that made it and its company.
    if (page.client_revoked) throw pageRefused('withdrawn')
    if (page.company_disabled) throw pageRefused('disabled')
    if (!OPEN[kind].includes(page.state)) throw pageRefused('used')
    return page
  }

  async function checkCompany(companyId: string): Promise<void> {
    if (await repo.companyDisabled(companyId)) throw new Forbidden('The company is disabled')
  }

  /** Refused (as used or expired) when another request got there first. */
  async function move(page: HostedPageRow, to: HostedPageState): Promise<HostedPageRow> {
    const now = clock.now()
    const moved = await repo.transition(page, OPEN[page.kind], to, now)
    if (!moved) throw pageRefused(now >= page.expires_at ? 'expired' : 'used')
    return moved
  }

  // The page is claimed first, so a second submit is refused before touching the subscription; a
  // refused change puts it back to `requested` for another try.
  async function finish(page: HostedPageRow, change: () => Promise<unknown>): Promise<string> {
    const done = await move(page, 'succeeded')
    try {
      await change()
    } catch (err) {
      await repo.transition(done, ['succeeded'], 'requested', clock.now())
      throw err
    }
    return finishedRedirect(page.redirect_url, { id: page.id, state: 'succeeded' })
  }

  async function portalVisit(token: string): Promise<HostedPageRow> {
    const page: HostedPageRow = await open('portal', token)
    return page.state === 'created' ? move(page, 'logged_in') : page
  }

  const actor = (page: HostedPageRow) => `${page.kind === 'portal' ? 'portal_session' : 'hosted_page'}:${page.id}`

  function selection(form: { plan?: string; quantity?: string }) {
    const quantity = Number(form.quantity ?? '')
    if (!form.plan || !Number.isInteger(quantity) || quantity < 1 || quantity > 100_000) {
      throw new ValidationError('choose a plan and a number of users between 1 and 100000')
    }
    return { plan: form.plan, quantity }
  }

  return {
    open,
    checkCompany,

    async managerView(token: string) {
      let page: HostedPageRow = await open('manager', token)
      if (page.state === 'created') page = await move(page, 'requested')
      const details = await subscriptions.details(page.company_id)
      const plans = await Promise.all(
        details.product.allowed_plans.map(async (sku) => (await deps.catalogue.getPlanBySku(sku)).plan),
      )
      return { page, details, plans }
    },

    async managerEstimate(token: string, form: { plan?: string; quantity?: string }) {
      const page = await open('manager', token)
      const chosen = selection(form)
      const details = await subscriptions.details(page.company_id)
      const plan = (await deps.catalogue.getPlanBySku(chosen.plan)).plan
      const { estimate } = await subscriptions.estimate(
        page.subscription_id,
        {
          company_id: page.company_id,
          product_sku: details.product.sku,
          subscription_plan: chosen.plan,
          plan_quantity: chosen.quantity,
        },
        page.company_id,
      )
      return { page, details, plan, quantity: chosen.quantity, estimate }
    },

    async managerConfirm(token: string, form: { plan?: string; quantity?: string }): Promise<string> {
      const page = await open('manager', token)
      const chosen = selection(form)
      return finish(page, () =>
        subscriptions.update(
          page.company_id,
          page.subscription_id,
          { subscription_plan: chosen.plan, plan_quantity: chosen.quantity },
          actor(page),
        ),
      )
    },

    async leave(kind: 'manager' | 'payment', token: string): Promise<string> {
      const page = await move(await open(kind, token), 'cancelled')
      return finishedRedirect(page.redirect_url, { id: page.id, state: 'cancelled' })
    },

    async paymentView(token: string) {
      let page: HostedPageRow = await open('payment', token)
      if (page.state === 'created') page = await move(page, 'requested')
      return { page }
    },

    /** Kept as brand, last 4 digits and expiry; a wrong card answers the problems to show with the form. */
    async paymentSubmit(
      token: string,
      form: { number?: string; expiry_month?: string; expiry_year?: string },
    ): Promise<{ redirect: string } | { problem: CardProblem; page: HostedPageRow }> {
      const page = await open('payment', token)
      const read = readCard(form, clock.now())
      if ('problem' in read) return { problem: read.problem, page }
      return {
        redirect: await finish(page, () => subscriptions.setPaymentSource(page.company_id, read.card, actor(page))),
      }
    },

    async portalView(token: string) {
      const page = await portalVisit(token)
      const newest = { limit: PORTAL_LIST_LIMIT }
      const [current, invoices, creditNotes] = await Promise.all([
        subscriptions.detailsWithNextCharge(page.company_id),
        deps.invoices.listInvoices(page.company_id, newest),
        deps.invoices.listCreditNotes(page.company_id, newest),
      ])
      return { page, ...current, invoices, creditNotes }
    },

    async portalInvoices(token: string, keyset: KeysetPage) {
      const page = await portalVisit(token)
      return { page, invoices: await deps.invoices.listInvoices(page.company_id, keyset) }
    },

    /** Any id not of the portal's company is the same 404: the portal tells nothing of others' invoices. */
    async portalInvoice(token: string, invoiceId: string) {
      const page = await portalVisit(token)
      if (!UUID.test(invoiceId)) throw new InvoiceUnknown()
      const invoice = await deps.invoices.invoice(page.company_id, invoiceId.toLowerCase()).catch((err: unknown) => {
        if (err instanceof NotFound) throw new InvoiceUnknown()
        throw err
      })
      return { page, invoice, buyer: await deps.companies.getCompany(page.company_id) }
    },

    /** The invoice's PDF, as the API serves it, under the same rule as the printable page. */
    async portalInvoicePdf(token: string, invoiceId: string) {
      const page = await portalVisit(token)
      if (!UUID.test(invoiceId)) throw new InvoiceUnknown()
      return deps.documents.invoicePdf(page.company_id, invoiceId.toLowerCase()).catch((err: unknown) => {
        if (err instanceof NotFound) throw new InvoiceUnknown()
        throw err
      })
    },

    async portalCancel(token: string) {
      const page = await open('portal', token)
      await subscriptions.cancel(page.company_id, page.company_id, {}, true, actor(page))
    },

    async portalUndo(token: string) {
      const page = await open('portal', token)
      await subscriptions.removeScheduledCancellation(page.company_id, page.subscription_id, actor(page))
    },

    async portalLogout(token: string): Promise<string> {
      const page = await move(await open('portal', token), 'logged_out')
      return page.redirect_url
    },
  }
}

export type HostedService = ReturnType<typeof createHostedService>
