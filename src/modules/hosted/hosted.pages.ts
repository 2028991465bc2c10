import { randomBytes, randomUUID } from 'node:crypto'
import type { HostedPageKind, HostedPageRow } from '../../db/tables.ts'
import type {
  LocalHostedPages,
  HostedPage,
  HostedPageOptions,
  HostedPageSubject,
  PortalSession,
} from '../billing/index.ts'
import { hashToken } from './hosted.csrf.ts'
import type { HostedRepository } from './hosted.repository.ts'

const seconds = (d: Date) => Math.floor(d.getTime() / 1000)

/** The path of a page: the kind, then its secret token (32 random bytes, base64url). */
export const pagePath = (kind: HostedPageKind, token: string) => `/hosted/${kind}/${token}`

/** Chargebee's hosted page types for what our pages do. */
const HOSTED_TYPE: Record<HostedPageKind, string> = {
  manager: 'checkout_existing',
  payment: 'manage_payment_sources',
  portal: 'portal',
}

export function hostedPageView(row: HostedPageRow, url: string): HostedPage {
  return {
    url,
    updated_at: seconds(row.updated_at),
    type: HOSTED_TYPE[row.kind],
    state: row.state as HostedPage['state'],
    // Chargebee's resource_version is the last change in milliseconds: it grows with every change.
    resource_version: row.updated_at.getTime(),
    object: 'hosted_page',
    id: row.id,
    expires_at: seconds(row.expires_at),
    embed: false,
    created_at: seconds(row.created_at),
  }
}

export function portalSessionView(row: HostedPageRow, token: string, url: string): PortalSession {
  return {
    token,
    status: row.state as PortalSession['status'],
    redirect_url: row.redirect_url,
    object: 'portal_session',
    id: row.id,
    expires_at: seconds(row.expires_at),
    customer_id: row.company_id,
    created_at: seconds(row.created_at),
    access_url: url,
  }
}

/**
 * The local provider's hosted pages: each one a row with the hash of a fresh random token; the
 * answer carries the token (in its URL) once, and it is never stored or logged.
 */
export function createHostedPageStore(repo: HostedRepository): LocalHostedPages {
  async function issue(kind: HostedPageKind, subject: HostedPageSubject, options: HostedPageOptions) {
    const token = randomBytes(32).toString('base64url')
    const row: HostedPageRow = {
      id: randomUUID(),
      company_id: subject.customer.company_id,
      subscription_id: subject.subscription.id,
      kind,
      token_hash: hashToken(token),
      state: 'created',
      redirect_url: options.redirectUrl,
      client_id: options.clientId ?? null,
      created_at: options.now,
      updated_at: options.now,
      expires_at: new Date(options.now.getTime() + options.ttlSeconds * 1000),
    }
    await repo.insert(row)
    return { row, token, url: `${options.baseUrl}${pagePath(kind, token)}` }
  }

  return {
    async managerPage(subject, options) {
      const { row, url } = await issue('manager', subject, options)
      return { url, expires_at: seconds(row.expires_at) }
    },
    async portalSession(subject, options) {
      const { row, token, url } = await issue('portal', subject, options)
      return portalSessionView(row, token, url)
    },
    async paymentPage(subject, options) {
      const { row, url } = await issue('payment', subject, options)
      return hostedPageView(row, url)
    },
  }
}

/**
 * Without PUBLIC_BASE_URL, the address this service listens on (127.0.0.1 for a wildcard HOST).
 * Never the request's Host: a client sets it, and a page URL built from it would send the token elsewhere.
 */
export function listeningOrigin(host: string, port: number, bound: { port: number } | string | null): string {
  const name = ['', '0.0.0.0', '::', '[::]'].includes(host) ? '127.0.0.1' : host
  const shown = name.includes(':') && !name.startsWith('[') ? `[${name}]` : name
  return `http://${shown}:${bound !== null && typeof bound === 'object' ? bound.port : port}`
}
