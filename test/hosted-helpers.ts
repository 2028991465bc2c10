import assert from 'node:assert/strict'
import type { LightMyRequestResponse } from 'fastify'
import type { TestApp } from './helpers/app.ts'
import { SUB } from './subscriptions-helpers.ts'

/** Fixtures of the hosted-page tests (spec 1, 10, 11 and the /hosted/ pages they lead to). */
export const ALLOWED = 'app.example.com,localhost,127.0.0.1'
export const BACK = 'https://app.example.com/billing/done'

export const KINDS = { manager: 'manager_page', portal: 'portal', payment: 'payment_page' } as const
export type Kind = keyof typeof KINDS

export function open(t: TestApp, kind: Kind, companyId: string, token: string | null, redirect: string | null = BACK) {
  return t.call({
    url: `${SUB}/${companyId}/${KINDS[kind]}/`,
    token,
    ...(redirect !== null ? { query: { redirect_url: redirect } } : {}),
  })
}

/** Opens a page through the API and answers its path (/hosted/<kind>/<token>). */
export async function pathOf(t: TestApp, kind: Kind, companyId: string, token: string): Promise<string> {
  const res = await open(t, kind, companyId, token)
  assert.equal(res.statusCode, 200, res.body)
  const body = res.json()
  return new URL(kind === 'portal' ? body.access_url : body.url).pathname
}

/** A browser session on one page: it keeps the page's cookie and form token, like a browser would. */
export class PageSession {
  cookie = ''
  csrf = ''
  constructor(
    readonly t: TestApp,
    readonly path: string,
    readonly language = 'en',
  ) {}

  async get(suffix = ''): Promise<LightMyRequestResponse> {
    const res = await this.t.app.inject({
      method: 'GET',
      url: this.path + suffix,
      headers: { 'accept-language': this.language },
    })
    this.remember(res)
    return res
  }

  remember(res: LightMyRequestResponse) {
    const set = res.headers['set-cookie']
    if (typeof set === 'string') this.cookie = set.split(';')[0]!
    const field = /name="csrf" value="([^"]+)"/.exec(res.body)
    if (field) this.csrf = field[1]!
  }

  async post(
    action: string,
    fields: Record<string, string> = {},
    headers: Record<string, string> = {},
    options: { csrf?: string | null; cookie?: string | null } = {},
  ) {
    const form = new URLSearchParams({ ...fields })
    const csrf = options.csrf === undefined ? this.csrf : options.csrf
    if (csrf !== null) form.set('csrf', csrf)
    const cookie = options.cookie === undefined ? this.cookie : options.cookie
    const res = await this.t.app.inject({
      method: 'POST',
      url: `${this.path}/${action}`,
      payload: form.toString(),
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'accept-language': this.language,
        ...(cookie ? { cookie } : {}),
        ...headers,
      },
    })
    this.remember(res)
    return res
  }
}

export async function stateOf(t: TestApp, path: string): Promise<string> {
  const { createHash } = await import('node:crypto')
  const hash = createHash('sha256').update(path.split('/').pop()!).digest('hex')
  const row = await t.app.database.db
    .selectFrom('hosted_pages')
    .select('state')
    .where('token_hash', '=', hash)
    .executeTakeFirstOrThrow()
  return row.state
}

/** Asserts an HTML page of the hosted pages with its security headers. */
export function assertHtml(res: LightMyRequestResponse, status: number) {
  assert.equal(res.statusCode, status, res.body)
  assert.match(String(res.headers['content-type']), /^text\/html/)
  const csp = String(res.headers['content-security-policy'])
  assert.match(csp, /default-src 'none'/)
  assert.match(csp, /frame-ancestors 'none'/)
  assert.doesNotMatch(csp, /unsafe-inline|script-src/)
  assert.equal(res.headers['x-frame-options'], 'DENY')
  assert.equal(res.headers['referrer-policy'], 'no-referrer')
  assert.equal(res.headers['cache-control'], 'no-store')
  assert.doesNotMatch(res.body, /<script/i)
}
