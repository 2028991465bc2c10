import type { FastifyReply, FastifyRequest } from 'fastify'
import type { App } from '../../http/app-types.ts'
import { Forbidden } from '../../core/errors.ts'
import { toAppError } from '../../http/error-handler.ts'
import { statusOf } from '../../http/error-status.ts'
import type { HostedPageKind, HostedPageRow } from '../../db/tables.ts'
import { csrfCookie, csrfFor, csrfRefusal, CSRF_FIELD } from './hosted.csrf.ts'
import { dateOf, errorPage, STYLESHEET } from './hosted.html.ts'
import { localeOf, translator, type Locale, type MessageKey, type Translate } from './hosted.i18n.ts'
import { pagePath } from './hosted.pages.ts'
import { originOf } from './hosted.redirect.ts'
import { InvoiceUnknown, isPageRefused, type HostedService, type RefusalReason } from './hosted.service.ts'
import { INVOICE_STYLE_HASH, invoiceDocument, type Seller } from './hosted.invoice.ts'
import {
  invoicesPage,
  managerEstimatePage,
  managerPage,
  paymentPage,
  portalPage,
  type ViewContext,
} from './hosted.views.ts'
import { nextPageUrl, pageQuery, readPage } from '../../http/pagination.ts'

type Form = Record<string, string>

const REFUSAL_MESSAGES: Record<RefusalReason, MessageKey> = {
  not_found: 'error.notFound',
  expired: 'error.expired',
  withdrawn: 'error.withdrawn',
  disabled: 'error.disabled',
  used: 'error.used',
}
type TokenRequest = FastifyRequest<{
  Params: { token: string }
  Body: Form | undefined
  Querystring: { done?: string }
}>
type InvoiceRequest = FastifyRequest<{ Params: { token: string; invoice_id: string } }>
type PagedRequest = FastifyRequest<{ Params: { token: string }; Querystring: { limit?: number; cursor?: string } }>

class CsrfRefused extends Forbidden {
  constructor() {
    super('The form could not be verified')
  }
}

/**
 * The local provider's hosted pages (HTML, hidden from the OpenAPI document): forms, errors as HTML
 * pages, and security headers (no script, no framing, no referrer: the URL's token stays here).
 */
export async function hostedRoutes(
  app: App,
  deps: { service: HostedService; publicBaseUrl: string | undefined; seller: Seller },
) {
  const { service } = deps
  const secure = deps.publicBaseUrl?.startsWith('https:') ?? false
  const hidden = { hide: true } as const
  const none = { access: 'none' } as const
  // The token in the URL is redacted in logs. No automatic HEAD: opening a page changes its state.
  const tokenRoute = { config: none, schema: hidden, exposeHeadRoute: false } as const

  // Forms only: a JSON body is a 415.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 8192 },
    (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)))
    },
  )

  app.addHook('onSend', async (_request, reply) => {
    if (!reply.hasHeader('content-security-policy')) reply.header('content-security-policy', csp(null))
    reply.header('x-frame-options', 'DENY')
    reply.header('referrer-policy', 'no-referrer')
    reply.header('x-content-type-options', 'nosniff')
    reply.header('cache-control', 'no-store')
  })

  function language(request: FastifyRequest): { locale: Locale; t: Translate } {
    const locale = localeOf(request.headers['accept-language'])
    return { locale, t: translator(locale) }
  }

  /** Forms may post to the redirect origin too: a form's 303 must be allowed. */
  function csp(page: HostedPageRow | null): string {
    const forms = page ? `'self' ${originOf(page.redirect_url)}` : `'self'`
    return (
      `default-src 'none'; style-src 'self'; img-src 'self'; form-action ${forms}; frame-ancestors 'none'; ` +
      `base-uri 'none'`
    )
  }

  function sendPage(
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    body: string,
    page: HostedPageRow | null,
  ) {
    const { locale } = language(request)
    return reply
      .code(status)
      .header('content-type', 'text/html; charset=utf-8')
      .header('content-language', locale)
      .header('vary', 'Accept-Language')
      .header('content-security-policy', csp(page))
      .send(body)
  }

  function viewContext(request: FastifyRequest<{ Params: { token: string } }>, kind: HostedPageKind): ViewContext {
    const token = request.params.token
    return { ...language(request), base: pagePath(kind, token), csrf: csrfFor(token) }
  }

  /** Sets the CSRF cookie, scoped to this page's path. */
  function sendForm(
    request: TokenRequest,
    reply: FastifyReply,
    kind: HostedPageKind,
    status: number,
    body: string,
    page: HostedPageRow,
  ) {
    const token = request.params.token
    reply.header(
      'set-cookie',
      csrfCookie(csrfFor(token), pagePath(kind, token), secure || request.protocol === 'https'),
    )
    return sendPage(request, reply, status, body, page)
  }

  async function checkedPost(request: TokenRequest, kind: HostedPageKind) {
    const found = await service.open(kind, request.params.token)
    const refusal = csrfRefusal(
      request.params.token,
      {
        host: request.host,
        origin: header(request, 'origin'),
        secFetchSite: header(request, 'sec-fetch-site'),
        cookie: header(request, 'cookie'),
        field: request.body?.[CSRF_FIELD],
      },
      deps.publicBaseUrl,
    )
    if (refusal) {
      request.log.warn({ page: found.id, refusal }, 'hosted page form refused')
      throw new CsrfRefused()
    }
    return found
  }

  const seeOther = (reply: FastifyReply, location: string) => reply.code(303).header('location', location).send()

  app.setErrorHandler((err, request, reply) => {
    const { locale, t } = language(request)
    const ctx = { locale, t }
    if (isPageRefused(err)) {
      return sendPage(request, reply, statusOf(err), errorPage(ctx, t(REFUSAL_MESSAGES[err.reason])), null)
    }
    const mapped = toAppError(err as never)
    const status = statusOf(mapped)
    if (status >= 500) request.log.error({ err }, 'hosted page failed')
    const message =
      status === 403
        ? t('error.forbidden')
        : err instanceof InvoiceUnknown
          ? t('error.invoiceNotFound')
          : status === 404
            ? t('error.notFound')
            : status === 409
              ? t('error.conflict', { reason: mapped.message })
              : status < 500
                ? t('error.invalid', { reason: mapped.message })
                : t('error.server')
    return sendPage(request, reply, status, errorPage(ctx, message), null)
  })

  app.get('/hosted/assets/hosted.css', { config: none, schema: hidden }, async (_request, reply) =>
    reply.header('content-type', 'text/css; charset=utf-8').send(STYLESHEET),
  )

  app.get('/hosted/manager/:token', tokenRoute, async (request: TokenRequest, reply) => {
    const { page, details, plans } = await service.managerView(request.params.token)
    return sendForm(request, reply, 'manager', 200, managerPage(viewContext(request, 'manager'), details, plans), page)
  })
  app.post('/hosted/manager/:token/estimate', tokenRoute, async (request: TokenRequest, reply) => {
    await checkedPost(request, 'manager')
    const { page, plan, quantity, estimate } = await service.managerEstimate(request.params.token, request.body ?? {})
    return sendForm(
      request,
      reply,
      'manager',
      200,
      managerEstimatePage(viewContext(request, 'manager'), plan, quantity, estimate),
      page,
    )
  })
  app.post('/hosted/manager/:token/confirm', tokenRoute, async (request: TokenRequest, reply) => {
    await checkedPost(request, 'manager')
    return seeOther(reply, await service.managerConfirm(request.params.token, request.body ?? {}))
  })

  app.get('/hosted/payment/:token', tokenRoute, async (request: TokenRequest, reply) => {
    const { page } = await service.paymentView(request.params.token)
    return sendForm(request, reply, 'payment', 200, paymentPage(viewContext(request, 'payment'), null), page)
  })
  app.post('/hosted/payment/:token/submit', tokenRoute, async (request: TokenRequest, reply) => {
    await checkedPost(request, 'payment')
    const form = request.body ?? {}
    const result = await service.paymentSubmit(request.params.token, form)
    if ('redirect' in result) return seeOther(reply, result.redirect)
    const kept = { expiry_month: form.expiry_month?.slice(0, 4), expiry_year: form.expiry_year?.slice(0, 4) }
    return sendForm(
      request,
      reply,
      'payment',
      400,
      paymentPage(viewContext(request, 'payment'), result.problem, kept),
      result.page,
    )
  })

  for (const kind of ['manager', 'payment'] as const) {
    app.post(`/hosted/${kind}/:token/leave`, tokenRoute, async (request: TokenRequest, reply) => {
      await checkedPost(request, kind)
      return seeOther(reply, await service.leave(kind, request.params.token))
    })
  }

  app.get('/hosted/portal/:token', tokenRoute, async (request: TokenRequest, reply) => {
    const { page, details, next, invoices, creditNotes } = await service.portalView(request.params.token)
    const ctx = viewContext(request, 'portal')
    const done = request.query.done
    const notice =
      done === 'cancelled' && details.subscription.scheduled_cancellation_at !== null
        ? ctx.t('portal.cancelled', { date: dateOf(ctx, details.subscription.scheduled_cancellation_at) })
        : done === 'undone'
          ? ctx.t('portal.undone')
          : null
    return sendForm(
      request,
      reply,
      'portal',
      200,
      portalPage(ctx, details, next, notice, { invoices, creditNotes }),
      page,
    )
  })

  app.get(
    '/hosted/portal/:token/invoices',
    { ...tokenRoute, schema: { hide: true, querystring: pageQuery() } },
    async (request: PagedRequest, reply) => {
      const page = readPage(request, ['time', 'int'])
      const { page: row, invoices } = await service.portalInvoices(request.params.token, page)
      const ctx = viewContext(request, 'portal')
      return sendPage(
        request,
        reply,
        200,
        invoicesPage(ctx, invoices.items, nextPageUrl(request, page, invoices.next)),
        row,
      )
    },
  )

  // Printable invoices: their one style is inside, allowed by its hash; nothing else runs or loads.
  const documentCsp =
    `default-src 'none'; style-src ${INVOICE_STYLE_HASH}; img-src 'none'; form-action 'none'; ` +
    "frame-ancestors 'none'; base-uri 'none'"
  for (const download of [false, true]) {
    app.get(
      `/hosted/portal/:token/invoices/:invoice_id${download ? '/download' : ''}`,
      tokenRoute,
      async (request: InvoiceRequest, reply) => {
        const { invoice, buyer } = await service.portalInvoice(request.params.token, request.params.invoice_id)
        const { locale, t } = language(request)
        const portal = download ? null : pagePath('portal', request.params.token)
        const body = invoiceDocument({ locale, t, seller: deps.seller, portal }, invoice, buyer)
        if (download)
          reply.header('content-disposition', `attachment; filename="${t('document.filename')}-${invoice.id}.html"`)
        return reply
          .code(200)
          .header('content-type', 'text/html; charset=utf-8')
          .header('content-language', locale)
          .header('vary', 'Accept-Language')
          .header('content-security-policy', documentCsp)
          .send(body)
      },
    )
  }
  // The same file as the API's, in the company's language; the token stays out of its name.
  app.get('/hosted/portal/:token/invoices/:invoice_id/pdf', tokenRoute, async (request: InvoiceRequest, reply) => {
    const file = await service.portalInvoicePdf(request.params.token, request.params.invoice_id)
    return reply
      .code(200)
      .header('content-type', 'application/pdf')
      .header('content-disposition', `inline; filename="${file.filename}"`)
      .header('content-language', file.language)
      .header('content-security-policy', "default-src 'none'; frame-ancestors 'none'")
      .send(file.content)
  })
  app.post('/hosted/portal/:token/cancel', tokenRoute, async (request: TokenRequest, reply) => {
    await checkedPost(request, 'portal')
    await service.portalCancel(request.params.token)
    return seeOther(reply, `${pagePath('portal', request.params.token)}?done=cancelled`)
  })
  app.post('/hosted/portal/:token/undo', tokenRoute, async (request: TokenRequest, reply) => {
    await checkedPost(request, 'portal')
    await service.portalUndo(request.params.token)
    return seeOther(reply, `${pagePath('portal', request.params.token)}?done=undone`)
  })
  app.post('/hosted/portal/:token/logout', tokenRoute, async (request: TokenRequest, reply) => {
    await checkedPost(request, 'portal')
    return seeOther(reply, await service.portalLogout(request.params.token))
  })
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name]
  return Array.isArray(value) ? value[0] : value
}
