import type { Clock } from '../../core/clock.ts'
import type { HostedPageKind, HostedPageRow, HostedPageState } from '../../db/tables.ts'
import { AppError, Conflict, Forbidden, Gone, NotFound, ValidationError } from '../../core/errors.ts'
import type { CatalogueService } from '../catalogue/catalogue.service.ts'
import type { CompaniesService } from '../companies/companies.service.ts'
import type { InvoicesService } from '../invoices/invoices.service.ts'
import type { KeysetPage } from '../../db/keyset.ts'
import type { SubscriptionsService } from '../subscriptions/subscriptions.service.ts'
import { readCard, type CardProblem } from './hosted.card.ts'
import { hashToken } from './hosted.csrf.ts'
import { finishedRedirect } from './hosted.redirect.ts'
import type { HostedRepository, OpenedPage } from './hosted.repository.ts'

/**
 * Why a page is refused: unknown or of another kind (404), expired (410), made by a client that
 * has since been revoked (410: withdrawn for good), of a disabled company (403: until the
 * platform enables it again), already finished (409).
 */
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
  const err = as === 'gone' ? new Gone(message) : as === 'forbidden' ? new Forbidden(message) : as === 'conflict' ? new Conflict(message) : new AppError('not_found', message)
  return Object.assign(err, { reason })
}

export const isPageRefused = (err: unknown): err is PageRefused => err instanceof AppError && 'reason' in err

/** An invoice id that is not one of the portal's company (or no invoice id at all): a 404 page of its own. */
export class InvoiceUnknown extends NotFound {
  constructor() { super('Invoice') }
}

/** How many invoices and credit notes the portal lists (the newest): years of monthly invoices. */
export const PORTAL_LIST_LIMIT = 36

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** What a page still accepts: a portal until logged out, a page until succeeded or cancelled. */
const OPEN: Record<HostedPageKind, HostedPageState[]> = {
  manager: ['created', 'requested'], payment: ['created', 'requested'], portal: ['created', 'logged_in'],
}

/**
 * What the hosted pages do (the local provider's pages of spec 1, 10, 11). Every action first
 * opens the page by its token (refused when unknown, expired or finished); finishing moves the
 * page in one conditional statement, so a double submit finishes it once.
 */
export function createHostedService(deps: {
  repo: HostedRepository
  subscriptions: Pick<SubscriptionsService, 'details' | 'estimate' | 'update' | 'cancel' | 'removeScheduledCancellation' | 'setPaymentSource' | 'detailsWithNextCharge'>
  catalogue: Pick<CatalogueService, 'getPlanBySku'>
  invoices: Pick<InvoicesService, 'listInvoices' | 'listCreditNotes' | 'invoice'>
  companies: Pick<CompaniesService, 'getCompany'>
  clock: Clock
}) {
  const { repo, subscriptions, clock } = deps

  async function open(kind: HostedPageKind, token: string): Promise<OpenedPage> {
    const page = /^[A-Za-z0-9_-]{43}$/.test(token) ? await repo.findByTokenHash(hashToken(token)) : undefined
    if (!page || page.kind !== kind) throw pageRefused('not_found')
    if (clock.now() >= page.expires_at) throw pageRefused('expired')
    // Checked at every request (view or form): a link handed to a browser is worth no more than
    // the client that made it and the company it belongs to.
    if (page.client_revoked) throw pageRefused('withdrawn')
    if (page.company_disabled) throw pageRefused('disabled')
    if (!OPEN[kind].includes(page.state)) throw pageRefused('used')
    return page
  }

  /** No new page for a disabled company (a company's own token is refused before this, by auth). */
  async function checkCompany(companyId: string): Promise<void> {
    if (await repo.companyDisabled(companyId)) throw new Forbidden('The company is disabled')
  }

  /** Moves an open page on; refused (as used or expired) when another request got there first. */
  async function move(page: HostedPageRow, to: HostedPageState): Promise<HostedPageRow> {
    const now = clock.now()
    const moved = await repo.transition(page, OPEN[page.kind], to, now)
    if (!moved) throw pageRefused(now >= page.expires_at ? 'expired' : 'used')
    return moved
  }

  /**
   * Finishes a page with the change it was for. The page is claimed first (so a second submit
   * is refused before touching the subscription); if the change is refused, the page goes back
   * to `requested` and the customer may try again.
   */
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

  /** Opens the portal; its first visit, whichever of its pages, logs the session in. */
  async function portalVisit(token: string): Promise<HostedPageRow> {
    const page: HostedPageRow = await open('portal', token)
    return page.state === 'created' ? move(page, 'logged_in') : page
  }

  const actor = (page: HostedPageRow) => `${page.kind === 'portal' ? 'portal_session' : 'hosted_page'}:${page.id}`

  /** The manager page's selection, from the form: a plan sku and a quantity. */
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

    /** The manager page: the subscription and the product's allowed plans. Opening it marks it requested. */
    async managerView(token: string) {
      let page: HostedPageRow = await open('manager', token)
      if (page.state === 'created') page = await move(page, 'requested')
      const details = await subscriptions.details(page.company_id)
      const plans = await Promise.all(details.product.allowed_plans.map(async (sku) => (await deps.catalogue.getPlanBySku(sku)).plan))
      return { page, details, plans }
    },

    /** The estimate of the chosen plan and quantity (nothing changes yet). */
    async managerEstimate(token: string, form: { plan?: string; quantity?: string }) {
      const page = await open('manager', token)
      const chosen = selection(form)
      const details = await subscriptions.details(page.company_id)
      const plan = (await deps.catalogue.getPlanBySku(chosen.plan)).plan
      const { estimate } = await subscriptions.estimate(page.subscription_id, {
        company_id: page.company_id, product_sku: details.product.sku, subscription_plan: chosen.plan, plan_quantity: chosen.quantity,
      }, page.company_id)
      return { page, details, plan, quantity: chosen.quantity, estimate }
    },

    /** Applies the chosen plan and quantity (as update, 6) and finishes the page; answers where the browser goes. */
    async managerConfirm(token: string, form: { plan?: string; quantity?: string }): Promise<string> {
      const page = await open('manager', token)
      const chosen = selection(form)
      return finish(page, () => subscriptions.update(page.company_id, page.subscription_id, { subscription_plan: chosen.plan, plan_quantity: chosen.quantity }, actor(page)))
    },

    /** The customer leaves a page without finishing it: cancelled, back to the redirect URL. */
    async leave(kind: 'manager' | 'payment', token: string): Promise<string> {
      const page = await move(await open(kind, token), 'cancelled')
      return finishedRedirect(page.redirect_url, { id: page.id, state: 'cancelled' })
    },

    /** The payment page's form. Opening it marks it requested. */
    async paymentView(token: string) {
      let page: HostedPageRow = await open('payment', token)
      if (page.state === 'created') page = await move(page, 'requested')
      return { page }
    },

    /**
     * A test card: checked here, kept as brand, last 4 digits and expiry; the page succeeds.
     * A wrong card answers the problems to show again with the form (nothing changes).
     */
    async paymentSubmit(token: string, form: { number?: string; expiry_month?: string; expiry_year?: string }): Promise<{ redirect: string } | { problem: CardProblem; page: HostedPageRow }> {
      const page = await open('payment', token)
      const read = readCard(form, clock.now())
      if ('problem' in read) return { problem: read.problem, page }
      return { redirect: await finish(page, () => subscriptions.setPaymentSource(page.company_id, read.card, actor(page))) }
    },

    /**
     * The portal: the subscription, its next charge and card, and its ledger (the newest
     * invoices and credit notes; the credits are the details' customer's). The first visit
     * logs the session in.
     */
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

    /** A page of the company's invoices, newest first (the portal lists the newest; this goes further back). */
    async portalInvoices(token: string, keyset: KeysetPage) {
      const page = await portalVisit(token)
      return { page, invoices: await deps.invoices.listInvoices(page.company_id, keyset) }
    },

    /**
     * One invoice of the portal's company, with the company as its buyer. Any other id (another
     * company's, unknown, not a UUID) is the same 404: the portal tells nothing of others' invoices.
     */
    async portalInvoice(token: string, invoiceId: string) {
      const page = await portalVisit(token)
      if (!UUID.test(invoiceId)) throw new InvoiceUnknown()
      const invoice = await deps.invoices.invoice(page.company_id, invoiceId.toLowerCase()).catch((err: unknown) => {
        if (err instanceof NotFound) throw new InvoiceUnknown()
        throw err
      })
      return { page, invoice, buyer: await deps.companies.getCompany(page.company_id) }
    },

    async portalCancel(token: string) {
      const page = await open('portal', token)
      await subscriptions.cancel(page.company_id, page.company_id, {}, true, actor(page))
    },

    async portalUndo(token: string) {
      const page = await open('portal', token)
      await subscriptions.removeScheduledCancellation(page.company_id, page.subscription_id, actor(page))
    },

    /** Logs the session out (it can no longer be used) and answers the redirect URL. */
    async portalLogout(token: string): Promise<string> {
      const page = await move(await open('portal', token), 'logged_out')
      return page.redirect_url
    },
  }
}

export type HostedService = ReturnType<typeof createHostedService>
